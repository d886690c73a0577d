// Device and pinned host memory, copies and memsets. Every copy is bounds-checked against the
// device's allocations when it is called (CUDA_ERROR_INVALID_VALUE with a report naming the nearest
// allocation) and again when it runs (a graph may replay it after a free). Copies and memsets mark
// the bytes they write for initcheck. Host-to-device copies from pageable memory take the source at
// call time (the real driver stages it); device-to-host copies into pageable memory return when
// done; copies to and from cuMemAllocHost memory are truly asynchronous.
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <map>

#include "gpusim/driver/state.h"

namespace gpusim::driver {

namespace {

std::mutex& pinnedMutex() {
  static std::mutex& m = *new std::mutex;
  return m;
}
std::map<uintptr_t, size_t>& pinned() {
  static std::map<uintptr_t, size_t>& m = *new std::map<uintptr_t, size_t>;
  return m;
}

// The live allocation holding the range, or the report of why there is none.
CUresult checkRange(DeviceMemory& memory, CUdeviceptr address, size_t bytes, const char* call, const char* role) {
  if (memory.find(address, bytes)) return CUDA_SUCCESS;
  return fail(CUDA_ERROR_INVALID_VALUE, std::string(call) + ": the " + role + " range of " + std::to_string(bytes) +
                                            " bytes at " + hex(address) + " is not inside one live allocation: " +
                                            memory.describe(address, bytes));
}

// Run-time recheck, for queued and replayed work.
Allocation* findAtRun(DeviceMemory& memory, uint64_t address, size_t bytes, const char* call) {
  Allocation* a = memory.find(address, bytes);
  if (!a) fail(CUDA_ERROR_ILLEGAL_ADDRESS, std::string(call) + " ran on memory no longer allocated: " + memory.describe(address, bytes));
  return a;
}

DeviceMemory& memoryOf(CUctx_st* ctx) { return *ctx->device->memory; }

// The checks a copy or memset makes when called: a live context, and (unless it moves no bytes) the
// device range inside one live allocation. `role` names the range in the report.
CUresult enterCopy(CUstream& s, CUctx_st*& ctx, CUdeviceptr address, size_t n, const char* call, const char* role) {
  if (CUresult r = enterStream(s, ctx)) return r;
  return n ? checkRange(memoryOf(ctx), address, n, call, role) : CUDA_SUCCESS;
}

// Queues `work` on `s`; `wait`: returns once it has run, with the context's sticky error (a
// captured operation has not run and is not waited for).
CUresult queue(CUctx_st* ctx, CUstream s, Work work, const char* call, bool wait) {
  MarkerPtr done;
  if (CUresult r = submit(s, std::move(work), call, {}, &done)) return r;
  if (!wait || !done) return CUDA_SUCCESS;
  waitFor(done);
  return static_cast<CUresult>(ctx->sticky.load());
}

CUresult copyHtoD(CUdeviceptr dst, const void* src, size_t n, CUstream s, bool wait, const char* call) {
  CUctx_st* ctx = nullptr;
  if (CUresult r = enterCopy(s, ctx, dst, n, call, "destination"); r || n == 0) return r;
  if (!src) return CUDA_ERROR_INVALID_VALUE;
  std::shared_ptr<std::vector<uint8_t>> staged;
  if (!isPinned(src, n) && !isCapturing(s)) {
    auto bytes = static_cast<const uint8_t*>(src);
    staged = std::make_shared<std::vector<uint8_t>>(bytes, bytes + n);
    src = staged->data();
  }
  return queue(ctx, s, [memory = &memoryOf(ctx), dst, src, n, staged, call] {
    Allocation* a = findAtRun(*memory, dst, n, call);
    if (!a) return CUDA_ERROR_ILLEGAL_ADDRESS;
    std::memcpy(a->host(dst), src, n);
    a->markWritten(dst, n);
    return CUDA_SUCCESS;
  }, call, wait);
}

// Into pageable memory even the asynchronous form returns when done, as the real driver's does.
CUresult copyDtoH(void* dst, CUdeviceptr src, size_t n, CUstream s, bool wait, const char* call) {
  CUctx_st* ctx = nullptr;
  if (CUresult r = enterCopy(s, ctx, src, n, call, "source"); r || n == 0) return r;
  if (!dst) return CUDA_ERROR_INVALID_VALUE;
  return queue(ctx, s, [memory = &memoryOf(ctx), dst, src, n, call] {
    Allocation* a = findAtRun(*memory, src, n, call);
    if (!a) return CUDA_ERROR_ILLEGAL_ADDRESS;
    std::memcpy(dst, a->host(src), n);
    return CUDA_SUCCESS;
  }, call, wait || !isPinned(dst, n));
}

CUresult fill(CUdeviceptr dst, uint32_t value, unsigned width, size_t count, CUstream s, bool wait, const char* call) {
  CUctx_st* ctx = nullptr;
  size_t n = count * width;
  if (CUresult r = enterCopy(s, ctx, dst, n, call, "destination"); r || n == 0) return r;
  if (dst % width) return fail(CUDA_ERROR_INVALID_VALUE, std::string(call) + ": " + hex(dst) + " is not " +
                                                             std::to_string(width) + "-byte aligned");
  return queue(ctx, s, [memory = &memoryOf(ctx), dst, value, width, count, n, call] {
    Allocation* a = findAtRun(*memory, dst, n, call);
    if (!a) return CUDA_ERROR_ILLEGAL_ADDRESS;
    uint8_t* p = a->host(dst);
    if (width == 1) {
      std::memset(p, static_cast<int>(value & 0xFF), n);
    } else {
      for (size_t i = 0; i < count; ++i) std::memcpy(p + i * width, &value, width);
    }
    a->markWritten(dst, n);
    return CUDA_SUCCESS;
  }, call, wait);
}

}  // namespace

bool isPinned(const void* p, size_t bytes) {
  auto address = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(pinnedMutex());
  auto it = pinned().upper_bound(address);
  if (it == pinned().begin()) return false;
  --it;
  return address >= it->first && address + bytes <= it->first + it->second;
}

}  // namespace gpusim::driver

