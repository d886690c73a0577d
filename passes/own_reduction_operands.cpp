// own-reduction-operands: see the header.
#include "passes/own_reduction_operands.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

#include "passes/fusion_rules.h"
#include "passes/rewrite.h"
#include "passes/row_structure.h"

namespace kiln::passes {

namespace {

// The longest chain a reduction copies (as split-reductions' first stages).
constexpr int kMaxChain = 16;
// On the CPU, a chain with a transcendental op (exp, sigmoid) is copied only where the shared value
// is at least this large: smaller ones stay in the caches, where computing them twice costs more
// than storing and reading them (EfficientNet-B0's SiLU before its squeeze-and-excite pools, 1.6
// MB at batch 1), larger ones go out to memory and back (softmax over the channels of
// f32[8,21,128,128], 11 MB: 1.71 -> 1.46 ms with exp computed twice). A GPU computes an exp in a
// few instructions of its special-function units, where its memory is the bottleneck: any size.
constexpr int64_t kMinExpensiveBytesOnCpu = int64_t{8} << 20;

bool isReduction(OpKind k) {
  return k == OpKind::ReduceSum || k == OpKind::ReduceMean || k == OpKind::ReduceMax || k == OpKind::ReduceMin ||
         k == OpKind::ReduceProd;
}

// Whether the chain computing `reduction`'s operand is read outside it, only by elementwise ops,
// and is worth computing twice: cheap, or shared values too large to stay in the caches.
bool worthOwning(const Op& reduction, const std::unordered_set<const Op*>& chain, PassTarget target) {
  bool shared = false, expensive = false;
  int64_t sharedBytes = 0;
  for (const Op* op : chain) {
    expensive |= isExpensive(*op);
    for (const Use& use : op->result()->uses()) {
      if (use.user == &reduction || chain.count(use.user)) continue;
      if (use.user->info().cls != OpClass::Elementwise) return false;
      shared = true;
      sharedBytes = std::max(sharedBytes, static_cast<int64_t>(op->result()->type().byteSize()));
    }
  }
  return shared && (!expensive || target == PassTarget::Gpu || sharedBytes >= kMinExpensiveBytesOnCpu);
}

}  // namespace

PassResult ownReductionOperands(Module& module, PassContext& context) {
  std::vector<Op*> reductions;
  for (const auto& f : module.functions())
    walkOps(f->body(), [&](Op* op) {
      if (isReduction(op->kind()) && !reducesTrailingDims(*op)) reductions.push_back(op);
    });
  bool changed = false;
  for (Op* reduction : reductions) {
    Value* operand = reduction->operand(0);
    std::unordered_set<const Op*> chain = elementwiseChainOf(*reduction, operand, kMaxChain);
    if (chain.empty() || !worthOwning(*reduction, chain, context.target())) continue;
    int budget = kMaxChain;
    reduction->setOperand(0, copyElementwiseChain(*reduction, operand, budget));
    eraseIfUnused(operand);
    changed = true;
  }
  return changed;
}

}  // namespace kiln::passes
