// Which results may be computed into donated inputs' buffers (donation.h).
#include "runtime/donation.h"

#include <unordered_map>
#include <unordered_set>

namespace kiln {

namespace {

// The op of the function body that contains `op` (itself when it is at top level).
const Op* topLevelOp(const Op* op, const Block& body) {
  while (op->parentBlock() != &body) op = op->parentBlock()->parentOp();
  return op;
}

// Every op of `group` that depends on `param` is elementwise with the param's shape.
bool readsElementForElement(const codegen::KernelGroup& group, const Value* param) {
  std::unordered_set<const Value*> derived = {param};
  for (const Op* op : group.ops) {
    bool depends = false;
    for (const Value* v : op->operands()) depends |= derived.count(v) > 0;
    if (!depends) continue;
    if (opInfo(op->kind()).cls != OpClass::Elementwise) return false;
    for (const Value* r : op->results()) {
      if (r->type().shape != param->type().shape) return false;
      derived.insert(r);
    }
  }
  return true;
}

}  // namespace

std::vector<int> donatedResultBuffers(const Function& function, const codegen::BlockPlan& plan,
                                      const std::vector<bool>& donated) {
  const Block& body = function.body();
  const Op& ret = *body.terminator();
  std::vector<int> alias(ret.numOperands(), -1);

  // The step that computes each top-level op, and the kernel group each result comes from.
  std::unordered_map<const Op*, size_t> stepOf;
  std::unordered_map<const Value*, std::pair<size_t, const codegen::KernelGroup*>> producer;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const codegen::Step& step = plan.steps[s];
    if (step.kind == codegen::Step::Kind::Region) {
      stepOf[step.region.op] = s;
      continue;
    }
    const codegen::KernelGroup& group = plan.groups[static_cast<size_t>(step.group)];
    if (group.fusion) stepOf[group.fusion] = s;
    for (const Op* op : group.ops) stepOf[op] = s;
    for (const Value* r : group.results) producer[r] = {s, &group};
  }

  std::unordered_set<const Value*> returned(ret.operands().begin(), ret.operands().end());
  std::vector<Value*> params = function.params();
  std::vector<bool> taken(params.size(), false);
  for (size_t k = 0; k < alias.size(); ++k) {
    const Value* result = ret.operand(k);
    bool repeated = false;
    for (size_t j = 0; j < k; ++j) repeated |= ret.operand(j) == result;
    if (repeated) continue;  // shares the first result's buffer (below)
    auto made = producer.find(result);
    if (made == producer.end()) continue;
    auto [step, group] = made->second;
    if (group->kind != codegen::KernelKind::Loop) continue;
    for (size_t i = 0; i < params.size(); ++i) {
      const Value* p = params[i];
      if (i >= donated.size() || !donated[i] || taken[i] || returned.count(p) || p->type() != result->type()) continue;
      bool readLater = false;
      for (const Use& use : p->uses()) {
        if (use.user == &ret) continue;
        auto at = stepOf.find(topLevelOp(use.user, body));
        readLater |= at == stepOf.end() || at->second > step;
      }
      if (readLater || !readsElementForElement(*group, p)) continue;
      alias[k] = static_cast<int>(i);
      taken[i] = true;
      break;
    }
  }
  // A value returned twice is one buffer: every result naming it shares the parameter.
  for (size_t k = 0; k < alias.size(); ++k)
    for (size_t j = 0; j < k; ++j)
      if (ret.operand(j) == ret.operand(k) && alias[j] >= 0) alias[k] = alias[j];
  return alias;
}

}  // namespace kiln
