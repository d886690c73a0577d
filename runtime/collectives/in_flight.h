// The all_reduces a run has started and not yet waited for: a step that reads the result of one
// waits for it first, and a plan waits for all of them before it ends. Shared by the CPU backend
// (Handle: a reduction thread's ticket) and the CUDA program (Handle: an event on the NCCL stream).
#pragma once

#include <utility>
#include <vector>

#include "codegen/kernel_plan.h"

namespace kiln::collectives {

template <class Handle>
class InFlight {
 public:
  struct Entry {
    const codegen::KernelGroup* group;  // the all_reduce's kernel; its one result is being reduced
    Handle handle;
  };

  void add(const codegen::KernelGroup& group, Handle handle) { entries_.push_back({&group, std::move(handle)}); }
  bool empty() const { return entries_.empty(); }

  // Removes and returns those whose result is among `reads`, in the order they were started.
  std::vector<Entry> takeReadBy(const std::vector<const Value*>& reads) {
    std::vector<Entry> taken, kept;
    for (Entry& e : entries_) {
      bool read = false;
      for (const Value* v : reads) read |= v == e.group->results[0];
      (read ? taken : kept).push_back(std::move(e));
    }
    entries_ = std::move(kept);
    return taken;
  }
  std::vector<Entry> takeAll() { return std::exchange(entries_, {}); }
  // Those `step` of `plan` must wait for: a kernel, those it reads; a region step (`map`, `while`),
  // which may read anything from outside at any depth, all.
  std::vector<Entry> takeNeededBy(const codegen::BlockPlan& plan, const codegen::Step& step) {
    if (step.kind != codegen::Step::Kind::Kernel) return takeAll();
    return takeReadBy(plan.groups[static_cast<size_t>(step.group)].inputs);
  }

 private:
  std::vector<Entry> entries_;  // a handful: one per gradient bucket
};

}  // namespace kiln::collectives
