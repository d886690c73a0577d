// The batching rules of the vectorize pass, one per BatchRule kind of the op table. Body value v
// of shape s becomes a value of shape [B] ++ s outside the map; each rule rewrites one op so that
// slice i of its batched result is what the body computes for element i.
#include "passes/vectorize_rules.h"

#include <fmt/format.h>

#include <numeric>

#include "ir/shape_rules.h"

// Declares `Value* name` from an Expected<Value*>, or returns its error.
#define VECTORIZE_TRY(name, expr)          \
  auto name##Or = (expr);                  \
  if (!name##Or) return name##Or.error(); \
  Value* name = *name##Or

namespace kiln::passes::vectorize {

namespace {
std::vector<int64_t> shifted(const std::vector<int>& axes) {
  std::vector<int64_t> out;
  for (int a : axes) out.push_back(a + 1);
  return out;
}

// A possibly negative axis of a verified op, resolved against `rank`.
int axisIn(int64_t axis, int rank) { return normalizeAxis(axis, rank).value_or(0); }

Shape ones(size_t n) { return Shape(n, 1); }
Shape concatShapes(Shape a, const Shape& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
}  // namespace

bool BatchedSet::usedBy(const Op& op) const {
  for (Value* v : op.operands())
    if (contains(v)) return true;
  bool used = false;
  for (size_t r = 0; r < op.numRegions() && !used; ++r)
    walkOps(*op.region(r), [&](const Op* inner) {
      for (Value* v : inner->operands()) used |= contains(v);
    });
  return used;
}

std::optional<std::string> whyNoRule(const Op& op, const BatchedSet& batched) {
  auto operandBatched = [&](size_t i) { return batched.contains(op.operand(i)); };
  switch (op.info().batch) {
    case BatchRule::Elementwise:
    case BatchRule::Reduce:
    case BatchRule::Matmul:
    case BatchRule::Reshape:
    case BatchRule::Transpose:
    case BatchRule::BroadcastTo:
    case BatchRule::Concat:
    case BatchRule::Slice:
    case BatchRule::Pad:
    case BatchRule::NeverBatched:
    case BatchRule::Terminator: return std::nullopt;
    case BatchRule::AxisAttr:
      if (op.kind() == OpKind::LayerNorm && (operandBatched(1) || operandBatched(2)))
        return "a scale or bias that depends on the mapped element (only x may)";
      return std::nullopt;
    case BatchRule::Gather:
      if (operandBatched(0) && operandBatched(1)) return "both x and indices depending on the mapped element";
      return std::nullopt;
    case BatchRule::MergeIntoBatch:
      for (size_t i = 1; i < op.numOperands(); ++i)
        if (operandBatched(i))
          return op.kind() == OpKind::Conv2d ? "a weight that depends on the mapped element (only x may)"
                                             : "scale, bias, mean or var depending on the mapped element (only x may)";
      return std::nullopt;
    case BatchRule::NestedMap: return "an inner map that stays a loop and depends on the mapped element";
    case BatchRule::None:
      if (op.kind() == OpKind::While)
        return "loop-carried values or a condition that depend on the mapped element (its trip count may differ "
               "per element)";
      if (op.kind() == OpKind::SoftmaxCrossEntropy)
        return "logits or labels that depend on the mapped element (it averages its rows into one scalar; there is "
               "no batched form)";
      return "an operand that depends on the mapped element";
  }
  return "an operand that depends on the mapped element";
}

Rewriter::Rewriter(Op& map)
    : map_(map), outer_(*map.parentBlock()), batch_(map.operand(0)->type().shape.at(0)) {}

Value* Rewriter::lookup(Value* v) const {
  auto it = batched_.find(v);
  return it == batched_.end() ? v : it->second;
}

Shape Rewriter::batchedShape(const Shape& s) const { return concatShapes({batch_}, s); }

Expected<Value*> Rewriter::place(std::unique_ptr<Op> op) {
  auto types = inferResultTypes(*op);
  if (!types)
    return Error(fmt::format("internal error: vectorize built an invalid op (a bug in kiln): {}", types.error().message()),
                 op->loc());
  op->setResultTypes(*types);
  Op* placed = outer_.insertBefore(&map_, std::move(op));
  emitted_.insert(placed->result(0));
  return placed->result(0);
}

Expected<Value*> Rewriter::emit(OpKind kind, const std::vector<Value*>& operands, AttrList attrs, const SourceLoc& loc) {
  return place(Op::create(kind, operands, {}, std::move(attrs), loc));
}

Expected<Value*> Rewriter::reshape(Value* v, const Shape& shape, const SourceLoc& loc) {
  if (v->type().shape == shape) return v;
  return emit(OpKind::Reshape, {v}, {{"shape", Attr::ints(shape)}}, loc);
}

Expected<Value*> Rewriter::broadcastToBatch(Value* v, const SourceLoc& loc) {
  return emit(OpKind::BroadcastTo, {v}, {{"shape", Attr::ints(batchedShape(v->type().shape))}}, loc);
}

Expected<Value*> Rewriter::alignedTo(Value* v, int rank, const SourceLoc& loc) {
  if (!isBatched(v)) return v;
  const Shape& s = v->type().shape;
  return reshape(lookup(v), concatShapes(batchedShape(ones(rank - s.size())), s), loc);
}

Expected<Value*> Rewriter::batch(const Op& op) {
  const Shape& resultShape = op.result(0)->type().shape;
  switch (op.info().batch) {
    case BatchRule::Elementwise: return elementwise(op);
    case BatchRule::Reduce: return reduce(op);
    case BatchRule::AxisAttr: return axisAttr(op);
    case BatchRule::Matmul: return matmul(op);
    case BatchRule::Reshape: {
      auto n = Op::create(op.kind(), {lookup(op.operand(0))}, {}, op.attrs(), op.loc());
      n->setAttr("shape", Attr::ints(batchedShape(resultShape)));  // the inferred shape: no -1 left
      return place(std::move(n));
    }
    case BatchRule::Transpose: {
      std::vector<int64_t> perm = {0};
      for (int64_t p : op.intsAttr("perm")) perm.push_back(axisIn(p, op.operand(0)->type().rank()) + 1);
      auto n = Op::create(op.kind(), {lookup(op.operand(0))}, {}, op.attrs(), op.loc());
      n->setAttr("perm", Attr::ints(perm));
      return place(std::move(n));
    }
    case BatchRule::BroadcastTo: {
      VECTORIZE_TRY(x, alignedTo(op.operand(0), static_cast<int>(resultShape.size()), op.loc()));
      auto n = Op::create(op.kind(), {x}, {}, op.attrs(), op.loc());
      n->setAttr("shape", Attr::ints(batchedShape(resultShape)));
      return place(std::move(n));
    }
    case BatchRule::Concat: return concat(op);
    case BatchRule::Slice: return slice(op);
    case BatchRule::Gather: return gather(op);
    case BatchRule::Pad: return pad(op);
    case BatchRule::MergeIntoBatch: return mergeIntoBatch(op);
    case BatchRule::NeverBatched:
    case BatchRule::NestedMap:
    case BatchRule::None:
    case BatchRule::Terminator: break;
  }
  return Error(fmt::format("internal error: vectorize has no batched form for {} (a bug in kiln)", op.name()), op.loc());
}

// Unary, binary, select, cast, all_reduce: the same op; a batched operand of lower rank than the
// result is reshaped to [B, 1, .., 1, s] so NumPy broadcasting pairs its dims as in the body.
Expected<Value*> Rewriter::elementwise(const Op& op) {
  int rank = op.result(0)->type().rank();
  std::vector<Value*> operands;
  for (Value* v : op.operands()) {
    VECTORIZE_TRY(x, alignedTo(v, rank, op.loc()));
    operands.push_back(x);
  }
  return place(Op::create(op.kind(), operands, {}, op.attrs(), op.loc()));
}

// reduce_*: the element's axes, shifted past B; no `axes` (all axes) means all element axes.
Expected<Value*> Rewriter::reduce(const Op& op) {
  int rank = op.operand(0)->type().rank();
  const Attr* axesAttr = op.findAttr("axes");
  auto axes = reductionAxes(axesAttr ? axesAttr->getIntList() : std::nullopt, rank);
  if (!axes) return axes.error();
  auto n = Op::create(op.kind(), {lookup(op.operand(0))}, {}, op.attrs(), op.loc());
  n->setAttr("axes", Attr::ints(shifted(*axes)));
  return place(std::move(n));
}

// argmax/argmin, softmax/log_softmax, layer_norm (batched x; scale and bias cover x.shape[axis:],
// which the shift leaves alone): `axis` resolved against the element and shifted past B.
Expected<Value*> Rewriter::axisAttr(const Op& op) {
  int axis = axisIn(op.intAttr("axis"), op.operand(0)->type().rank());
  std::vector<Value*> operands;
  for (Value* v : op.operands()) operands.push_back(lookup(v));
  auto n = Op::create(op.kind(), operands, {}, op.attrs(), op.loc());
  n->setAttr("axis", Attr(int64_t{axis + 1}));
  return place(std::move(n));
}

// NumPy matmul. Where B already lines up as a leading batch dim (a batched matrix or stack times
// an unbatched one of no higher rank, and the mirror image) one matmul does it. Otherwise both
// sides get their 1-D promotion made explicit ([K] -> [1,K] for a, [K,1] for b), a batched side
// is reshaped to [B, 1, .., 1, m] so B sits before every element batch dim, and the result
// ([B, batch.., M', N']) is reshaped to [B] ++ the element result.
Expected<Value*> Rewriter::matmul(const Op& op) {
  Value* a = op.operand(0);
  Value* b = op.operand(1);
  bool ab = isBatched(a), bb = isBatched(b);
  const Shape& sa = a->type().shape;
  const Shape& sb = b->type().shape;
  size_t ra = sa.size(), rb = sb.size();
  bool direct = ab && !bb   ? (ra >= 2 ? rb <= ra : rb <= 2)
                : !ab && bb ? (rb >= 2 && ra <= rb)
                            : (ra >= 2 && ra == rb);
  if (direct) return place(Op::create(OpKind::Matmul, {lookup(a), lookup(b)}, {}, {}, op.loc()));

  Shape a2 = ra == 1 ? Shape{1, sa[0]} : sa;
  Shape b2 = rb == 1 ? Shape{sb[0], 1} : sb;
  size_t batchDims = std::max(a2.size(), b2.size()) - 2;
  auto matrixForm = [&](Value* v, const Shape& m) -> Expected<Value*> {
    if (!isBatched(v)) return reshape(v, m, op.loc());
    return reshape(lookup(v), concatShapes(batchedShape(ones(batchDims + 2 - m.size())), m), op.loc());
  };
  VECTORIZE_TRY(a3, matrixForm(a, a2));
  VECTORIZE_TRY(b3, matrixForm(b, b2));
  VECTORIZE_TRY(c, emit(OpKind::Matmul, {a3, b3}, {}, op.loc()));
  return reshape(c, batchedShape(op.result(0)->type().shape), op.loc());
}

// concat: axis + 1; unbatched operands are the same for every element, so broadcast to [B, ...].
Expected<Value*> Rewriter::concat(const Op& op) {
  std::vector<Value*> operands;
  for (Value* v : op.operands()) {
    if (isBatched(v)) {
      operands.push_back(lookup(v));
      continue;
    }
    VECTORIZE_TRY(x, broadcastToBatch(v, op.loc()));
    operands.push_back(x);
  }
  auto n = Op::create(op.kind(), operands, {}, op.attrs(), op.loc());
  n->setAttr("axis", Attr(int64_t{axisIn(op.intAttr("axis"), op.result(0)->type().rank()) + 1}));
  return place(std::move(n));
}

// slice: the sliced axes (0..n-1 when not given), resolved and shifted past B, which is taken whole.
Expected<Value*> Rewriter::slice(const Op& op) {
  int rank = op.operand(0)->type().rank();
  std::vector<int64_t> axes;
  if (op.findAttr("axes")) {
    for (int64_t a : op.intsAttr("axes")) axes.push_back(axisIn(a, rank) + 1);
  } else {
    for (size_t i = 0; i < op.intsAttr("starts").size(); ++i) axes.push_back(static_cast<int64_t>(i) + 1);
  }
  auto n = Op::create(op.kind(), {lookup(op.operand(0))}, {}, op.attrs(), op.loc());
  n->setAttr("axes", Attr::ints(axes));
  return place(std::move(n));
}

// gather: batched x gathers along axis + 1. Batched indices [B, i..] on unbatched x give
// x[:axis] ++ [B, i..] ++ x[axis+1:], so B comes out at `axis` and a transpose brings it first.
Expected<Value*> Rewriter::gather(const Op& op) {
  Value* x = op.operand(0);
  int axis = axisIn(op.intAttr("axis"), x->type().rank());
  if (isBatched(x)) {
    auto n = Op::create(op.kind(), {lookup(x), op.operand(1)}, {}, op.attrs(), op.loc());
    n->setAttr("axis", Attr(int64_t{axis + 1}));
    return place(std::move(n));
  }
  VECTORIZE_TRY(g, place(Op::create(op.kind(), {x, lookup(op.operand(1))}, {}, op.attrs(), op.loc())));
  if (axis == 0) return g;
  std::vector<int64_t> perm = {axis};
  for (int i = 0; i < g->type().rank(); ++i)
    if (i != axis) perm.push_back(i);
  return emit(OpKind::Transpose, {g}, {{"perm", Attr::ints(perm)}}, op.loc());
}

// pad: no padding of B; pads are [begin.., end..], so a 0 goes before each half.
Expected<Value*> Rewriter::pad(const Op& op) {
  std::vector<int64_t> pads = op.intsAttr("pads");
  size_t rank = pads.size() / 2;
  std::vector<int64_t> out = {0};
  out.insert(out.end(), pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(rank));
  out.push_back(0);
  out.insert(out.end(), pads.begin() + static_cast<std::ptrdiff_t>(rank), pads.end());
  auto n = Op::create(op.kind(), {lookup(op.operand(0))}, {}, op.attrs(), op.loc());
  n->setAttr("pads", Attr::ints(out));
  return place(std::move(n));
}

// conv2d, pooling, batch_norm work on [N, C, ...] with N independent: fold B into N
// ([B,N,...] -> [B*N,...]), run the op, and split the result back into [B,N,...].
Expected<Value*> Rewriter::mergeIntoBatch(const Op& op) {
  const Shape& s = op.operand(0)->type().shape;
  Shape merged = {batch_ * s.at(0)};
  merged.insert(merged.end(), s.begin() + 1, s.end());
  VECTORIZE_TRY(x, reshape(lookup(op.operand(0)), merged, op.loc()));
  std::vector<Value*> operands = op.operands();
  operands[0] = x;
  VECTORIZE_TRY(y, place(Op::create(op.kind(), operands, {}, op.attrs(), op.loc())));
  return reshape(y, batchedShape(op.result(0)->type().shape), op.loc());
}

}  // namespace kiln::passes::vectorize
