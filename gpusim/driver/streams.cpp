// Streams: a worker thread per stream runs its queue in order, so different streams run truly
// concurrently. The legacy NULL stream orders itself after every blocking stream's earlier work
// and every blocking stream after the legacy stream's, as CUDA does; CU_STREAM_NON_BLOCKING
// streams do not take part.
#include <algorithm>
#include <cstdio>

#include "gpusim/driver/state.h"

namespace gpusim::driver {

namespace {

std::mutex& markerMutex() {
  static std::mutex& m = *new std::mutex;
  return m;
}
std::condition_variable& markerCv() {
  static std::condition_variable& cv = *new std::condition_variable;
  return cv;
}

void runQueue(CUstream s) {
  for (;;) {
    CUstream_st::Queued q;
    {
      std::unique_lock<std::mutex> lock(s->mutex);
      s->cv.wait(lock, [&] { return s->stopping || !s->queue.empty(); });
      if (s->queue.empty()) return;
      q = std::move(s->queue.front());
      s->queue.pop_front();
    }
    for (const MarkerPtr& w : q.waits) waitFor(w);
    // After a launch fault the context is dead: queued work is dropped, as on hardware.
    if (q.work && s->ctx->sticky.load() == CUDA_SUCCESS) {
      CUresult r;
      try {
        r = q.work();
      } catch (const std::exception& e) {
        r = fail(CUDA_ERROR_UNKNOWN, std::string("internal error in queued work: ") + e.what());
      }
      int expected = CUDA_SUCCESS;
      if (r != CUDA_SUCCESS) s->ctx->sticky.compare_exchange_strong(expected, r);
    }
    markDone(q.done);
  }
}

CUstream startStream(CUctx_st* ctx, unsigned flags, bool legacy) {
  auto* s = new CUstream_st;
  s->ctx = ctx;
  s->flags = flags;
  s->legacy = legacy;
  s->blocking = !(flags & CU_STREAM_NON_BLOCKING);
  s->worker = std::thread(runQueue, s);
  return s;
}

MarkerPtr lastOf(CUstream s) {
  std::lock_guard<std::mutex> lock(s->mutex);
  return s->last;
}

}  // namespace

void waitFor(const MarkerPtr& m) {
  if (!m) return;
  std::unique_lock<std::mutex> lock(markerMutex());
  markerCv().wait(lock, [&] { return m->done; });
}

bool isDone(const MarkerPtr& m) {
  if (!m) return true;
  std::lock_guard<std::mutex> lock(markerMutex());
  return m->done;
}

void markDone(const MarkerPtr& m) {
  {
    std::lock_guard<std::mutex> lock(markerMutex());
    m->when = std::chrono::steady_clock::now();
    m->done = true;
  }
  markerCv().notify_all();
}

CUstream legacyStream(CUctx_st* ctx) {
  std::lock_guard<std::mutex> lock(ctx->mutex);
  if (!ctx->legacy) ctx->legacy = startStream(ctx, 0, true);
  return ctx->legacy;
}

void destroyStream(CUstream s) {
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    s->stopping = true;
  }
  s->cv.notify_all();
  s->worker.join();
  delete s;
}

CUresult submit(CUstream s, Work work, const char* what, std::vector<MarkerPtr> waits, MarkerPtr* done) {
  if (done) *done = nullptr;
  if (isCapturing(s)) return captureWork(s, std::move(work), what);
  CUctx_st* ctx = s->ctx;
  if (s->legacy && contextCapturing(ctx)) {
    invalidateCaptures(ctx);
    return fail(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
                std::string(what) + " on the legacy stream while a blocking stream is capturing: the legacy "
                "stream would wait for it (use a CU_STREAM_NON_BLOCKING stream)");
  }
  // The legacy stream's implicit synchronisation.
  if (s->legacy || s->blocking) {
    std::vector<CUstream> others;
    {
      std::lock_guard<std::mutex> lock(ctx->mutex);
      if (s->legacy) {
        for (CUstream o : ctx->streams)
          if (o->blocking) others.push_back(o);
      } else if (ctx->legacy) {
        others.push_back(ctx->legacy);
      }
    }
    for (CUstream o : others)
      if (MarkerPtr m = lastOf(o); m && !isDone(m)) waits.push_back(std::move(m));
  }
  auto marker = std::make_shared<Marker>();
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    s->queue.push_back({std::move(waits), std::move(work), marker});
    s->last = marker;
  }
  s->cv.notify_one();
  if (done) *done = marker;
  return CUDA_SUCCESS;
}

