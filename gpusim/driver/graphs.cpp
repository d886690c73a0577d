// Stream capture and graphs. Between cuStreamBeginCapture and cuStreamEndCapture a stream's work
// becomes graph nodes, each depending on the stream's previous ones (its "tips"); an event recorded
// there names the tips, and a stream waiting on it joins the capture (fork), until the origin stream
// waits on an event of the joined stream's (join). A graph is replayed in node order, which
// respects every dependency (a node only depends on earlier ones).
#include <algorithm>
#include <thread>

#include "gpusim/driver/state.h"

namespace gpusim::driver {

struct Node {
  Work work;
  std::vector<uint32_t> deps;
  std::string what;
};

}  // namespace gpusim::driver

struct CUgraph_st {
  std::vector<gpusim::driver::Node> nodes;
};

struct CUgraphExec_st {
  std::shared_ptr<const std::vector<gpusim::driver::Node>> nodes;
};

namespace gpusim::driver {

struct Capture {
  CUctx_st* ctx = nullptr;
  CUgraph_st* graph = nullptr;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  std::thread::id thread;
  CUstream origin = nullptr;
  std::vector<CUstream> streams;  // origin first, then the joined ones
  std::vector<CUevent> events;    // recorded during the capture
  bool invalidated = false;
};

namespace {

std::mutex& captureMutex() {
  static std::mutex& m = *new std::mutex;
  return m;
}
std::vector<Capture*>& captures() {
  static std::vector<Capture*>& v = *new std::vector<Capture*>;
  return v;
}

void addTips(std::vector<uint32_t>& tips, const std::vector<uint32_t>& more) {
  for (uint32_t n : more)
    if (std::find(tips.begin(), tips.end(), n) == tips.end()) tips.push_back(n);
}

// Whether every node is an ancestor of (or one of) the origin's tips: work forked onto another
// stream must be joined back before the capture ends.
bool allJoined(const CUgraph_st& g, const std::vector<uint32_t>& tips) {
  std::vector<bool> reached(g.nodes.size(), false);
  std::vector<uint32_t> pending = tips;
  while (!pending.empty()) {
    uint32_t n = pending.back();
    pending.pop_back();
    if (reached[n]) continue;
    reached[n] = true;
    for (uint32_t d : g.nodes[n].deps) pending.push_back(d);
  }
  return std::all_of(reached.begin(), reached.end(), [](bool r) { return r; });
}

}  // namespace

bool isCapturing(CUstream s) {
  std::lock_guard<std::mutex> lock(captureMutex());
  return s->capture != nullptr;
}

CUresult captureWork(CUstream s, Work work, const char* what) {
  std::lock_guard<std::mutex> lock(captureMutex());
  Capture* c = s->capture;
  if (!c) return CUDA_ERROR_ILLEGAL_STATE;
  if (c->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  auto index = static_cast<uint32_t>(c->graph->nodes.size());
  c->graph->nodes.push_back({std::move(work), s->tips, what});
  s->tips = {index};
  return CUDA_SUCCESS;
}

CUresult refuseDuringCapture(CUstream s, const char* call) {
  std::lock_guard<std::mutex> lock(captureMutex());
  if (!s->capture) return CUDA_SUCCESS;
  s->capture->invalidated = true;
  return fail(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
              std::string(call) + " on a capturing stream is not permitted; the capture is invalidated");
}

CUresult checkCaptureSafe(const char* call) {
  std::lock_guard<std::mutex> lock(captureMutex());
  bool refused = false;
  for (Capture* c : captures()) {
    bool applies = c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL ||
                   (c->mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL && c->thread == std::this_thread::get_id());
    if (!applies) continue;
    c->invalidated = true;
    refused = true;
  }
  if (!refused) return CUDA_SUCCESS;
  return fail(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
              std::string(call) + " is not permitted while a stream capture is under way (a synchronous or "
              "potentially unsafe call); the capture is invalidated");
}

bool contextCapturing(CUctx_st* ctx) {
  std::lock_guard<std::mutex> lock(captureMutex());
  for (Capture* c : captures())
    if (c->ctx == ctx)
      for (CUstream s : c->streams)
        if (s->blocking) return true;
  return false;
}

void invalidateCaptures(CUctx_st* ctx) {
  std::lock_guard<std::mutex> lock(captureMutex());
  for (Capture* c : captures())
    if (c->ctx == ctx) c->invalidated = true;
}

bool recordIntoCapture(CUevent e, CUstream s) {
  std::lock_guard<std::mutex> lock(captureMutex());
  if (!s->capture) return false;
  if (e->capture && e->capture != s->capture) std::erase(e->capture->events, e);
  if (e->capture != s->capture) s->capture->events.push_back(e);
  e->capture = s->capture;
  e->captureNodes = s->tips;
  return true;
}

CUresult waitInCapture(CUstream s, CUevent e, bool* handled) {
  std::lock_guard<std::mutex> lock(captureMutex());
  *handled = true;
  if (Capture* c = e->capture) {
    if (s->capture == c) {
      addTips(s->tips, e->captureNodes);
      return CUDA_SUCCESS;
    }
    if (s->capture) {
      s->capture->invalidated = c->invalidated = true;
      return fail(CUDA_ERROR_STREAM_CAPTURE_MERGE, "cuStreamWaitEvent would merge two separate stream captures");
    }
    s->capture = c;  // fork: the stream joins the capture
    s->tips = e->captureNodes;
    c->streams.push_back(s);
    return CUDA_SUCCESS;
  }
  if (s->capture) {
    std::lock_guard<std::mutex> eventLock(e->mutex);
    if (!e->marker) return CUDA_SUCCESS;  // never recorded: no dependency
    s->capture->invalidated = true;
    return fail(CUDA_ERROR_STREAM_CAPTURE_ISOLATION,
                "cuStreamWaitEvent on a capturing stream for an event recorded outside the capture");
  }
  *handled = false;
  return CUDA_SUCCESS;
}

void forgetEvent(CUevent e) {
  std::lock_guard<std::mutex> lock(captureMutex());
  if (e->capture) std::erase(e->capture->events, e);
  e->capture = nullptr;
}

}  // namespace gpusim::driver

using namespace gpusim::driver;

GPUSIM_EXPORT CUresult cuStreamBeginCapture(CUstream hStream, CUstreamCaptureMode mode) {
  CUctx_st* ctx = nullptr;
  if (CUresult r = enterStream(hStream, ctx)) return r;
  if (hStream->legacy)
    return fail(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "cuStreamBeginCapture of the legacy stream is not permitted");
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(captureMutex());
  if (hStream->capture) return fail(CUDA_ERROR_ILLEGAL_STATE, "cuStreamBeginCapture of a stream already capturing");
  auto* c = new Capture;
  c->ctx = ctx;
  c->graph = new CUgraph_st;
  c->mode = mode;
  c->thread = std::this_thread::get_id();
  c->origin = hStream;
  c->streams.push_back(hStream);
  hStream->capture = c;
  hStream->tips.clear();
  captures().push_back(c);
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult cuStreamEndCapture(CUstream hStream, CUgraph* phGraph) {
  if (!phGraph) return CUDA_ERROR_INVALID_VALUE;
  *phGraph = nullptr;
  CUctx_st* ctx = nullptr;
  if (CUresult r = enterStream(hStream, ctx)) return r;
  std::unique_lock<std::mutex> lock(captureMutex());
  Capture* c = hStream->capture;
  if (!c) return CUDA_ERROR_ILLEGAL_STATE;
  if (c->origin != hStream) {
    c->invalidated = true;
    lock.unlock();
    return fail(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "cuStreamEndCapture on a stream that joined the capture, not its origin");
  }
  if (c->mode != CU_STREAM_CAPTURE_MODE_RELAXED && c->thread != std::this_thread::get_id())
    return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  std::vector<uint32_t> tips = hStream->tips;
  for (CUstream s : c->streams) {
    s->capture = nullptr;
    s->tips.clear();
  }
  for (CUevent e : c->events) {
    e->capture = nullptr;
    e->captureNodes.clear();
  }
  std::erase(captures(), c);
  std::unique_ptr<Capture> owned(c);
  std::unique_ptr<CUgraph_st> graph(c->graph);
  lock.unlock();
  if (c->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  if (!allJoined(*graph, tips))
    return fail(CUDA_ERROR_STREAM_CAPTURE_UNJOINED,
                "cuStreamEndCapture: work forked onto another stream was not joined back (record an event "
                "there and make the origin stream wait on it)");
  *phGraph = graph.release();
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus* status) {
  if (!status) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  if (CUresult r = enterStream(hStream, ctx)) return r;
  std::lock_guard<std::mutex> lock(captureMutex());
  *status = !hStream->capture               ? CU_STREAM_CAPTURE_STATUS_NONE
            : hStream->capture->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                            : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode* nodes, size_t* numNodes) {
  if (!hGraph || !numNodes) return CUDA_ERROR_INVALID_VALUE;
  if (!nodes) {
    *numNodes = hGraph->nodes.size();
    return CUDA_SUCCESS;
  }
  size_t n = std::min(*numNodes, hGraph->nodes.size());
  for (size_t i = 0; i < *numNodes; ++i)
    nodes[i] = i < n ? reinterpret_cast<CUgraphNode>(&hGraph->nodes[i]) : nullptr;
  *numNodes = n;
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult cuGraphInstantiate(CUgraphExec* phGraphExec, CUgraph hGraph, unsigned long long flags) {
  if (!phGraphExec || !hGraph) return CUDA_ERROR_INVALID_VALUE;
  (void)flags;  // auto-free-on-launch, upload, device launch, priority: nothing to do here
  auto* exec = new CUgraphExec_st;
  exec->nodes = std::make_shared<const std::vector<Node>>(hGraph->nodes);
  *phGraphExec = exec;
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  if (!hGraphExec) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  if (CUresult r = enterStream(hStream, ctx)) return r;
  // The queued work holds the nodes: destroying the exec right after the launch is allowed.
  std::shared_ptr<const std::vector<Node>> nodes = hGraphExec->nodes;
  return submit(hStream, [nodes] {
    for (const Node& n : *nodes)
      if (CUresult r = n.work ? n.work() : CUDA_SUCCESS) return r;
    return CUDA_SUCCESS;
  }, "cuGraphLaunch");
}

GPUSIM_EXPORT CUresult cuGraphDestroy(CUgraph hGraph) {
  if (!hGraph) return CUDA_ERROR_INVALID_VALUE;
  delete hGraph;
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  if (!hGraphExec) return CUDA_ERROR_INVALID_VALUE;
  delete hGraphExec;
  return CUDA_SUCCESS;
}
