// MPI's world as a communicator (Open MPI, launched by mpirun), and worldCommunicator(), which
// picks it or a single replica. Two properties matter for training and shape the code:
//  - Replicas must never diverge: an all-reduce is a reduce to rank 0 followed by a broadcast, so
//    every rank holds the same bits (MPI_Allreduce's algorithms may add in a different order on
//    different ranks).
//  - A dead or stalled rank must not hang the others: collectives are non-blocking calls polled
//    against a deadline; past it, the rank names itself and the call and aborts the whole job.
//  - All-reduces of a step run on the communicator's reduction thread while the main thread
//    computes (reduction_thread.h), so MPI is initialised for calls from several threads, one at a
//    time (MPI_THREAD_SERIALIZED).
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/collectives/communicator.h"

#if KILN_HAVE_MPI
#include <mpi.h>
#endif

namespace kiln::collectives {

#if KILN_HAVE_MPI
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kSpinBeforeSleeping{2};

std::string mpiErrorText(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, static_cast<size_t>(length));
}

// The MPI datatype that carries a kiln dtype (f16/bf16 travel widened to float).
MPI_Datatype mpiType(DType t) {
  switch (t) {
    case DType::Bool:
    case DType::I8: return MPI_INT8_T;
    case DType::I16: return MPI_INT16_T;
    case DType::I32: return MPI_INT32_T;
    case DType::I64: return MPI_INT64_T;
    case DType::U8: return MPI_UINT8_T;
    case DType::U16: return MPI_UINT16_T;
    case DType::U32: return MPI_UINT32_T;
    case DType::U64: return MPI_UINT64_T;
    case DType::F16:
    case DType::BF16:
    case DType::F32: return MPI_FLOAT;
    case DType::F64: return MPI_DOUBLE;
  }
  return MPI_BYTE;
}

class MpiWorld final : public Communicator {
 public:
  MpiWorld(CommunicatorOptions options, bool serialized) : options_(options), serialized_(serialized) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::chrono::milliseconds timeout() const override { return options_.timeout; }
  bool allowsOtherThreads() const override { return serialized_; }

  Status allReduce(void* data, int64_t count, DType dtype, ReduceKind kind, const std::string& what) override {
    if (count == 0) return {};
    if (count > INT32_MAX) return Error(fmt::format("all_reduce of {}: {} elements exceed MPI's count limit", what, count));
    bool half = dtype == DType::F16 || dtype == DType::BF16;
    std::vector<float> widened;
    void* buffer = data;
    if (half) {
      widened.resize(static_cast<size_t>(count));
      auto* h = static_cast<uint16_t*>(data);
      for (int64_t i = 0; i < count; ++i) widened[i] = dtype == DType::F16 ? halfToFloat(h[i]) : bfloat16ToFloat(h[i]);
      buffer = widened.data();
    }
    MPI_Datatype type = mpiType(dtype);
    int n = static_cast<int>(count);
    MPI_Request request;
    int rc = MPI_Ireduce(rank_ == 0 ? MPI_IN_PLACE : buffer, buffer, n, type, dtype == DType::Bool ? MPI_LOR : MPI_SUM, 0,
                         MPI_COMM_WORLD, &request);
    KILN_TRY(finish(rc, request, "MPI_Reduce", what));
    if (rank_ == 0 && kind == ReduceKind::Mean) divideBySize(buffer, count, half ? DType::F32 : dtype);
    rc = MPI_Ibcast(buffer, n, type, 0, MPI_COMM_WORLD, &request);
    KILN_TRY(finish(rc, request, "MPI_Bcast", what));
    if (half) {
      auto* h = static_cast<uint16_t*>(data);
      for (int64_t i = 0; i < count; ++i) h[i] = dtype == DType::F16 ? floatToHalf(widened[i]) : floatToBFloat16(widened[i]);
    }
    return {};
  }

  Status broadcast(void* data, int64_t bytes, int root, const std::string& what) override {
    if (bytes > INT32_MAX) return Error(fmt::format("broadcast of {}: {} bytes exceed MPI's count limit", what, bytes));
    MPI_Request request;
    int rc = MPI_Ibcast(data, static_cast<int>(bytes), MPI_BYTE, root, MPI_COMM_WORLD, &request);
    return finish(rc, request, "MPI_Bcast", what);
  }

