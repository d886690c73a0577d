// The kernel plan: a function split into the steps the runtime executes in order. A kernel step
// is a group of ops lowered to one generated kernel (one op per group until the fusion pass
// groups more); a region step is a `map` or `while`, which the host drives over the plans of its
// regions.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace kiln::codegen {

// Ops lowered together into one kernel that loops over the elements of its outputs. All outputs
// of a group have the same element count (the loop's trip count).
struct KernelGroup {
  std::string name;                  // kernel symbol, e.g. "k3_add": index in the plan + op names
  std::vector<const Op*> ops;        // program order
  std::vector<const Value*> inputs;  // values defined outside the group that it reads, in argument order
  std::vector<const Value*> outputs; // values it writes, in argument order (after the inputs)
  int64_t numElements() const { return outputs.front()->type().numElements(); }
};

struct BlockPlan;

// A `map` or `while` op, run by the host over compiled plans of its regions.
struct RegionStep {
  const Op* op;
  std::vector<std::unique_ptr<BlockPlan>> regions;  // map: {body}; while: {cond, body}
};

struct Step {
  enum class Kind { Kernel, Region } kind;
  int group = -1;        // Kernel: index into BlockPlan::groups
  RegionStep region;     // Region
};

// The plan of one block (a function body or a region).
struct BlockPlan {
  const Block* block;
  std::vector<KernelGroup> groups;
  std::vector<Step> steps;
  // Every kernel group of this plan and of nested region plans, depth first (for emitting one
  // LLVM module per function).
  std::vector<const KernelGroup*> allGroups() const;
};

// Plans a function: one kernel per op that is neither a region op nor a terminator. Kernel names
// are unique across the whole function (nested regions included).
std::unique_ptr<BlockPlan> planFunction(const Function& function);

}  // namespace kiln::codegen
