// Contexts: one primary context per device, the calling thread's current context, and the sticky
// error a launch fault leaves behind (every later call returns it, as after a real ILLEGAL_ADDRESS).
#include "gpusim/driver/state.h"

namespace gpusim::driver {

CUctx_st*& currentContext() {
  static thread_local CUctx_st* current = nullptr;
  return current;
}

CUresult enter(CUctx_st*& ctx) {
  if (!initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ctx) ctx = currentContext();
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
  return static_cast<CUresult>(ctx->sticky.load());
}

CUresult enterStream(CUstream& stream, CUctx_st*& ctx) {
  bool legacy = stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD;
  ctx = legacy ? nullptr : stream->ctx;
  if (CUresult r = enter(ctx)) return r;
  if (legacy) stream = legacyStream(ctx);
  return CUDA_SUCCESS;
}

void drainContext(CUctx_st* ctx) {
  std::vector<CUstream> streams;
  {
    std::lock_guard<std::mutex> lock(ctx->mutex);
    streams = ctx->streams;
    if (ctx->legacy) streams.push_back(ctx->legacy);
  }
  for (CUstream s : streams) drain(s);
}

}  // namespace gpusim::driver

using namespace gpusim::driver;

namespace {

CUresult primaryOf(CUdevice dev, CUctx_st*& ctx) {
  if (!initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev < 0 || static_cast<size_t>(dev) >= devices().size()) return CUDA_ERROR_INVALID_DEVICE;
  ctx = devices()[static_cast<size_t>(dev)].primary;
  return CUDA_SUCCESS;
}

}  // namespace

GPUSIM_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  if (CUresult r = primaryOf(dev, ctx)) return r;
  std::lock_guard<std::mutex> lock(ctx->mutex);
  ++ctx->retained;
  *pctx = ctx;
  return CUDA_SUCCESS;
}

// The context outlives its last release (real CUDA would destroy it): handles kept in static
// objects stay usable at exit. cuDevicePrimaryCtxReset is the way to start afresh.
GPUSIM_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  CUctx_st* ctx = nullptr;
  if (CUresult r = primaryOf(dev, ctx)) return r;
  std::lock_guard<std::mutex> lock(ctx->mutex);
  if (ctx->retained == 0) return CUDA_ERROR_INVALID_CONTEXT;
  --ctx->retained;
  return CUDA_SUCCESS;
}

// Clears a sticky error as a real reset does: waits for the streams, destroys them and frees every
// cuMemAlloc allocation. Modules and events stay (their handles would dangle on real hardware).
GPUSIM_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev) {
  CUctx_st* ctx = nullptr;
  if (CUresult r = primaryOf(dev, ctx)) return r;
  std::vector<CUstream> streams;
  std::set<uint64_t> allocations;
  {
    std::lock_guard<std::mutex> lock(ctx->mutex);
    streams.swap(ctx->streams);
    if (ctx->legacy) streams.push_back(ctx->legacy);
    ctx->legacy = nullptr;
    allocations.swap(ctx->allocations);
  }
  for (CUstream s : streams) destroyStream(s);
  for (uint64_t a : allocations) ctx->device->memory->free(a);
  ctx->sticky = CUDA_SUCCESS;
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  if (!initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  currentContext() = ctx;
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult cuCtxGetCurrent(CUcontext* pctx) {
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (!initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  *pctx = currentContext();
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult cuCtxGetDevice(CUdevice* device) {
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  if (!initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  ctx = currentContext();
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
  *device = ctx->device->ordinal;
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult cuCtxSynchronize(void) {
  CUctx_st* ctx = nullptr;
  if (CUresult r = enter(ctx)) return r;
  if (CUresult r = checkCaptureSafe("cuCtxSynchronize")) return r;
  drainContext(ctx);
  return static_cast<CUresult>(ctx->sticky.load());
}