using namespace gpusim::driver;
using gpusim::hex;

GPUSIM_EXPORT CUresult cuMemAlloc(CUdeviceptr* dptr, size_t bytesize) {
  if (!dptr) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  if (CUresult r = enter(ctx)) return r;
  if (CUresult r = checkCaptureSafe("cuMemAlloc")) return r;
  if (bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  gpusim::DeviceMemory& memory = *ctx->device->memory;
  uint64_t address = memory.allocate(bytesize, "cuMemAlloc of " + std::to_string(bytesize) + " bytes");
  if (!address)
    return fail(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc of " + std::to_string(bytesize) + " bytes: the simulated device has " +
                                              std::to_string(memory.capacity() - memory.used()) + " of " +
                                              std::to_string(memory.capacity()) + " bytes free");
  std::lock_guard<std::mutex> lock(ctx->mutex);
  ctx->allocations.insert(address);
  *dptr = address;
  return CUDA_SUCCESS;
}

// Waits for the context's work first, so no queued kernel still reads what is freed.
GPUSIM_EXPORT CUresult cuMemFree(CUdeviceptr dptr) {
  CUctx_st* ctx = nullptr;
  if (CUresult r = enter(ctx)) return r;
  if (dptr == 0) return CUDA_SUCCESS;
  if (CUresult r = checkCaptureSafe("cuMemFree")) return r;
  drainContext(ctx);
  gpusim::DeviceMemory& memory = *ctx->device->memory;
  {
    std::lock_guard<std::mutex> lock(ctx->mutex);
    ctx->allocations.erase(dptr);
  }
  if (!memory.free(dptr))
    return fail(CUDA_ERROR_INVALID_VALUE, "cuMemFree of " + hex(dptr) + ", which is not the start of a live allocation: " +
                                              memory.describe(dptr, 1));
  return static_cast<CUresult>(ctx->sticky.load());
}

GPUSIM_EXPORT CUresult cuMemGetInfo(size_t* free, size_t* total) {
  if (!free || !total) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  if (CUresult r = enter(ctx)) return r;
  const gpusim::DeviceMemory& memory = *ctx->device->memory;
  *total = memory.capacity();
  *free = memory.capacity() - memory.used();
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult cuMemAllocHost(void** pp, size_t bytesize) {
  if (!pp || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  if (CUresult r = enter(ctx)) return r;
  size_t rounded = (bytesize + 4095) / 4096 * 4096;
  void* p = std::aligned_alloc(4096, rounded);
  if (!p) return fail(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAllocHost of " + std::to_string(bytesize) + " bytes");
  std::lock_guard<std::mutex> lock(pinnedMutex());
  pinned()[reinterpret_cast<uintptr_t>(p)] = bytesize;
  *pp = p;
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult cuMemFreeHost(void* p) {
  {
    std::lock_guard<std::mutex> lock(pinnedMutex());
    if (!pinned().erase(reinterpret_cast<uintptr_t>(p)))
      return fail(CUDA_ERROR_INVALID_VALUE, "cuMemFreeHost of " + hex(reinterpret_cast<uintptr_t>(p)) +
                                                ", which cuMemAllocHost did not return (or was freed already)");
  }
  std::free(p);
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  return copyHtoD(dst, src, n, s, false, "cuMemcpyHtoDAsync");
}

GPUSIM_EXPORT CUresult cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t n, CUstream s) {
  return copyDtoH(dst, src, n, s, false, "cuMemcpyDtoHAsync");
}

GPUSIM_EXPORT CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  CUctx_st* ctx = nullptr;
  if (CUresult r = enterCopy(s, ctx, src, n, "cuMemcpyDtoDAsync", "source"); r || n == 0) return r;
  gpusim::DeviceMemory* memory = ctx->device->memory.get();
  if (CUresult r = checkRange(*memory, dst, n, "cuMemcpyDtoDAsync", "destination")) return r;
  return submit(s, [memory, dst, src, n] {
    gpusim::Allocation* from = findAtRun(*memory, src, n, "cuMemcpyDtoDAsync");
    gpusim::Allocation* to = findAtRun(*memory, dst, n, "cuMemcpyDtoDAsync");
    if (!from || !to) return CUDA_ERROR_ILLEGAL_ADDRESS;
    std::memmove(to->host(dst), from->host(src), n);
    to->markWritten(dst, n);
    return CUDA_SUCCESS;
  }, "cuMemcpyDtoDAsync");
}

// Between two GPUs' memories (each context's device its own, kiln's placed stages on cuda): checked
// against each side's allocations when called and when run, queued on `s`, which may belong to
// either context. Both contexts must be live and not sticky.
static CUresult copyPeer(CUdeviceptr dst, CUcontext dstCtx, CUdeviceptr src, CUcontext srcCtx, size_t n, CUstream s,
                  bool wait, const char* call) {
  CUctx_st* streamCtx = nullptr;
  if (CUresult r = enterStream(s, streamCtx)) return r;
  if (!dstCtx || !srcCtx) return fail(CUDA_ERROR_INVALID_CONTEXT, std::string(call) + ": a null context");
  if (CUresult r = enter(dstCtx)) return r;
  if (CUresult r = enter(srcCtx)) return r;
  if (n == 0) return CUDA_SUCCESS;
  gpusim::DeviceMemory* to = &memoryOf(dstCtx);
  gpusim::DeviceMemory* from = &memoryOf(srcCtx);
  if (CUresult r = checkRange(*from, src, n, call, "source")) return r;
  if (CUresult r = checkRange(*to, dst, n, call, "destination")) return r;
  return queue(streamCtx, s, [to, from, dst, src, n, call] {
    gpusim::Allocation* a = findAtRun(*from, src, n, call);
    gpusim::Allocation* b = findAtRun(*to, dst, n, call);
    if (!a || !b) return CUDA_ERROR_ILLEGAL_ADDRESS;
    std::memcpy(b->host(dst), a->host(src), n);
    b->markWritten(dst, n);
    return CUDA_SUCCESS;
  }, call, wait);
}

GPUSIM_EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dstCtx, CUdeviceptr src, CUcontext srcCtx, size_t n,
                                         CUstream s) {
  return copyPeer(dst, dstCtx, src, srcCtx, n, s, false, "cuMemcpyPeerAsync");
}

GPUSIM_EXPORT CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext dstCtx, CUdeviceptr src, CUcontext srcCtx, size_t n) {
  if (CUresult r = checkCaptureSafe("cuMemcpyPeer")) return r;
  return copyPeer(dst, dstCtx, src, srcCtx, n, nullptr, true, "cuMemcpyPeer");
}

GPUSIM_EXPORT CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, CUstream s) {
  return fill(dst, value, 1, n, s, false, "cuMemsetD8Async");
}

