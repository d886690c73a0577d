// NCCL, loaded at run time, for all-reduce of device buffers across data-parallel replicas (one
// process per GPU): the communicator is created from a unique id that rank 0 makes and MPI carries
// to the others. Collectives are queued on a stream; waiting for them polls NCCL's asynchronous
// error state against a deadline and aborts the communicator instead of hanging.
#pragma once

#include <cuda.h>
#include <nccl.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "ir/status.h"
#include "ir/types.h"
#include "runtime/collectives/communicator.h"

namespace kiln::cuda {

#define KILN_NCCL_FUNCTIONS(X)                                                                     \
  X(ncclGetVersion) X(ncclGetUniqueId) X(ncclCommInitRank) X(ncclCommDestroy) X(ncclCommAbort)      \
  X(ncclCommGetAsyncError) X(ncclGetErrorString) X(ncclAllReduce) X(ncclBroadcast)

struct NcclApi {
#define KILN_NCCL_POINTER(fn) decltype(&::fn) fn = nullptr;
  KILN_NCCL_FUNCTIONS(KILN_NCCL_POINTER)
#undef KILN_NCCL_POINTER
  const char* (*ncclGetLastError)(ncclComm_t) = nullptr;  // NCCL 2.13+; null before
  int version = 0;   // ncclGetVersion: 22800 for 2.28.0
  std::string path;  // the library that was opened
};

// libnccl.so.2, loaded once per process (the loader's search, then $KILN_CUDA_LIBRARY_PATH and the
// toolkit's lib64). Needs no GPU; fails with the places tried, or the missing entry points.
Expected<const NcclApi*> ncclLibrary();

// One NCCL communicator over this process's GPU (the current context's), one rank per process.
class NcclCommunicator {
 public:
  // Collective: every rank of `host` calls it. Rank 0 makes NCCL's unique id and `host` broadcasts
  // it; then each rank joins. `host` also carries the ranks' agreement that all joined.
  static Expected<std::unique_ptr<NcclCommunicator>> create(collectives::Communicator& host,
                                                            std::chrono::milliseconds timeout);
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;
  ~NcclCommunicator();

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Queues an in-place all-reduce of `count` elements at `data` on `stream`. `what` names it.
  Status allReduce(CUdeviceptr data, int64_t count, DType dtype, collectives::ReduceKind kind, CUstream stream,
                   const std::string& what);
  // Waits until `stream` has finished its queued work. A NCCL error, or a wait past the timeout
  // (a peer died or stalls), aborts the communicator and then the whole job through `host`
  // (Communicator::abortAll), with a message naming this rank and the call, as an MPI collective
  // past its deadline does: the other ranks may be blocked where only that ends them.
  Status wait(CUstream stream, const std::string& what);

 private:
  NcclCommunicator(const NcclApi& api, ncclComm_t comm, collectives::Communicator& host,
                   std::chrono::milliseconds timeout)
      : api_(api), host_(host), comm_(comm), rank_(host.rank()), size_(host.size()), timeout_(timeout) {}
  Status check(ncclResult_t result, const char* call, const std::string& what) const;

  const NcclApi& api_;
  collectives::Communicator& host_;
  ncclComm_t comm_;
  int rank_, size_;
  std::chrono::milliseconds timeout_;
  bool aborted_ = false;
};

// NCCL's data type for a kiln dtype; none for i16 and u16.
std::optional<ncclDataType_t> ncclType(DType dtype);

}  // namespace kiln::cuda
