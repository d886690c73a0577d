// canonicalize: constant folding with the reference interpreter's kernels, then rewrite rules that
// are exact bit for bit (same values, NaNs, signed zeros and result type), applied to a fixed point.
#include "passes/canonicalize.h"

#include <cmath>
#include <cstring>
#include <string>
#include <unordered_set>

#include "ir/constant_data.h"
#include "ir/interp/interpreter.h"
#include "passes/rewrite.h"

namespace kiln::passes {

namespace {

// A folded result is a dense literal in the IR; beyond this many elements it would bloat the text
// and the compiled module more than the op it replaces.
constexpr int64_t kMaxFoldedElements = 4096;
// Splats print as one scalar and codegen emits them as immediates, but a Tensor holds every
// element, so a splat still costs its full size in compiler memory: bound it.
constexpr size_t kMaxSplatBytes = size_t{64} << 20;

const Tensor* constantValue(const Value* v) {
  const Op* def = v->definingOp();
  return def && def->kind() == OpKind::Constant ? &def->attr("value").getDense() : nullptr;
}

template <class Pred>
bool allElements(const Tensor& t, Pred pred) {
  for (int64_t i = 0; i < t.numElements(); ++i)
    if (!pred(t, i)) return false;
  return true;
}

// The element tests below are exact: getDouble widens every float without rounding.
bool isOne(const Tensor& t) {
  return isInt(t.dtype()) || isFloat(t.dtype())
             ? allElements(t, [](const Tensor& c, int64_t i) { return c.getDouble(i) == 1.0; })
             : false;
}
// Additive identity: 0 for ints, -0.0 for floats (x + -0.0 == x for every x; x + +0.0 turns -0.0
// into +0.0, so +0.0 is NOT an identity of float addition).
bool isAddIdentity(const Tensor& t) {
  if (isInt(t.dtype())) return allElements(t, [](const Tensor& c, int64_t i) { return c.getInt(i) == 0; });
  if (!isFloat(t.dtype())) return false;
  return allElements(t, [](const Tensor& c, int64_t i) { return c.getDouble(i) == 0.0 && std::signbit(c.getDouble(i)); });
}
// Subtractive identity: 0 for ints, +0.0 for floats (x - +0.0 == x + -0.0 == x for every x).
bool isSubIdentity(const Tensor& t) {
  if (isInt(t.dtype())) return allElements(t, [](const Tensor& c, int64_t i) { return c.getInt(i) == 0; });
  if (!isFloat(t.dtype())) return false;
  return allElements(t, [](const Tensor& c, int64_t i) { return c.getDouble(i) == 0.0 && !std::signbit(c.getDouble(i)); });
}

// A constant of op's result type with every element equal to element 0 of `value`, or null when
// too big to hold.
Value* splatConstant(Op& op, const Tensor& value) {
  const TensorType& type = op.result()->type();
  if (type.byteSize() > kMaxSplatBytes) return nullptr;
  Tensor splat(type);
  size_t size = dtypeSize(type.dtype);
  for (int64_t i = 0; i < splat.numElements(); ++i)
    std::memcpy(static_cast<uint8_t*>(splat.data()) + static_cast<size_t>(i) * size, value.data(), size);
  return insertConstantBefore(op, std::move(splat), op.result()->name());
}

// `x` as a replacement for op's result: itself when the types agree, broadcast_to when x is the
// smaller side of a broadcasting op (`x: f32[4] + -0.0: f32[3,4]` has type f32[3,4]); null otherwise.
Value* withResultType(Op& op, Value* x) {
  const TensorType& type = op.result()->type();
  if (x->type() == type) return x;
  if (x->type().dtype != type.dtype) return nullptr;
  return insertOpBefore(op, OpKind::BroadcastTo, {x}, {{"shape", Attr::ints(type.shape)}}, op.result()->name());
}

// ---- constant folding ----

bool foldable(const Op& op) {
  // No operands: `constant` is folded already; `iota` stays, since index arithmetic fuses into its
  // users for free while a dense literal costs memory traffic and text.
  if (op.numOperands() == 0 || op.numRegions() > 0 || op.numResults() != 1) return false;
  // all_reduce is the identity only with one replica; which it runs on is not known here.
  if (op.info().cls == OpClass::Terminator || op.info().cls == OpClass::Collective) return false;
  if (op.result()->type().numElements() > kMaxFoldedElements) return false;
  for (const Value* v : op.operands())
    if (!constantValue(v)) return false;
  return true;
}

// ---- rewrite rules: each returns the value that replaces op's result, or null ----

// x + 0 -> x, 0 + x -> x (ints); x + -0.0 -> x, -0.0 + x -> x (floats).
Value* addIdentity(Op& op) {
  const Tensor* a = constantValue(op.operand(0));
  const Tensor* b = constantValue(op.operand(1));
  if (b && isAddIdentity(*b)) return withResultType(op, op.operand(0));
  if (a && isAddIdentity(*a)) return withResultType(op, op.operand(1));
  return nullptr;
}

// x - 0 -> x (ints); x - +0.0 -> x (floats). x - x -> 0 for ints only: for floats inf - inf and
// NaN - NaN are NaN.
Value* subIdentity(Op& op) {
  const Tensor* b = constantValue(op.operand(1));
  if (b && isSubIdentity(*b)) return withResultType(op, op.operand(0));
  if (op.operand(0) == op.operand(1) && isInt(op.result()->type().dtype))
    return splatConstant(op, Tensor(TensorType{op.result()->type().dtype, {}}));
  return nullptr;
}

// x * 1 -> x, 1 * x -> x (ints and floats: multiplying by 1 is exact, -0.0 and NaN included).
Value* mulIdentity(Op& op) {
  const Tensor* a = constantValue(op.operand(0));
  const Tensor* b = constantValue(op.operand(1));
  if (b && isOne(*b)) return withResultType(op, op.operand(0));
  if (a && isOne(*a)) return withResultType(op, op.operand(1));
  return nullptr;
}

// x / 1 -> x (ints and floats).
Value* divIdentity(Op& op) {
  const Tensor* b = constantValue(op.operand(1));
  return b && isOne(*b) ? withResultType(op, op.operand(0)) : nullptr;
}

// neg(neg(x)) -> x (floats flip the sign bit twice; ints wrap, so -(-INT_MIN) == INT_MIN).
Value* negNeg(Op& op) {
  const Op* inner = op.operand(0)->definingOp();
  return inner && inner->kind() == OpKind::Neg ? inner->operand(0) : nullptr;
}

bool isIdentityPerm(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// transpose(x, id) -> x; transpose(transpose(x, p), q) -> transpose(x, r) with r[i] = p[q[i]]
// (out[i] of the outer one is axis q[i] of the inner, which is axis p[q[i]] of x), or x when r is
// the identity.
Value* transposeIdentity(Op& op) {
  std::vector<int64_t> q = op.intsAttr("perm");
  if (isIdentityPerm(q)) return op.operand(0);
  const Op* inner = op.operand(0)->definingOp();
  if (!inner || inner->kind() != OpKind::Transpose) return nullptr;
  std::vector<int64_t> p = inner->intsAttr("perm");
  std::vector<int64_t> r(q.size());
  for (size_t i = 0; i < q.size(); ++i) r[i] = p[static_cast<size_t>(q[i])];
  if (isIdentityPerm(r)) return inner->operand(0);
  return insertOpBefore(op, OpKind::Transpose, {inner->operand(0)}, {{"perm", Attr::ints(r)}}, op.result()->name());
}

// reshape(x) to x's own shape -> x; reshape(reshape(x)) -> reshape(x) (only the final shape counts).
Value* reshapeIdentity(Op& op) {
  Value* x = op.operand(0);
  if (x->type() == op.result()->type()) return x;
  const Op* inner = x->definingOp();
  if (!inner || inner->kind() != OpKind::Reshape) return nullptr;
  Value* source = inner->operand(0);
  if (source->type() == op.result()->type()) return source;
  return insertOpBefore(op, OpKind::Reshape, {source}, {{"shape", Attr::ints(op.result()->type().shape)}},
                        op.result()->name());
}

// broadcast_to(x) of x's own shape -> x.
Value* broadcastIdentity(Op& op) { return op.operand(0)->type() == op.result()->type() ? op.operand(0) : nullptr; }

// broadcast_to, reshape or transpose of a splat constant -> a splat constant of the result type,
// whatever its size (folding stops at 4096 elements; a splat prints as one scalar and codegen
// emits it as an immediate).
Value* layoutOfSplat(Op& op) {
  const Tensor* c = constantValue(op.operand(0));
  return c && c->numElements() > 0 && isSplat(*c) ? splatConstant(op, *c) : nullptr;
}

// cast(x) to x's own dtype -> x.
Value* castIdentity(Op& op) { return op.operand(0)->type() == op.result()->type() ? op.operand(0) : nullptr; }

struct Rule {
  OpKind kind;
  Value* (*apply)(Op&);
};

// The rewrite rules, tried in this order; the algebra is on each function.
constexpr Rule kRules[] = {
    {OpKind::Add, addIdentity},
    {OpKind::Sub, subIdentity},
    {OpKind::Mul, mulIdentity},
    {OpKind::Div, divIdentity},
    {OpKind::Neg, negNeg},
    {OpKind::Transpose, transposeIdentity},
    {OpKind::Transpose, layoutOfSplat},
    {OpKind::Reshape, reshapeIdentity},
    {OpKind::Reshape, layoutOfSplat},
    {OpKind::BroadcastTo, broadcastIdentity},
    {OpKind::BroadcastTo, layoutOfSplat},
    {OpKind::Cast, castIdentity},
};

class Canonicalizer {
 public:
  explicit Canonicalizer(PassContext& context) : context_(context) {}

  // One pass over `block` and its regions in program order. Replacements are built in front of
  // the op they replace, so the next sweep sees them; the replaced op itself is erased.
  bool sweep(Block& block) {
    bool changed = false;
    auto& ops = block.ops();
    for (auto it = ops.begin(); it != ops.end();) {
      Op* op = it->get();
      ++it;
      for (size_t r = 0; r < op->numRegions(); ++r) changed |= sweep(*op->region(r));
      Value* replacement = simplify(*op);
      if (!replacement) continue;
      unfoldable_.erase(op);  // its address may be reused by a new op
      replaceOp(*op, replacement);
      changed = true;
    }
    return changed;
  }

 private:
  Value* simplify(Op& op) {
    if (foldable(op) && !unfoldable_.count(&op))
      if (Value* folded = fold(op)) return folded;
    for (const Rule& rule : kRules)
      if (rule.kind == op.kind())
        if (Value* replacement = rule.apply(op)) return replacement;
    return nullptr;
  }

  Value* fold(Op& op) {
    std::vector<const Tensor*> inputs;
    for (const Value* v : op.operands()) inputs.push_back(constantValue(v));
    Expected<Tensor> value = evaluateOp(op, inputs);
    if (value) return insertConstantBefore(op, std::move(*value), op.result()->name());
    // Left in place so the error still happens at run time, at this op's location.
    unfoldable_.insert(&op);
    context_.remark(op, "not folded: evaluating it raises a run-time error (" + value.error().message() + ")");
    return nullptr;
  }

  PassContext& context_;
  std::unordered_set<const Op*> unfoldable_;  // tried once, remarked once
};

}  // namespace

PassResult canonicalize(Module& module, PassContext& context) {
  bool changed = false;
  Canonicalizer canonicalizer(context);
  for (const auto& f : module.functions()) {
    // Each rewrite erases one op and adds at most one simpler one, so this reaches a fixed point.
    while (canonicalizer.sweep(f->body())) changed = true;
  }
  return changed;
}

}  // namespace kiln::passes
