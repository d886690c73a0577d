// The GPU simulator's NCCL stand-in with several ranks in one process, one per simulated device
// (ctest nccl_standin_in_process: KILN_GPUSIM_DEVICES=3, KILN_NCCL_LIBRARY). Driven as NCCL's own
// single-process examples drive NCCL: ncclCommInitAll, then each rank's collective queued on its
// device's stream inside ncclGroupStart/End from one thread.
//   1. all-reduce sum, avg and max of f32, f16, bf16 and i32, in place and not: every rank holds
//      the exact result, bit-identical across ranks; broadcast from rank 1;
//   2. a collective overlaps other streams: rank 0's all-reduce waits for the others while a copy
//      on a second stream of its device completes;
//   3. a rank whose peers never join waits until it is aborted, and the abort ends its peers'
//      waits too, with an asynchronous error naming the rank that aborted.
// Prints "ok: ..." per check; exits non-zero on the first failure.
#include <dlfcn.h>
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "ir/tensor.h"
#include "runtime/cuda/context.h"
#include "runtime/cuda/driver.h"
#include "runtime/cuda/nccl.h"

using namespace kiln;
using namespace kiln::cuda;

namespace {

[[noreturn]] void die(const std::string& why) {
  fmt::print(stderr, "FAIL: {}\n", why);
  std::exit(1);
}

void must(CUresult r, const char* call) {
  if (r != CUDA_SUCCESS) die(fmt::format("{} returned {}", call, static_cast<int>(r)));
}

void mustNccl(ncclResult_t r, const NcclApi& nccl, const char* call) {
  if (r != ncclSuccess) die(fmt::format("{}: {}", call, nccl.ncclGetErrorString(r)));
}

struct Rank {
  Device* device = nullptr;  // its primary context, made current before each use
  CUstream stream = nullptr;
  ncclComm_t comm = nullptr;
};

// An entry point kiln itself never calls (ncclCommInitAll, ncclGroupStart/End), from the library
// kiln loaded.
template <class Fn>
Fn standIn(const char* name) {
  void* library = dlopen(std::getenv("KILN_NCCL_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
  auto fn = library ? reinterpret_cast<Fn>(dlsym(library, name)) : nullptr;
  if (!fn) die(fmt::format("{} not found in $KILN_NCCL_LIBRARY", name));
  return fn;
}
ncclResult_t groupCall(const char* name) { return standIn<ncclResult_t (*)()>(name)(); }

void useContext(const Rank& r) {
  if (Status s = r.device->makeCurrent(); !s) die(s.error().message());
}

// Synchronous copies and memsets on the legacy stream of the current context.
void copyIn(CUdeviceptr to, const Tensor& t) {
  must(api().cuMemcpyHtoDAsync(to, t.data(), t.byteSize(), nullptr), "cuMemcpyHtoDAsync");
  must(api().cuStreamSynchronize(nullptr), "cuStreamSynchronize");
}
void copyOut(Tensor& t, CUdeviceptr from) {
  must(api().cuMemcpyDtoHAsync(t.data(), from, t.byteSize(), nullptr), "cuMemcpyDtoHAsync");
  must(api().cuStreamSynchronize(nullptr), "cuStreamSynchronize");
}
void zero(CUdeviceptr at, size_t bytes, unsigned char value) {
  must(api().cuMemsetD8Async(at, value, bytes, nullptr), "cuMemsetD8Async");
  must(api().cuStreamSynchronize(nullptr), "cuStreamSynchronize");
}

// Queues on rank r's stream an in-place all-reduce (sum) of 1024 zeros in a fresh device buffer.
void queueZerosAllReduce(const Rank& r, const NcclApi& nccl) {
  useContext(r);
  CUdeviceptr data = 0;
  must(api().cuMemAlloc(&data, 4096), "cuMemAlloc");
  zero(data, 4096, 0);
  mustNccl(nccl.ncclAllReduce(reinterpret_cast<void*>(data), reinterpret_cast<void*>(data), 1024, ncclFloat32, ncclSum,
                              r.comm, reinterpret_cast<cudaStream_t>(r.stream)),
           nccl, "ncclAllReduce");
}

// Rank r's value at element i: exact in every dtype, and in every sum and average of 3 ranks.
double input(int rank, int64_t i) { return static_cast<double>((i * 7 + rank * 5) % 13) - 6.0 + 0.5 * rank; }

Tensor filled(DType dtype, int64_t n, int rank) {
  Tensor t({dtype, {n}});
  for (int64_t i = 0; i < n; ++i) t.setDouble(i, input(rank, i));
  return t;
}

void checkAllReduce(std::vector<Rank>& ranks, const NcclApi& nccl, DType dtype, ncclDataType_t type, ncclRedOp_t op,
                    bool inPlace) {
  const int64_t n = 300000;  // over a 1 MiB slot in f32: several rounds
  int size = static_cast<int>(ranks.size());
  std::vector<CUdeviceptr> send(ranks.size()), recv(ranks.size());
  for (int r = 0; r < size; ++r) {
    useContext(ranks[r]);
    Tensor t = filled(dtype, n, r);
    must(api().cuMemAlloc(&send[r], t.byteSize()), "cuMemAlloc");
    recv[r] = send[r];
    if (!inPlace) must(api().cuMemAlloc(&recv[r], t.byteSize()), "cuMemAlloc");
    copyIn(send[r], t);
  }
  mustNccl(groupCall("ncclGroupStart"), nccl, "ncclGroupStart");
  for (int r = 0; r < size; ++r) {
    useContext(ranks[r]);
    mustNccl(nccl.ncclAllReduce(reinterpret_cast<void*>(send[r]), reinterpret_cast<void*>(recv[r]), n, type, op,
                                ranks[r].comm, reinterpret_cast<cudaStream_t>(ranks[r].stream)),
             nccl, "ncclAllReduce");
  }
  mustNccl(groupCall("ncclGroupEnd"), nccl, "ncclGroupEnd");
  std::vector<Tensor> got;
  for (int r = 0; r < size; ++r) {
    useContext(ranks[r]);
    must(api().cuStreamSynchronize(ranks[r].stream), "cuStreamSynchronize");
    got.emplace_back(TensorType{dtype, {n}});
    copyOut(got.back(), recv[r]);
    must(api().cuMemFree(send[r]), "cuMemFree");
    if (!inPlace) must(api().cuMemFree(recv[r]), "cuMemFree");
  }
  for (int r = 1; r < size; ++r)
    if (std::memcmp(got[r].data(), got[0].data(), got[0].byteSize()) != 0)
      die(fmt::format("all-reduce of {}: rank {}'s result differs from rank 0's", dtypeName(dtype), r));
  std::vector<Tensor> inputs;
  for (int r = 0; r < size; ++r) inputs.push_back(filled(dtype, n, r));
  for (int64_t i = 0; i < n; ++i) {
    double want = op == ncclMax ? -1e300 : 0;
    for (int r = 0; r < size; ++r) {
      double x = inputs[r].getDouble(i);  // as stored in the dtype
      want = op == ncclMax ? std::max(want, x) : want + x;
    }
    if (op == ncclAvg) want /= size;
    if (std::abs(got[0].getDouble(i) - want) > 1e-2 * std::max(1.0, std::abs(want)))
      die(fmt::format("all-reduce of {} (op {}): element {} is {}, want {}", dtypeName(dtype), static_cast<int>(op), i,
                      got[0].getDouble(i), want));
  }
  fmt::print("ok: all-reduce {} of {} over {} ranks{}\n", op == ncclSum ? "sum" : op == ncclAvg ? "avg" : "max",
             dtypeName(dtype), size, inPlace ? ", in place" : "");
}

}  // namespace

int main() {
  auto d = driver();
  if (!d) die(d.error().message());
  auto lib = ncclLibrary();
  if (!lib) die(lib.error().message());
  const NcclApi& nccl = **lib;
  int devices = 0;
  must(api().cuDeviceGetCount(&devices), "cuDeviceGetCount");
  if (devices < 2) die(fmt::format("needs 2 or more simulated devices (KILN_GPUSIM_DEVICES); found {}", devices));
  std::vector<Rank> ranks(static_cast<size_t>(devices));
  std::vector<ncclComm_t> comms(ranks.size());
  for (int r = 0; r < devices; ++r) {
    auto device = Device::get(r);
    if (!device) die(device.error().message());
    ranks[r].device = *device;
    useContext(ranks[r]);
    must(api().cuStreamCreate(&ranks[r].stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  }
  auto initAll = standIn<ncclResult_t (*)(ncclComm_t*, int, const int*)>("ncclCommInitAll");
  mustNccl(initAll(comms.data(), devices, nullptr), nccl, "ncclCommInitAll");
  for (int r = 0; r < devices; ++r) ranks[r].comm = comms[r];

  // 1. Collectives.
  checkAllReduce(ranks, nccl, DType::F32, ncclFloat32, ncclSum, true);
  checkAllReduce(ranks, nccl, DType::F32, ncclFloat32, ncclAvg, false);
  checkAllReduce(ranks, nccl, DType::F16, ncclFloat16, ncclSum, true);
  checkAllReduce(ranks, nccl, DType::BF16, ncclBfloat16, ncclAvg, true);
  checkAllReduce(ranks, nccl, DType::I32, ncclInt32, ncclMax, false);
  {
    const int64_t n = 1000;
    std::vector<CUdeviceptr> buffers(ranks.size());
    for (int r = 0; r < devices; ++r) {
      useContext(ranks[r]);
      Tensor t = filled(DType::F32, n, r);
      must(api().cuMemAlloc(&buffers[r], t.byteSize()), "cuMemAlloc");
      copyIn(buffers[r], t);
      mustNccl(nccl.ncclBroadcast(reinterpret_cast<void*>(buffers[r]), reinterpret_cast<void*>(buffers[r]), n,
                                  ncclFloat32, 1, ranks[r].comm, reinterpret_cast<cudaStream_t>(ranks[r].stream)),
               nccl, "ncclBroadcast");
    }
    Tensor want = filled(DType::F32, n, 1);
    for (int r = 0; r < devices; ++r) {
      useContext(ranks[r]);
      must(api().cuStreamSynchronize(ranks[r].stream), "cuStreamSynchronize");
      Tensor got({DType::F32, {n}});
      copyOut(got, buffers[r]);
      if (std::memcmp(got.data(), want.data(), want.byteSize()) != 0) die(fmt::format("broadcast: rank {} differs", r));
      must(api().cuMemFree(buffers[r]), "cuMemFree");
    }
    fmt::print("ok: broadcast from rank 1\n");
  }

  // 2. Rank 0's all-reduce waits for its peers; meanwhile a copy on another stream completes.
  {
    queueZerosAllReduce(ranks[0], nccl);
    CUdeviceptr a = 0, b = 0;
    must(api().cuMemAlloc(&a, 4096), "cuMemAlloc");
    must(api().cuMemAlloc(&b, 4096), "cuMemAlloc");
    zero(a, 4096, 7);
    CUstream other = nullptr;
    must(api().cuStreamCreate(&other, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    must(api().cuMemcpyDtoDAsync(b, a, 4096, other), "cuMemcpyDtoDAsync");
    must(api().cuStreamSynchronize(other), "cuStreamSynchronize");
    if (api().cuStreamQuery(ranks[0].stream) != CUDA_ERROR_NOT_READY)
      die("rank 0's all-reduce finished without its peers");
    for (int r = 1; r < devices; ++r) queueZerosAllReduce(ranks[r], nccl);
    for (int r = 0; r < devices; ++r) {
      useContext(ranks[r]);
      must(api().cuStreamSynchronize(ranks[r].stream), "cuStreamSynchronize");
    }
    fmt::print("ok: a collective waits for its peers on its own stream while another stream runs\n");
  }

  // 3. Rank 0 waits alone; aborting it ends its wait, and its peers' next collective fails naming it.
  {
    queueZerosAllReduce(ranks[0], nccl);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ncclResult_t async = ncclInternalError;
    mustNccl(nccl.ncclCommGetAsyncError(ranks[0].comm, &async), nccl, "ncclCommGetAsyncError");
    if (async != ncclSuccess) die("a rank still waiting reports an asynchronous error");
    mustNccl(nccl.ncclCommAbort(ranks[0].comm), nccl, "ncclCommAbort");
    must(api().cuStreamSynchronize(ranks[0].stream), "cuStreamSynchronize after the abort");
    queueZerosAllReduce(ranks[1], nccl);
    must(api().cuStreamSynchronize(ranks[1].stream), "cuStreamSynchronize");
    mustNccl(nccl.ncclCommGetAsyncError(ranks[1].comm, &async), nccl, "ncclCommGetAsyncError");
    std::string detail = nccl.ncclGetLastError ? nccl.ncclGetLastError(ranks[1].comm) : "";
    if (async != ncclRemoteError || detail.find("rank 0 aborted") == std::string::npos)
      die(fmt::format("rank 1 after rank 0's abort: result {}, '{}'", static_cast<int>(async), detail));
    fmt::print("ok: an abort ends the waits of every rank, and the others' error names it ({})\n", detail);
    for (int r = 1; r < devices; ++r) nccl.ncclCommAbort(ranks[r].comm);
  }
  return 0;
}
