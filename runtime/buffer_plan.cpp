// BufferPlan::build: live ranges per block plan (regions first, as each is one slot of its
// parent), then greedy-by-size packing of each block's slots into its arena.
#include "runtime/buffer_plan.h"

#include <algorithm>
#include <numeric>
#include <tuple>
#include <unordered_set>

#include "codegen/library_call.h"
#include "ir/constant_data.h"

namespace kiln {

namespace {

size_t alignUp(size_t n, size_t alignment) { return (n + alignment - 1) / alignment * alignment; }

// The values `op`'s regions read (at any depth) that none of them defines: what a region step
// keeps live from outside.
std::vector<const Value*> capturedValues(const Op& op) {
  std::unordered_set<const Value*> defined;
  std::vector<const Value*> used;
  auto defineArguments = [&](const Block& block) {
    for (size_t i = 0; i < block.numArguments(); ++i) defined.insert(block.argument(i));
  };
  for (size_t r = 0; r < op.numRegions(); ++r) {
    defineArguments(*op.region(r));
    // Pre-order: an op's results and its regions' arguments are defined before any use of them.
    walkOps(*op.region(r), [&](const Op* inner) {
      for (size_t i = 0; i < inner->numResults(); ++i) defined.insert(inner->result(i));
      for (size_t k = 0; k < inner->numRegions(); ++k) defineArguments(*inner->region(k));
    });
  }
  for (size_t r = 0; r < op.numRegions(); ++r)
    walkOps(*op.region(r), [&](const Op* inner) {
      for (const Value* v : inner->operands())
        if (!defined.count(v)) used.push_back(v);
    });
  return used;
}

// Places every slot at an offset: by decreasing size, into the smallest gap between the placed
// slots live at the same time that fits, else above the highest of them. Returns the arena size.
size_t packSlots(std::vector<BufferSlot>& slots, size_t alignment) {
  std::vector<size_t> order(slots.size());
  std::iota(order.begin(), order.end(), 0);
  // Ties by first step, then slot order: the same plan every time.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (slots[a].bytes != slots[b].bytes) return slots[a].bytes > slots[b].bytes;
    return slots[a].firstStep < slots[b].firstStep;
  });
  struct Interval {
    size_t begin, end;
  };
  std::vector<size_t> placed;
  size_t arena = 0;
  for (size_t index : order) {
    BufferSlot& slot = slots[index];
    size_t size = alignUp(slot.bytes, alignment);
    slot.offset = 0;
    if (size == 0 || slot.sameBytesAs >= 0) continue;  // empty (any aligned address will do), or placed below
    std::vector<Interval> busy;
    for (size_t other : placed)
      if (slots[other].liveTogetherWith(slot))
        busy.push_back({slots[other].offset, slots[other].offset + alignUp(slots[other].bytes, alignment)});
    std::sort(busy.begin(), busy.end(), [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
    size_t top = 0, best = 0, bestGap = SIZE_MAX;
    for (const Interval& b : busy) {
      if (b.begin >= top + size && b.begin - top < bestGap) best = top, bestGap = b.begin - top;
      top = std::max(top, b.end);
    }
    slot.offset = bestGap == SIZE_MAX ? top : best;
    arena = std::max(arena, slot.offset + size);
    placed.push_back(index);
  }
  for (BufferSlot& slot : slots)
    if (slot.sameBytesAs >= 0) slot.offset = slots[static_cast<size_t>(slot.sameBytesAs)].offset;
  return arena;
}

// Library kernels that add a residual write their output over it where the residual's last reader
// is that kernel (codegen::inPlaceResidual): the output's slot takes the residual's bytes, whose
// range grows to cover the output's. Chains (one block's output, the next block's residual) end
// in one slot. `residualAt` holds, per kernel step, the residual and the output.
void shareResidualBytes(std::vector<BufferSlot>& slots, const std::unordered_map<const Value*, size_t>& slotOf,
                        const std::vector<std::tuple<int, const Value*, const Value*>>& residualAt) {
  for (const auto& [step, residual, output] : residualAt) {
    auto r = slotOf.find(residual), o = slotOf.find(output);
    if (r == slotOf.end() || o == slotOf.end()) continue;  // a parameter, constant data or a result: no slot to share
    size_t root = r->second;
    while (slots[root].sameBytesAs >= 0) root = static_cast<size_t>(slots[root].sameBytesAs);
    BufferSlot& res = slots[r->second];
    BufferSlot& out = slots[o->second];
    if (res.lastStep != step || res.bytes != out.bytes || slots[root].bytes != out.bytes) continue;
    out.sameBytesAs = static_cast<int>(root);
    slots[root].lastStep = std::max(slots[root].lastStep, out.lastStep);
  }
}

class Planner {
 public:
  Planner(size_t alignment, const std::vector<const Value*>& results)
      : alignment_(alignment), results_(results.begin(), results.end()) {}

  // Plans `plan`'s block. `ownedArguments`: block arguments the host writes (a while body's),
  // live for the whole block.
  std::unique_ptr<BlockBufferPlan> planBlock(const codegen::BlockPlan& plan,
                                             const std::vector<const Value*>& ownedArguments) {
    auto out = std::make_unique<BlockBufferPlan>();
    out->plan = &plan;
    std::unordered_map<const Value*, size_t> slotOf;
    const int end = static_cast<int>(plan.steps.size());  // the host reads the yielded values here
    auto define = [&](const Value* v, int step, int lastStep) {
      if (results_.count(v) || slotOf.count(v)) return;
      slotOf[v] = out->slots.size();
      out->slots.push_back(BufferSlot{v, nullptr, 0, v->type().byteSize(), step, lastStep});
    };
    auto read = [&](const Value* v, int step) {
      if (auto it = slotOf.find(v); it != slotOf.end())
        out->slots[it->second].lastStep = std::max(out->slots[it->second].lastStep, step);
    };
    for (const Value* v : ownedArguments) define(v, 0, end);
    std::vector<std::tuple<int, const Value*, const Value*>> residualAt;
    for (int i = 0; i < end; ++i) {
      const codegen::Step& step = plan.steps[static_cast<size_t>(i)];
      if (step.kind == codegen::Step::Kind::Kernel) {
        const codegen::KernelGroup& group = plan.groups[static_cast<size_t>(step.group)];
        for (const Value* v : group.inputs) read(v, i);
        for (const Value* v : group.results) define(v, i, i);
        if (const Value* residual = codegen::inPlaceResidual(group); residual && group.results.size() == 1)
          residualAt.emplace_back(i, residual, group.results[0]);
        continue;
      }
      const Op& op = *step.region.op;
      for (const Value* v : op.operands()) read(v, i);
      for (const Value* v : capturedValues(op)) read(v, i);
      for (size_t r = 0; r < step.region.regions.size(); ++r) {
        std::vector<const Value*> owned;
        // A while body that cannot read the carried values in place gets copies of them; a map
        // body's and a cond's arguments point at memory the host owns.
        const Block& block = *op.region(r);
        if (op.kind() == OpKind::While && r == 1 && !whileBodyReadsCarriedInPlace(op))
          for (size_t k = 0; k < block.numArguments(); ++k) owned.push_back(block.argument(k));
        std::unique_ptr<BlockBufferPlan> region = planBlock(*step.region.regions[r], owned);
        out->slots.push_back(BufferSlot{nullptr, region->plan, 0, region->arenaBytes, i, i});
        out->regions.push_back(std::move(region));
      }
      for (const Value* v : op.results()) define(v, i, i);
    }
    if (const Op* terminator = plan.block->terminator())
      for (const Value* v : terminator->operands()) read(v, end);
    shareResidualBytes(out->slots, slotOf, residualAt);
    out->arenaBytes = packSlots(out->slots, alignment_);
    return out;
  }

 private:
  size_t alignment_;
  std::unordered_set<const Value*> results_;  // the function's results: their own buffers
};

// Absolute offsets of every value of `block` and its regions, and the unshared total.
void flatten(const BlockBufferPlan& block, size_t base, size_t alignment, std::unordered_map<const Value*, size_t>& offsets,
             size_t& unshared) {
  size_t region = 0;
  for (const BufferSlot& slot : block.slots) {
    if (slot.value) {
      offsets[slot.value] = base + slot.offset;
      unshared += alignUp(slot.bytes, alignment);
      continue;
    }
    flatten(*block.regions[region++], base + slot.offset, alignment, offsets, unshared);
  }
}

}  // namespace

bool whileBodyReadsCarriedInPlace(const Op& whileOp) {
  const Block& body = *whileOp.region(1);
  const Op& yield = *body.terminator();
  for (size_t k = 0; k < yield.numOperands(); ++k)
    for (size_t j = 0; j < body.numArguments(); ++j)
      if (j != k && yield.operand(k) == body.argument(j)) return false;
  return true;
}

BufferPlan BufferPlan::build(const Function& function, const codegen::BlockPlan& plan, size_t alignment) {
  KILN_INTERNAL_CHECK(alignment > 0 && (alignment & (alignment - 1)) == 0, "buffer plan: alignment must be a power of two");
  BufferPlan out;
  out.alignment_ = alignment;
  if (const Op* ret = function.body().terminator())
    for (const Value* v : ret->operands())
      if (!v->isBlockArgument() && !isConstantData(v) &&
          std::find(out.resultValues_.begin(), out.resultValues_.end(), v) == out.resultValues_.end())
        out.resultValues_.push_back(v);
  out.root_ = Planner(alignment, out.resultValues_).planBlock(plan, {});
  flatten(*out.root_, 0, alignment, out.offsets_, out.unsharedBytes_);
  return out;
}

size_t BufferPlan::offset(const Value* v) const {
  auto it = offsets_.find(v);
  KILN_INTERNAL_CHECK(it != offsets_.end(), "buffer plan: a value without a slot was asked for its offset");
  return it->second;
}

}  // namespace kiln
