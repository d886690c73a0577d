// Helpers for passes that build replacement ops in front of the op they replace.
#include "passes/rewrite.h"

#include <unordered_map>

namespace kiln::passes {

namespace {

// Inserts `kind operands {attrs}` before `at`; `annotated` is the written result type iota needs.
Value* insertTypedOpBefore(Op& at, OpKind kind, const std::vector<Value*>& operands, AttrList attrs, std::string name,
                           const std::vector<TensorType>* annotated) {
  std::unique_ptr<Op> op = Op::create(kind, operands, {}, std::move(attrs), at.loc());
  Expected<std::vector<TensorType>> types = inferResultTypes(*op, annotated);
  KILN_INTERNAL_CHECK(types.ok(), "pass built an invalid op: " + (types.ok() ? std::string() : types.error().message()));
  op->setResultTypes(*types);
  Value* result = at.parentBlock()->insertBefore(&at, std::move(op))->result();
  result->setName(std::move(name));
  return result;
}

}  // namespace

Value* insertOpBefore(Op& at, OpKind kind, const std::vector<Value*>& operands, AttrList attrs, std::string name) {
  return insertTypedOpBefore(at, kind, operands, std::move(attrs), std::move(name), nullptr);
}

Value* insertIotaBefore(Op& at, const TensorType& type, int64_t axis, std::string name) {
  std::vector<TensorType> annotated{type};
  return insertTypedOpBefore(at, OpKind::Iota, {}, {{"axis", Attr(axis)}}, std::move(name), &annotated);
}

Value* insertConstantBefore(Op& at, Tensor value, std::string name) {
  return insertOpBefore(at, OpKind::Constant, {}, {{"value", Attr(std::move(value))}}, std::move(name));
}

void replaceOp(Op& op, Value* replacement) {
  op.result()->replaceAllUsesWith(replacement);
  op.parentBlock()->erase(&op);
}

namespace {

// Whether copyElementwiseChain copies `producer` for `at`: an elementwise op (or a reshape or
// broadcast between them) of at's block that computes from operands.
bool copiesInChain(const Op* producer, const Op& at) {
  // Producers in another block (outside the loop `at` is in) stay shared: copied into the loop
  // they would run every iteration.
  return producer && producer->parentBlock() == at.parentBlock() &&
         (producer->info().cls == OpClass::Elementwise || producer->kind() == OpKind::Reshape ||
          producer->kind() == OpKind::BroadcastTo) &&
         producer->numOperands() > 0 && producer->numResults() == 1;
}

// copyElementwiseChain, each value copied once however many ops of the chain read it.
Value* copyChain(Op& at, Value* v, int& budget, std::unordered_map<Value*, Value*>& copies) {
  if (auto it = copies.find(v); it != copies.end()) return it->second;
  Op* producer = v->definingOp();
  if (!copiesInChain(producer, at) || budget == 0) return v;
  --budget;
  std::vector<Value*> operands;
  for (Value* operand : producer->operands()) operands.push_back(copyChain(at, operand, budget, copies));
  return copies[v] = insertOpBefore(at, producer->kind(), operands, producer->attrs());
}

// The same walk, collecting the ops instead of copying them.
void collectChain(const Op& at, Value* v, int& budget, std::unordered_set<const Op*>& chain) {
  const Op* producer = v->definingOp();
  if (!copiesInChain(producer, at) || budget == 0 || chain.count(producer)) return;
  --budget;
  chain.insert(producer);
  for (Value* operand : producer->operands()) collectChain(at, operand, budget, chain);
}

}  // namespace

Value* copyElementwiseChain(Op& at, Value* v, int& budget) {
  std::unordered_map<Value*, Value*> copies;
  return copyChain(at, v, budget, copies);
}

std::unordered_set<const Op*> elementwiseChainOf(const Op& at, Value* v, int budget) {
  std::unordered_set<const Op*> chain;
  collectChain(at, v, budget, chain);
  return chain;
}

void eraseIfUnused(Value* v) {
  Op* op = v->definingOp();
  if (!op || op->numRegions() > 0 || op->info().cls == OpClass::Terminator) return;
  for (Value* r : op->results())
    if (r->hasUses()) return;
  std::vector<Value*> operands(op->operands().begin(), op->operands().end());
  op->parentBlock()->erase(op);
  for (Value* operand : operands) eraseIfUnused(operand);
}

}  // namespace kiln::passes