  Status barrier(const std::string& what) override {
    MPI_Request request;
    int rc = MPI_Ibarrier(MPI_COMM_WORLD, &request);
    return finish(rc, request, "MPI_Barrier", what);
  }

  [[noreturn]] void abortAll(const std::string& message) override {
    fmt::print(stderr, "{}\n", message);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::_Exit(1);  // MPI_Abort does not return; this keeps [[noreturn]] honest
  }

 private:
  // Waits for a started collective until the deadline. A failed call is an error; a call that
  // does not finish in time means another rank died or stalls, so the job is aborted.
  Status finish(int rc, MPI_Request& request, const char* call, const std::string& what) {
    if (rc != MPI_SUCCESS) return Error(fmt::format("rank {}: {} for {} failed: {}", rank_, call, what, mpiErrorText(rc)));
    Clock::time_point start = Clock::now(), deadline = start + options_.timeout;
    for (int done = 0;;) {
      rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) return Error(fmt::format("rank {}: {} for {} failed: {}", rank_, call, what, mpiErrorText(rc)));
      if (done) return {};
      if (Clock::now() > deadline)
        abortAll(fmt::format("kiln: rank {} of {}: {} for {} did not complete within {} ms: another rank has died or "
                             "stalls; aborting every rank",
                             rank_, size_, call, what, options_.timeout.count()));
      // Open MPI moves a non-blocking collective's data only inside MPI calls (no progress thread),
      // so a sleep between tests stretches every message segment: sleeping 20 us from the start
      // made a 392 KiB reduction take 5 ms on 2 ranks, polling with yields for the first 2 ms
      // 0.75 ms. Then it backs off, so a long wait for a late rank leaves the cores to the kernels.
      if (Clock::now() - start < kSpinBeforeSleeping) std::this_thread::yield();
      else std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  void divideBySize(void* data, int64_t count, DType dtype) const {
    auto divide = [&](auto* p) {
      for (int64_t i = 0; i < count; ++i) p[i] /= static_cast<std::remove_reference_t<decltype(p[0])>>(size_);
    };
    switch (dtype) {
      case DType::I8: return divide(static_cast<int8_t*>(data));
      case DType::I16: return divide(static_cast<int16_t*>(data));
      case DType::I32: return divide(static_cast<int32_t*>(data));
      case DType::I64: return divide(static_cast<int64_t*>(data));
      case DType::U8: return divide(static_cast<uint8_t*>(data));
      case DType::U16: return divide(static_cast<uint16_t*>(data));
      case DType::U32: return divide(static_cast<uint32_t*>(data));
      case DType::U64: return divide(static_cast<uint64_t*>(data));
      case DType::F32: return divide(static_cast<float*>(data));
      case DType::F64: return divide(static_cast<double*>(data));
      default: return;  // bool: a mean is meaningless, the sum (logical or) stands
    }
  }

  CommunicatorOptions options_;
  bool serialized_;
  int rank_ = 0, size_ = 1;
};

// MPI is initialised once per process and finalised at exit.
Expected<Communicator*> initMpiWorld(const CommunicatorOptions& options) {
  static std::unique_ptr<Communicator> world;
  static std::optional<Error> failure;
  static std::once_flag once;
  std::call_once(once, [&] {
    // SERIALIZED: the reduction thread makes MPI calls while the main thread runs kernels, never
    // two threads at once (runs wait for their reductions before the main thread calls MPI again).
    int provided = 0;
    int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS) {
      failure = Error("MPI_Init failed: " + mpiErrorText(rc));
      return;
    }
    // Errors come back as codes that kiln reports, instead of MPI's default of aborting mutely.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    std::atexit([] {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) MPI_Finalize();
    });
    world = std::make_unique<MpiWorld>(options, provided >= MPI_THREAD_SERIALIZED);
  });
  if (failure) return *failure;
  return world.get();
}

}  // namespace
#endif

Expected<Communicator*> worldCommunicator(const CommunicatorOptions& options) {
  ReplicaInfo info = replicaFromEnvironment();
  if (!info.launchedByMpi || info.size == 1) {
    static std::unique_ptr<Communicator> single = singleReplica(options);
    return single.get();
  }
#if KILN_HAVE_MPI
  return initMpiWorld(options);
#else
  (void)options;
  return Error(fmt::format("launched as rank {} of {} by an MPI launcher, but this kiln was built without MPI "
                           "(install libopenmpi-dev and rebuild)",
                           info.rank, info.size));
#endif
}

}  // namespace kiln::collectives