GPUSIM_EXPORT CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t n, CUstream s) {
  return fill(dst, value, 4, n, s, false, "cuMemsetD32Async");
}

// The synchronous forms run on the legacy stream and are refused during a capture.
GPUSIM_EXPORT CUresult cuMemcpyHtoD(CUdeviceptr dst, const void* src, size_t n) {
  if (CUresult r = checkCaptureSafe("cuMemcpyHtoD")) return r;
  return copyHtoD(dst, src, n, nullptr, true, "cuMemcpyHtoD");
}

GPUSIM_EXPORT CUresult cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t n) {
  if (CUresult r = checkCaptureSafe("cuMemcpyDtoH")) return r;
  return copyDtoH(dst, src, n, nullptr, true, "cuMemcpyDtoH");
}

GPUSIM_EXPORT CUresult cuMemsetD8(CUdeviceptr dst, unsigned char value, size_t n) {
  if (CUresult r = checkCaptureSafe("cuMemsetD8")) return r;
  return fill(dst, value, 1, n, nullptr, true, "cuMemsetD8");
}

GPUSIM_EXPORT CUresult cuMemsetD32(CUdeviceptr dst, unsigned int value, size_t n) {
  if (CUresult r = checkCaptureSafe("cuMemsetD32")) return r;
  return fill(dst, value, 4, n, nullptr, true, "cuMemsetD32");
}
