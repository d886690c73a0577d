// GraphBuilder: appends ops, infers their types and defers the first error to finish().
#include "ir/builder.h"

#include "ir/verifier.h"

namespace kiln {

GraphBuilder::GraphBuilder(Module& module, std::string name)
    : function_(module.addFunction(std::move(name))),
      block_(&function_->body()),
      error_(std::make_shared<std::optional<Error>>()) {}

GraphBuilder::GraphBuilder(Function& function)
    : function_(&function), block_(&function.body()), error_(std::make_shared<std::optional<Error>>()) {
  KILN_INTERNAL_CHECK(block_->terminator() == nullptr, "GraphBuilder(Function&): the body still has its return");
}

bool GraphBuilder::fail(Error e) {
  if (!*error_) *error_ = std::move(e);
  return false;
}

bool GraphBuilder::anyNull(const std::vector<Value*>& values) const {
  for (Value* v : values)
    if (!v) return true;
  return false;
}

Value* GraphBuilder::param(TensorType type, std::string name) {
  KILN_INTERNAL_CHECK(function_ && block_->empty(), "params must come before ops, in the function's own builder");
  return block_->addArgument(std::move(type), std::move(name));
}

std::optional<int64_t> GraphBuilder::writtenDevice(const Value* v) {
  const Op* def = v ? v->definingOp() : nullptr;
  if (!def) return std::nullopt;
  if (def->kind() == OpKind::Transfer) return def->intAttr("to");
  const Attr* d = def->findAttr(kDeviceAttr);
  return d ? std::optional<int64_t>(d->getInt()) : std::nullopt;
}

std::vector<Value*> GraphBuilder::append(std::unique_ptr<Op> op, const std::vector<TensorType>* annotated) {
  auto types = inferResultTypes(*op, annotated);
  if (!types) {
    fail(types.error());
    return {};
  }
  op->setResultTypes(*types);
  if (loc_.known()) op->setLoc(loc_);
  if (device_ && op->kind() != OpKind::Transfer && !op->findAttr(kDeviceAttr)) op->setAttr(kDeviceAttr, Attr(*device_));
  return block_->append(std::move(op))->results();
}

std::vector<Value*> GraphBuilder::ops(OpKind kind, const std::vector<Value*>& operands, AttrList attrs) {
  if (anyNull(operands) || *error_) return {};
  if (opInfo(kind).numRegions > 0 || opInfo(kind).cls == OpClass::Terminator) {
    fail(Error(std::string(opInfo(kind).name) + ": build it with map(), whileLoop() or finish()"));
    return {};
  }
  return append(Op::create(kind, operands, {}, std::move(attrs)), nullptr);
}

Value* GraphBuilder::op(OpKind kind, const std::vector<Value*>& operands, AttrList attrs) {
  auto results = ops(kind, operands, std::move(attrs));
  if (results.empty()) return nullptr;
  if (results.size() != 1) {
    fail(Error(std::string(opInfo(kind).name) + ": has " + std::to_string(results.size()) + " results; use ops()"));
    return nullptr;
  }
  return results[0];
}

Value* GraphBuilder::constant(Tensor value) {
  if (*error_) return nullptr;
  auto results = append(Op::create(OpKind::Constant, {}, {}, {{"value", Attr(std::move(value))}}), nullptr);
  return results.empty() ? nullptr : results[0];
}

Value* GraphBuilder::iota(TensorType type, int64_t axis) {
  if (*error_) return nullptr;
  std::vector<TensorType> annotated = {type};
  auto results = append(Op::create(OpKind::Iota, {}, {}, {{"axis", Attr(axis)}}), &annotated);
  return results.empty() ? nullptr : results[0];
}

Status GraphBuilder::buildRegion(Block& region, const std::vector<TensorType>& paramTypes, const RegionFn& fn) {
  GraphBuilder inner(region, error_);
  std::vector<Value*> params;
  for (const TensorType& t : paramTypes) params.push_back(region.addArgument(t));
  std::vector<Value*> yielded = fn(inner, params);
  if (*error_) return **error_;
  if (anyNull(yielded)) return Error("region yielded a null value");
  region.append(Op::create(OpKind::Yield, yielded));
  return {};
}

std::vector<Value*> GraphBuilder::map(const std::vector<Value*>& xs, const RegionFn& body) {
  if (anyNull(xs) || *error_) return {};
  auto op = Op::create(OpKind::Map, xs);
  std::vector<TensorType> sliced;
  for (Value* x : xs) {
    if (x->type().rank() == 0) {
      fail(Error("map: operands are sliced along axis 0, so they need rank >= 1, got " + x->type().str()));
      return {};
    }
    sliced.push_back({x->type().dtype, Shape(x->type().shape.begin() + 1, x->type().shape.end())});
  }
  if (Status s = buildRegion(*op->addRegion(), sliced, body); !s) return fail(s.error()), std::vector<Value*>{};
  return append(std::move(op), nullptr);
}

std::vector<Value*> GraphBuilder::whileLoop(const std::vector<Value*>& inits, const RegionFn& cond, const RegionFn& body) {
  if (anyNull(inits) || *error_) return {};
  auto op = Op::create(OpKind::While, inits);
  std::vector<TensorType> types = op->operandTypes();
  if (Status s = buildRegion(*op->addRegion(), types, cond); !s) return fail(s.error()), std::vector<Value*>{};
  if (Status s = buildRegion(*op->addRegion(), types, body); !s) return fail(s.error()), std::vector<Value*>{};
  return append(std::move(op), nullptr);
}

Expected<Function*> GraphBuilder::finish(const std::vector<Value*>& results) {
  KILN_INTERNAL_CHECK(function_ != nullptr, "finish() is for the function's own builder, not a region's");
  if (*error_) return **error_;
  if (anyNull(results)) return Error("finish: a result is null");
  std::vector<TensorType> types;
  for (Value* r : results) types.push_back(r->type());
  block_->append(Op::create(OpKind::Return, results));
  function_->setResultTypes(types);
  KILN_TRY(verifyFunction(*function_));
  return function_;
}

}  // namespace kiln
