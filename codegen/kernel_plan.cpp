// Splits a function into kernel groups and region steps: one kernel per `fusion` op and per
// remaining op, numbering kernels in one depth-first walk so their names are unique per function.
// Each group gets its layout here: Row when its ops have a row structure, else Loop with its
// outputs in segments by shape. Either computes exactly what the ops compute one by one; the
// fusion pass only decides which ops share a kernel.
#include "codegen/kernel_plan.h"

#include <algorithm>
#include <unordered_set>

#include "ir/constant_data.h"

namespace kiln::codegen {

int64_t KernelGroup::numOutputElements() const {
  int64_t n = 0;
  for (const Value* v : outputs) n += v->type().numElements();
  return n;
}

namespace {

uint64_t bytesOf(const std::vector<const Value*>& values) {
  uint64_t bytes = 0;
  for (const Value* v : values) bytes += v->type().byteSize();
  return bytes;
}

}  // namespace

uint64_t KernelGroup::bytesRead() const { return bytesOf(inputs); }
uint64_t KernelGroup::bytesWritten() const { return bytesOf(outputs); }

namespace {

// Operands of the group's ops that no op of the group defines, deduplicated, in first-use order.
// Values used inside nested regions cannot occur: region ops are never in a kernel group.
std::vector<const Value*> groupInputs(const std::vector<const Op*>& ops) {
  std::unordered_set<const Op*> members(ops.begin(), ops.end());
  std::unordered_set<const Value*> seen;
  std::vector<const Value*> inputs;
  for (const Op* op : ops)
    for (const Value* v : op->operands())
      if (!members.count(v->definingOp()) && seen.insert(v).second) inputs.push_back(v);
  return inputs;
}

// What a kernel is named after: its first reduction or library op, else its last op.
std::string heroName(const std::vector<const Op*>& ops) {
  if (ops.empty()) return "copy";  // a fusion that only yields values it reads
  for (const Op* op : ops) {
    OpClass cls = op->info().cls;
    if (cls == OpClass::Reduction || cls == OpClass::Library) return std::string(op->name());
  }
  return std::string(ops.back()->name());
}

void layOut(KernelGroup& group) {
  auto rows = passes::analyzeRows(group.ops);
  // A row kernel stores full values per element and row values once per row: nothing else.
  if (rows) {
    for (const Value* out : group.outputs)
      if (out->type().shape != rows->shape.full() && !passes::isRowShape(out->type().shape, rows->shape)) {
        rows.reset();  // and stop: `rows` is gone
        break;
      }
  }
  if (rows) {
    group.kind = KernelKind::Row;
    group.rows = rows->shape.rows;
    group.inner = rows->shape.inner;
    group.rowOps = rows->rowOps;
    return;
  }
  group.kind = KernelKind::Loop;
  for (size_t k = 0; k < group.outputs.size(); ++k) {
    const Shape& shape = group.outputs[k]->type().shape;
    auto it = std::find_if(group.segments.begin(), group.segments.end(), [&](const Segment& s) { return s.shape == shape; });
    if (it == group.segments.end()) it = group.segments.insert(group.segments.end(), Segment{shape, {}});
    it->outputs.push_back(k);
  }
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
      if (isConstantData(*op)) {
        plan->constants.push_back(op->result());
        continue;
      }
      if (op->kind() == OpKind::Fusion) {
        addGroup(*plan, fusionGroup(*op));
        continue;
      }
      if (cls == OpClass::Region) {
        Step step{Step::Kind::Region, -1, RegionStep{op, {}}};
        for (size_t r = 0; r < op->numRegions(); ++r) step.region.regions.push_back(planBlock(*op->region(r)));
        plan->steps.push_back(std::move(step));
        continue;
      }
      KernelGroup group;
      group.ops = {op};
      for (size_t i = 0; i < op->numResults(); ++i) group.outputs.push_back(op->result(i));
      group.results = group.outputs;
      addGroup(*plan, std::move(group));
    }
    return plan;
  }

 private:
  static KernelGroup fusionGroup(const Op& fusion) {
    KernelGroup group;
    group.fusion = &fusion;
    const Block& body = *fusion.region(0);
    for (const auto& op : body.ops())
      if (op.get() != body.terminator()) group.ops.push_back(op.get());
    for (const Value* v : body.terminator()->operands()) group.outputs.push_back(v);
    for (size_t i = 0; i < fusion.numResults(); ++i) group.results.push_back(fusion.result(i));
    return group;
  }

  void addGroup(BlockPlan& plan, KernelGroup group) {
    group.inputs = groupInputs(group.ops);
    layOut(group);
    // Named after the layout it really has: "row", else the fusion's kind ("loop" for a fusion
    // that claims "row" without a row structure), else nothing for a single op.
    std::string kind = group.kind == KernelKind::Row ? "row" : group.fusion ? group.fusion->attr("kind").getString() : "";
    if (kind == "row" && group.kind != KernelKind::Row) kind = "loop";
    group.name = "k" + std::to_string(nextKernel_++) + "_" + (kind.empty() ? "" : kind + "_") +
                 heroName(group.ops);
    plan.steps.push_back(Step{Step::Kind::Kernel, static_cast<int>(plan.groups.size()), RegionStep{nullptr, {}}});
    plan.groups.push_back(std::move(group));
  }

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

void collectConstants(const BlockPlan& plan, std::vector<const Value*>& out) {
  out.insert(out.end(), plan.constants.begin(), plan.constants.end());
  for (const Step& step : plan.steps)
    for (const auto& region : step.region.regions) collectConstants(*region, out);
}

}  // namespace

std::vector<const KernelGroup*> BlockPlan::allGroups() const {
  std::vector<const KernelGroup*> out;
  collectGroups(*this, out);
  return out;
}

std::vector<const Value*> BlockPlan::allConstants() const {
  std::vector<const Value*> out;
  collectConstants(*this, out);
  return out;
}

std::unique_ptr<BlockPlan> planFunction(const Function& function) { return Planner().planBlock(function.body()); }

const Op* heroWithElementwiseEpilogue(const KernelGroup& group, OpKind kind, size_t inputs) {
  if (group.kind != KernelKind::Loop || group.segments.size() != 1) return nullptr;
  const Shape& shape = group.segments[0].shape;
  for (const Value* out : group.outputs)
    if (out->type().shape != shape) return nullptr;
  const Op* hero = nullptr;
  for (const Op* op : group.ops) {
    if (op->kind() == kind && !hero) hero = op;
    else if (op->info().cls != OpClass::Elementwise || op->result()->type().shape != shape) return nullptr;
  }
  if (!hero || hero->result()->type().shape != shape) return nullptr;
  for (size_t i = 0; i < inputs; ++i)
    if (std::find(group.inputs.begin(), group.inputs.end(), hero->operand(i)) == group.inputs.end()) return nullptr;
  return hero;
}

uint64_t bufferAlignment(const Value* v) {
  uint64_t align = 16;
  while (v->isBlockArgument()) {
    const Op* owner = v->parentBlock() ? v->parentBlock()->parentOp() : nullptr;
    if (!owner || owner->kind() != OpKind::Map) break;
    uint64_t slice = v->type().byteSize();
    if (slice) align = std::min<uint64_t>(align, slice & (~slice + 1));  // its lowest set bit
    v = owner->operand(v->index());
  }
  return align;
}

}  // namespace kiln::codegen
