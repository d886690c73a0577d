// Helpers for passes that build replacement ops in front of the op they replace.
#include "passes/rewrite.h"

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

}  // namespace kiln::passes
