// Communicators: the group of data-parallel replicas a training step runs on, and the collectives
// across them (all-reduce of gradients, broadcast of initial parameters). One replica is the
// identity at no cost; several are processes launched by MPI (`mpirun -np N kiln ...`), whose
// host buffers MPI reduces (the CPU backend) and whose GPU buffers NCCL reduces (the CUDA backend,
// with NCCL's unique id carried by MPI).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "ir/status.h"
#include "ir/types.h"

namespace kiln::collectives {

enum class ReduceKind { Sum, Mean };

// Where this process stands among the replicas, from the launcher's environment.
struct ReplicaInfo {
  int rank = 0;       // 0 .. size-1
  int size = 1;       // number of replicas
  int localRank = 0;  // rank among the replicas on this machine: the GPU it binds to
  bool launchedByMpi = false;
};
// Reads OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK} (Open MPI) or PMIX_RANK / PMI_RANK / PMI_SIZE
// (other launchers); without them, one replica.
ReplicaInfo replicaFromEnvironment();

struct CommunicatorOptions {
  // A collective that has not completed after this long is a failure (a rank died or stalls):
  // the process says which rank and call, and the whole job is aborted instead of hanging.
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
};

class ReductionThread;

class Communicator {
 public:
  Communicator();
  // Destroy only with no reduction in flight (runs wait for theirs before they return).
  virtual ~Communicator();
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // How long a collective may take before it counts as failed (CommunicatorOptions::timeout); NCCL
  // over this communicator's replicas uses the same deadline.
  virtual std::chrono::milliseconds timeout() const = 0;
  // Whether the collectives below may be called from another thread than the one that made the
  // communicator, one call at a time (MPI: initialised with MPI_THREAD_SERIALIZED or better).
  // When not, reductions run synchronously on the caller's thread.
  virtual bool allowsOtherThreads() const { return true; }
  // In place, on host memory: every replica ends with the elementwise sum (or mean) of all
  // replicas' `data`. Integer means truncate toward zero. `what` names the data in errors.
  virtual Status allReduce(void* data, int64_t count, DType dtype, ReduceKind kind, const std::string& what) = 0;
  // In place, on host memory: every replica ends with root's bytes.
  virtual Status broadcast(void* data, int64_t bytes, int root, const std::string& what) = 0;
  // Every replica reaches this point before any leaves it.
  virtual Status barrier(const std::string& what) = 0;
  // Ends the whole job now (every replica), after printing `message`: for failures that would
  // otherwise leave the other replicas waiting forever.
  [[noreturn]] virtual void abortAll(const std::string& message) = 0;

  // The thread that runs this communicator's asynchronous all-reduces (reduction_thread.h), started
  // on first use. One per communicator, so that its reductions keep the order they were started
  // in, which is the order every replica starts them in.
  ReductionThread& reductionThread();

 private:
  std::mutex threadMutex_;
  std::unique_ptr<ReductionThread> thread_;
};

// The identity communicator of a single replica.
std::unique_ptr<Communicator> singleReplica(const CommunicatorOptions& options = {});
// The communicator of this process: MPI's world when launched by mpirun (initialising MPI once;
// an error if this kiln was built without MPI), else a single replica. The first call's options
// stand for the rest of the process.
Expected<Communicator*> worldCommunicator(const CommunicatorOptions& options = {});

}  // namespace kiln::collectives
