// Dead-code elimination. Every kiln op is pure (no side effects), so an op none of whose results is
// used can go; terminators stay because they are the block's results, not computations.
#include "passes/dce.h"

namespace kiln::passes {

namespace {
bool isDead(const Op& op) {
  if (op.info().cls == OpClass::Terminator) return false;
  for (size_t i = 0; i < op.numResults(); ++i)
    if (op.result(i)->hasUses()) return false;
  // A dead `while` goes too, though it might not terminate or might exceed the iteration limit:
  // like LLVM's mustprogress, the IR promises loops whose results matter, and unused ones don't.
  return true;
}

// One backwards sweep over `block`: users come after definitions, so walking back frees a whole
// dead chain in one go. Regions are cleaned before their op is judged, since dropping dead ops
// inside a region can free values defined earlier in this block.
bool sweep(Block& block) {
  bool changed = false;
  auto& ops = block.ops();
  for (auto it = ops.end(); it != ops.begin();) {
    --it;
    Op* op = it->get();
    for (size_t r = 0; r < op->numRegions(); ++r) changed |= sweep(*op->region(r));
    if (!isDead(*op)) continue;
    // Erase through the list iterator (Block::erase searches the list), stepping off it first.
    it = ops.erase(it);
    changed = true;
  }
  return changed;
}
}  // namespace

PassResult eliminateDeadCode(Module& module, PassContext&) {
  bool changed = false;
  for (const auto& f : module.functions()) {
    // One sweep normally reaches the fixed point; the loop makes that a guarantee, not an argument.
    while (sweep(f->body())) changed = true;
  }
  return changed;
}

}  // namespace kiln::passes
