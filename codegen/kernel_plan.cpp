// Splits a function into kernel groups and region steps (one kernel per op until fusion groups
// more), numbering kernels in one depth-first walk so their names are unique per function.
#include "codegen/kernel_plan.h"

#include <algorithm>

namespace kiln::codegen {

namespace {

// Operands of the group's ops that no op of the group defines, deduplicated, in first-use order.
// Values used inside nested regions cannot occur: region ops are never in a kernel group.
std::vector<const Value*> groupInputs(const std::vector<const Op*>& ops) {
  std::vector<const Value*> inputs;
  for (const Op* op : ops) {
    for (const Value* v : op->operands()) {
      bool internal = v->definingOp() && std::find(ops.begin(), ops.end(), v->definingOp()) != ops.end();
      if (!internal && std::find(inputs.begin(), inputs.end(), v) == inputs.end()) inputs.push_back(v);
    }
  }
  return inputs;
}

class Planner {
 public:
  std::unique_ptr<BlockPlan> planBlock(const Block& block) {
    auto plan = std::make_unique<BlockPlan>();
    plan->block = &block;
    for (const auto& opPtr : block.ops()) {
      const Op* op = opPtr.get();
      OpClass cls = op->info().cls;
      if (cls == OpClass::Terminator) continue;
      if (cls == OpClass::Region) {
        Step step{Step::Kind::Region, -1, RegionStep{op, {}}};
        for (size_t r = 0; r < op->numRegions(); ++r) step.region.regions.push_back(planBlock(*op->region(r)));
        plan->steps.push_back(std::move(step));
        continue;
      }
      KernelGroup group;
      group.ops = {op};
      group.name = "k" + std::to_string(nextKernel_++) + "_" + std::string(op->name());
      group.inputs = groupInputs(group.ops);
      for (size_t i = 0; i < op->numResults(); ++i) group.outputs.push_back(op->result(i));
      plan->steps.push_back(Step{Step::Kind::Kernel, static_cast<int>(plan->groups.size()), RegionStep{nullptr, {}}});
      plan->groups.push_back(std::move(group));
    }
    return plan;
  }

 private:
  int nextKernel_ = 0;  // shared by nested regions: names stay unique across the function
};

void collectGroups(const BlockPlan& plan, std::vector<const KernelGroup*>& out) {
  for (const Step& step : plan.steps) {
    if (step.kind == Step::Kind::Kernel) {
      out.push_back(&plan.groups[static_cast<size_t>(step.group)]);
      continue;
    }
    for (const auto& region : step.region.regions) collectGroups(*region, out);
  }
}

}  // namespace

std::vector<const KernelGroup*> BlockPlan::allGroups() const {
  std::vector<const KernelGroup*> out;
  collectGroups(*this, out);
  return out;
}

std::unique_ptr<BlockPlan> planFunction(const Function& function) { return Planner().planBlock(function.body()); }

}  // namespace kiln::codegen
