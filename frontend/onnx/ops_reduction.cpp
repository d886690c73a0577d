// Reduce* and ArgMax/ArgMin. Axes are an attribute until opset 13 (ReduceSum) or 18 (the others)
// and an optional input after; an empty or absent axes list means all axes, or nothing at all
// with noop_with_empty_axes = 1. keepdims defaults to 1, as in ONNX (kiln's default is false).
#include "frontend/onnx/onnx_converters.h"

namespace kiln::onnx_import {

namespace {

struct ReduceSpec {
  std::optional<std::vector<int64_t>> axes;  // nullopt: all axes
  bool keepdims = true;
  bool noop = false;  // empty axes with noop_with_empty_axes: the identity
};

Expected<ReduceSpec> reduceSpec(NodeContext& c) {
  ReduceSpec spec;
  spec.keepdims = c.intAttr("keepdims", 1) != 0;
  std::vector<int64_t> axes;
  if (c.hasInput(1)) {
    auto given = c.staticInts(1, "axes");
    if (!given) return given.error();
    axes = *given;
  } else if (auto attr = c.intsAttr("axes")) {
    axes = *attr;
  }
  if (!axes.empty()) spec.axes = axes;
  else if (c.intAttr("noop_with_empty_axes", 0) != 0) spec.noop = true;
  return spec;
}

AttrList reduceAttrs(const ReduceSpec& spec) {
  AttrList attrs;
  if (spec.axes) attrs.push_back({"axes", Attr::ints(*spec.axes)});
  attrs.push_back({"keepdims", Attr(spec.keepdims)});
  return attrs;
}

Value* reduce(NodeContext& c, OpKind kind, Value* x, const ReduceSpec& spec) {
  return c.op(kind, {x}, reduceAttrs(spec));
}

// The kiln reduction applied to `pre(x)`, then `post` of the result.
template <OpKind K>
Status reduceWith(NodeContext& c, Value* (*pre)(NodeContext&, Value*), Value* (*post)(NodeContext&, Value*)) {
  auto x = c.input(0);
  if (!x) return x.error();
  auto spec = reduceSpec(c);
  if (!spec) return spec.error();
  if (spec->noop) return c.result(*x);
  Value* in = pre ? pre(c, *x) : *x;
  Value* r = reduce(c, K, in, *spec);
  return c.result(post ? post(c, r) : r);
}

Value* square(NodeContext& c, Value* x) { return c.op(OpKind::Mul, {x, x}); }
Value* absolute(NodeContext& c, Value* x) { return c.op(OpKind::Abs, {x}); }
Value* sqrtOf(NodeContext& c, Value* x) { return c.op(OpKind::Sqrt, {x}); }
Value* logOf(NodeContext& c, Value* x) { return c.op(OpKind::Log, {x}); }

template <OpKind K>
Status plain(NodeContext& c) { return reduceWith<K>(c, nullptr, nullptr); }
Status reduceL1(NodeContext& c) { return reduceWith<OpKind::ReduceSum>(c, absolute, nullptr); }
Status reduceL2(NodeContext& c) { return reduceWith<OpKind::ReduceSum>(c, square, sqrtOf); }
Status reduceSumSquare(NodeContext& c) { return reduceWith<OpKind::ReduceSum>(c, square, nullptr); }
Status reduceLogSum(NodeContext& c) { return reduceWith<OpKind::ReduceSum>(c, nullptr, logOf); }

// log(sum(e^x)) = m + log(sum(e^(x - m))) with m the maximum: no overflow for large x.
Status reduceLogSumExp(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  auto spec = reduceSpec(c);
  if (!spec) return spec.error();
  if (spec->noop) return c.result(*x);
  ReduceSpec kept = *spec;
  kept.keepdims = true;
  Value* mKept = reduce(c, OpKind::ReduceMax, *x, kept);
  Value* m = reduce(c, OpKind::ReduceMax, *x, *spec);
  Value* sum = reduce(c, OpKind::ReduceSum, c.op(OpKind::Exp, {c.op(OpKind::Sub, {*x, mKept})}), *spec);
  return c.result(c.op(OpKind::Add, {m, c.op(OpKind::Log, {sum})}));
}

// ArgMax/ArgMin; select_last_index = 1 reverses the axis, so the first hit there is the last here.
template <OpKind K>
Status argReduce(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  int rank = (*x)->type().rank();
  int64_t axis = c.intAttr("axis", 0);
  if (axis < -rank || axis >= rank) return c.error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  bool keepdims = c.intAttr("keepdims", 1) != 0;
  AttrList attrs = {{"axis", Attr(axis)}, {"keepdims", Attr(keepdims)}};
  if (c.intAttr("select_last_index", 0) == 0) return c.result(c.op(K, {*x}, attrs));
  int64_t n = (*x)->type().shape[static_cast<size_t>(axis)];
  Value* reversed = c.op(OpKind::Slice, {*x}, {{"starts", Attr::ints({-1})}, {"ends", Attr::ints({INT64_MIN})},
                                                {"axes", Attr::ints({axis})}, {"steps", Attr::ints({-1})}});
  Value* idx = c.op(K, {reversed}, attrs);
  return c.result(c.op(OpKind::Sub, {c.scalar(DType::I64, static_cast<double>(n - 1)), idx}));
}

}  // namespace

void addReductionConverters(ConverterTable& t) {
  t["ReduceSum"] = plain<OpKind::ReduceSum>;
  t["ReduceMean"] = plain<OpKind::ReduceMean>;
  t["ReduceMax"] = plain<OpKind::ReduceMax>;
  t["ReduceMin"] = plain<OpKind::ReduceMin>;
  t["ReduceProd"] = plain<OpKind::ReduceProd>;
  t["ReduceL1"] = reduceL1;
  t["ReduceL2"] = reduceL2;
  t["ReduceSumSquare"] = reduceSumSquare;
  t["ReduceLogSum"] = reduceLogSum;
  t["ReduceLogSumExp"] = reduceLogSumExp;
  t["ArgMax"] = argReduce<OpKind::Argmax>;
  t["ArgMin"] = argReduce<OpKind::Argmin>;
}

}  // namespace kiln::onnx_import
