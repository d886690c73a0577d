// Events: a record is a marker queued on a stream; it completes (and takes its time from the host's
// steady clock) when the stream reaches it. cuStreamWaitEvent makes the stream's next work wait
// for that marker, so the waiting stream really waits.
#include <chrono>

#include "gpusim/driver/state.h"

using namespace gpusim::driver;

namespace {

MarkerPtr markerOf(CUevent e) {
  std::lock_guard<std::mutex> lock(e->mutex);
  return e->marker;
}

}  // namespace

GPUSIM_EXPORT CUresult cuEventCreate(CUevent* phEvent, unsigned int flags) {
  constexpr unsigned kKnown = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if (!phEvent || (flags & ~kKnown)) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  if (CUresult r = enter(ctx)) return r;
  auto* e = new CUevent_st;
  e->ctx = ctx;
  e->flags = flags;
  *phEvent = e;
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult cuEventDestroy(CUevent hEvent) {
  if (!hEvent) return CUDA_ERROR_INVALID_HANDLE;
  forgetEvent(hEvent);
  // Work queued behind the record holds the marker, not the event: deleting it now is safe.
  delete hEvent;
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
  if (!hEvent) return CUDA_ERROR_INVALID_HANDLE;
  CUctx_st* ctx = nullptr;
  if (CUresult r = enterStream(hStream, ctx)) return r;
  if (recordIntoCapture(hEvent, hStream)) return CUDA_SUCCESS;
  MarkerPtr done;
  if (CUresult r = submit(hStream, nullptr, "cuEventRecord", {}, &done)) return r;
  std::lock_guard<std::mutex> lock(hEvent->mutex);
  hEvent->marker = done;
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult cuEventSynchronize(CUevent hEvent) {
  if (!hEvent) return CUDA_ERROR_INVALID_HANDLE;
  CUctx_st* ctx = hEvent->ctx;
  if (CUresult r = enter(ctx)) return r;
  waitFor(markerOf(hEvent));
  return static_cast<CUresult>(ctx->sticky.load());
}

GPUSIM_EXPORT CUresult cuEventQuery(CUevent hEvent) {
  if (!hEvent) return CUDA_ERROR_INVALID_HANDLE;
  CUctx_st* ctx = hEvent->ctx;
  if (CUresult r = enter(ctx)) return r;
  return isDone(markerOf(hEvent)) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

GPUSIM_EXPORT CUresult cuEventElapsedTime(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  if (!pMilliseconds) return CUDA_ERROR_INVALID_VALUE;
  if (!hStart || !hEnd) return CUDA_ERROR_INVALID_HANDLE;
  CUctx_st* ctx = hStart->ctx;
  if (CUresult r = enter(ctx)) return r;
  if ((hStart->flags | hEnd->flags) & CU_EVENT_DISABLE_TIMING)
    return fail(CUDA_ERROR_INVALID_HANDLE, "cuEventElapsedTime of an event created with CU_EVENT_DISABLE_TIMING");
  MarkerPtr start = markerOf(hStart), end = markerOf(hEnd);
  if (!start || !end) return fail(CUDA_ERROR_INVALID_HANDLE, "cuEventElapsedTime of an event never recorded");
  if (!isDone(start) || !isDone(end)) return CUDA_ERROR_NOT_READY;
  std::chrono::duration<float, std::milli> ms = end->when - start->when;
  *pMilliseconds = ms.count();
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int flags) {
  if (!hEvent) return CUDA_ERROR_INVALID_HANDLE;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  if (CUresult r = enterStream(hStream, ctx)) return r;
  bool handled = false;
  if (CUresult r = waitInCapture(hStream, hEvent, &handled); r || handled) return r;
  MarkerPtr m = markerOf(hEvent);
  if (!m) return CUDA_SUCCESS;  // never recorded: nothing to wait for
  return submit(hStream, nullptr, "cuStreamWaitEvent", {m});
}