void drain(CUstream s) {
  std::vector<MarkerPtr> waits{lastOf(s)};
  if (s->legacy) {
    std::lock_guard<std::mutex> lock(s->ctx->mutex);
    for (CUstream o : s->ctx->streams)
      if (o->blocking) waits.push_back(lastOf(o));
  }
  for (const MarkerPtr& m : waits) waitFor(m);
}

}  // namespace gpusim::driver

using namespace gpusim::driver;

GPUSIM_EXPORT CUresult cuStreamCreate(CUstream* phStream, unsigned int flags) {
  if (!phStream || (flags & ~unsigned{CU_STREAM_NON_BLOCKING})) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  if (CUresult r = enter(ctx)) return r;
  CUstream s = startStream(ctx, flags, false);
  std::lock_guard<std::mutex> lock(ctx->mutex);
  ctx->streams.push_back(s);
  *phStream = s;
  return CUDA_SUCCESS;
}

// Waits for the stream's work (the real call returns at once and lets it finish; waiting is
// indistinguishable to the caller, and the worker thread must end before the stream is freed).
GPUSIM_EXPORT CUresult cuStreamDestroy(CUstream hStream) {
  if (!hStream || hStream == CU_STREAM_LEGACY || hStream == CU_STREAM_PER_THREAD) return CUDA_ERROR_INVALID_HANDLE;
  CUctx_st* ctx = hStream->ctx;
  {
    std::lock_guard<std::mutex> lock(ctx->mutex);
    auto it = std::find(ctx->streams.begin(), ctx->streams.end(), hStream);
    if (it == ctx->streams.end()) return CUDA_ERROR_INVALID_HANDLE;
    ctx->streams.erase(it);
  }
  if (isCapturing(hStream)) refuseDuringCapture(hStream, "cuStreamDestroy");
  destroyStream(hStream);
  return static_cast<CUresult>(ctx->sticky.load());
}

GPUSIM_EXPORT CUresult cuStreamSynchronize(CUstream hStream) {
  CUctx_st* ctx = nullptr;
  if (CUresult r = enterStream(hStream, ctx)) return r;
  if (CUresult r = refuseDuringCapture(hStream, "cuStreamSynchronize")) return r;
  if (hStream->legacy && contextCapturing(ctx)) {
    invalidateCaptures(ctx);
    return fail(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
                "cuStreamSynchronize of the legacy stream while a blocking stream is capturing");
  }
  drain(hStream);
  return static_cast<CUresult>(ctx->sticky.load());
}

GPUSIM_EXPORT CUresult cuStreamQuery(CUstream hStream) {
  CUctx_st* ctx = nullptr;
  if (CUresult r = enterStream(hStream, ctx)) return r;
  if (CUresult r = refuseDuringCapture(hStream, "cuStreamQuery")) return r;
  if (!isDone(lastOf(hStream))) return CUDA_ERROR_NOT_READY;
  return static_cast<CUresult>(ctx->sticky.load());
}

GPUSIM_EXPORT CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void* userData) {
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  if (CUresult r = enterStream(hStream, ctx)) return r;
  return submit(hStream, [fn, userData] {
    fn(userData);
    return CUDA_SUCCESS;
  }, "cuLaunchHostFunc");
}
