// Stream capture into a CUDA graph (graph.h).
#include "runtime/cuda/graph.h"

#include "runtime/cuda/driver.h"

namespace kiln::cuda {

Expected<GraphExec> GraphExec::capture(CUstream stream, const std::function<Status()>& enqueue) {
  // Thread-local mode: another thread's unsafe call (cuMemAlloc) does not break this capture.
  KILN_CU(cuStreamBeginCapture, "", stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  Status queued = enqueue();
  CUgraph graph = nullptr;
  // The capture must end whatever happened, or the stream stays unusable.
  CUresult ended = api().cuStreamEndCapture(stream, &graph);
  if (!queued) {
    if (graph) api().cuGraphDestroy(graph);
    return queued.error();
  }
  KILN_TRY(check(ended, "cuStreamEndCapture"));
  CUgraphExec exec = nullptr;
  CUresult r = api().cuGraphInstantiate(&exec, graph, 0);
  api().cuGraphDestroy(graph);
  KILN_TRY(check(r, "cuGraphInstantiate"));
  return GraphExec(exec);
}

GraphExec& GraphExec::operator=(GraphExec&& o) noexcept {
  if (this != &o) {
    if (exec_) api().cuGraphExecDestroy(exec_);
    exec_ = o.exec_;
    o.exec_ = nullptr;
  }
  return *this;
}

GraphExec::~GraphExec() {
  if (exec_) api().cuGraphExecDestroy(exec_);
}

Status GraphExec::launch(CUstream stream) const { return check(api().cuGraphLaunch(exec_, stream), "cuGraphLaunch"); }

}  // namespace kiln::cuda
