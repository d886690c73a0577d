// Helpers for passes that build replacement ops in front of the op they replace.
#include "passes/rewrite.h"

namespace kiln::passes {

Value* insertOpBefore(Op& at, OpKind kind, const std::vector<Value*>& operands, AttrList attrs, std::string name) {
  std::unique_ptr<Op> op = Op::create(kind, operands, {}, std::move(attrs), at.loc());
  Expected<std::vector<TensorType>> types = inferResultTypes(*op);
  KILN_INTERNAL_CHECK(types.ok(), "pass built an invalid op: " + (types.ok() ? std::string() : types.error().message()));
  op->setResultTypes(*types);
  Value* result = at.parentBlock()->insertBefore(&at, std::move(op))->result();
  result->setName(std::move(name));
  return result;
}

Value* insertConstantBefore(Op& at, Tensor value, std::string name) {
  return insertOpBefore(at, OpKind::Constant, {}, {{"value", Attr(std::move(value))}}, std::move(name));
}

void replaceOp(Op& op, Value* replacement) {
  op.result()->replaceAllUsesWith(replacement);
  op.parentBlock()->erase(&op);
}

}  // namespace kiln::passes
