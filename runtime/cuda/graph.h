// CUDA graphs: work queued on a stream is captured once and replayed with one launch, which
// hides the per-kernel launch overhead of small steps.
#pragma once

#include <cuda.h>

#include <functional>

#include "ir/status.h"

namespace kiln::cuda {

class GraphExec {
 public:
  // Captures what `enqueue` queues on `stream` (nothing runs during capture) and instantiates it.
  // A failure inside `enqueue` ends the capture and is returned; so is work that cannot be
  // captured (a synchronous copy, a host wait), which the caller then runs eagerly.
  static Expected<GraphExec> capture(CUstream stream, const std::function<Status()>& enqueue);
  GraphExec(GraphExec&& o) noexcept : exec_(o.exec_) { o.exec_ = nullptr; }
  GraphExec& operator=(GraphExec&& o) noexcept;
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;
  ~GraphExec();

  Status launch(CUstream stream) const;

 private:
  explicit GraphExec(CUgraphExec e) : exec_(e) {}
  CUgraphExec exec_ = nullptr;
};

}  // namespace kiln::cuda
