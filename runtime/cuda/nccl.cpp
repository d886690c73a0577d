// Loading NCCL and driving one communicator per process (nccl.h).
#include "runtime/cuda/nccl.h"

#include <fmt/format.h>

#include <cstring>
#include <mutex>
#include <thread>

#include "runtime/cuda/driver.h"
#include "runtime/cuda/dynamic_library.h"
#include "runtime/cuda/library_support.h"

namespace kiln::cuda {

namespace {

struct LoadedNccl {
  Expected<DynamicLibrary> library = Error("not loaded");
  NcclApi api;
  Status status;
};

Status load(LoadedNccl& l) {
  if (auto d = driver(); d && (*d)->simulated && !isOverridden("KILN_NCCL_LIBRARY"))
    return Error(librariesNeedRealGpu("NCCL", "KILN_NCCL_LIBRARY", "libkiln_gpusim_nccl.so"));
  l.library = DynamicLibrary::open("NCCL", candidatesOr("KILN_NCCL_LIBRARY", {"libnccl.so.2"}),
                                   "kiln reduces gradients across GPUs with NCCL 2: install libnccl2 (or NVIDIA's "
                                   "nvidia-nccl wheel) and name its folder in $KILN_CUDA_LIBRARY_PATH if the loader "
                                   "does not find it");
  if (!l.library) return l.library.error();
  std::string missing;
#define KILN_NCCL_LOOKUP(fn) lookupSymbol(*l.library, #fn, l.api.fn, missing);
  KILN_NCCL_FUNCTIONS(KILN_NCCL_LOOKUP)
#undef KILN_NCCL_LOOKUP
  l.api.path = (*l.library).path();
  if (!missing.empty()) return Error("NCCL at " + l.api.path + " lacks " + missing + "; kiln needs NCCL 2.10 or newer");
  // NCCL 2.13 and up say what went wrong beyond the result code; older ones lack it.
  l.api.ncclGetLastError = reinterpret_cast<decltype(l.api.ncclGetLastError)>((*l.library).symbol("ncclGetLastError"));
  l.api.ncclGetVersion(&l.api.version);
  if (l.api.version < 21000)
    return Error(fmt::format("NCCL at {} is version {}; kiln needs 2.10 or newer (for ncclAvg)", l.api.path, l.api.version));
  return {};
}

}  // namespace

Expected<const NcclApi*> ncclLibrary() {
  static LoadedNccl l;
  static std::once_flag once;
  std::call_once(once, [] { l.status = load(l); });
  if (!l.status) return l.status.error();
  return &l.api;
}

std::optional<ncclDataType_t> ncclType(DType dtype) {
  switch (dtype) {
    case DType::Bool:
    case DType::I8: return ncclInt8;
    case DType::I16:
    case DType::U16: return std::nullopt;  // NCCL has no 16-bit integers
    case DType::I32: return ncclInt32;
    case DType::I64: return ncclInt64;
    case DType::U8: return ncclUint8;
    case DType::U32: return ncclUint32;
    case DType::U64: return ncclUint64;
    case DType::F16: return ncclFloat16;
    case DType::BF16: return ncclBfloat16;
    case DType::F32: return ncclFloat32;
    case DType::F64: return ncclFloat64;
  }
  return std::nullopt;
}

Expected<std::unique_ptr<NcclCommunicator>> NcclCommunicator::create(collectives::Communicator& host,
                                                                     std::chrono::milliseconds timeout) {
  auto api = ncclLibrary();
  if (!api) return api.error();
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (host.rank() == 0) {
    ncclResult_t r = (*api)->ncclGetUniqueId(&id);
    if (r != ncclSuccess) return Error(fmt::format("rank 0: ncclGetUniqueId failed: {}", (*api)->ncclGetErrorString(r)));
  }
  KILN_TRY(host.broadcast(&id, sizeof id, 0, "NCCL's unique id"));
  ncclComm_t comm = nullptr;
  ncclResult_t r = (*api)->ncclCommInitRank(&comm, host.size(), id, host.rank());
  if (r != ncclSuccess)
    return Error(fmt::format("rank {}: ncclCommInitRank ({} ranks) failed: {}", host.rank(), host.size(),
                             (*api)->ncclGetErrorString(r)));
  auto nccl = std::unique_ptr<NcclCommunicator>(new NcclCommunicator(**api, comm, host, timeout));
  KILN_TRY(host.barrier("every rank joining NCCL"));
  return nccl;
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_ && !aborted_) api_.ncclCommDestroy(comm_);
}

Status NcclCommunicator::check(ncclResult_t result, const char* call, const std::string& what) const {
  if (result == ncclSuccess) return {};
  std::string detail = api_.ncclGetLastError ? api_.ncclGetLastError(comm_) : "";
  return Error(fmt::format("rank {}: {} for {} failed: {}{}", rank_, call, what, api_.ncclGetErrorString(result),
                           detail.empty() ? "" : " (" + detail + ")"));
}

Status NcclCommunicator::allReduce(CUdeviceptr data, int64_t count, DType dtype, collectives::ReduceKind kind,
                                   CUstream stream, const std::string& what) {
  if (aborted_) return Error(fmt::format("rank {}: NCCL was aborted after an earlier failure", rank_));
  auto* p = reinterpret_cast<void*>(data);
  ncclRedOp_t op = kind == collectives::ReduceKind::Mean ? ncclAvg : ncclSum;
  if (dtype == DType::Bool) op = ncclMax;  // logical or of 0/1 bytes
  std::optional<ncclDataType_t> type = ncclType(dtype);
  if (!type)
    return Error(fmt::format("rank {}: all_reduce of {}: NCCL has no {} type; cast to i32 first", rank_, what,
                             dtypeName(dtype)));
  return check(api_.ncclAllReduce(p, p, static_cast<size_t>(count), *type, op, comm_,
                                  reinterpret_cast<cudaStream_t>(stream)),
               "ncclAllReduce", what);
}

Status NcclCommunicator::wait(CUstream stream, const std::string& what) {
  auto deadline = std::chrono::steady_clock::now() + timeout_;
  for (;;) {
    CUresult q = api().cuStreamQuery(stream);
    if (q == CUDA_SUCCESS) return {};
    if (q != CUDA_ERROR_NOT_READY) return cuda::check(q, "cuStreamQuery", what);
    ncclResult_t async = ncclSuccess;
    KILN_TRY(check(api_.ncclCommGetAsyncError(comm_, &async), "ncclCommGetAsyncError", what));
    bool late = std::chrono::steady_clock::now() > deadline;
    if (async != ncclSuccess || late) {
      // The error's text first: the abort frees the communicator.
      Status failure = async != ncclSuccess ? check(async, "NCCL (asynchronous error)", what) : Status{};
      std::string detail = api_.ncclGetLastError ? api_.ncclGetLastError(comm_) : "";
      api_.ncclCommAbort(comm_);
      aborted_ = true;
      std::string message = !failure.ok() ? failure.error().message()
                                          : fmt::format("rank {} of {}: NCCL collective for {} did not complete within "
                                                        "{} ms: another rank has died or stalls{}",
                                                        rank_, size_, what, timeout_.count(),
                                                        detail.empty() ? "" : " (" + detail + ")");
      host_.abortAll("error: " + message + "; aborting every rank");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace kiln::cuda
