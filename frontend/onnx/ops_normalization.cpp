// Softmax and LogSoftmax (before opset 13 they flatten the input to 2-D at `axis`, normalise each
// row and restore the shape; from 13 on they normalise along `axis` alone), LayerNormalization
// and MeanVarianceNormalization.
#include "frontend/onnx/onnx_converters.h"

namespace kiln::onnx_import {

namespace {

template <OpKind K>
Status softmax(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  const Shape& shape = (*x)->type().shape;
  int rank = static_cast<int>(shape.size());
  bool coerce2d = c.opset() < 13;
  int64_t axis = c.intAttr("axis", coerce2d ? 1 : -1);
  if (axis < -rank || axis >= std::max(rank, 1)) return c.error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  if (!coerce2d) return c.result(c.op(K, {*x}, {{"axis", Attr(axis)}}));
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < rank; ++i) (i < axis ? outer : inner) *= shape[static_cast<size_t>(i)];
  Value* rows = c.reshape(*x, {outer, inner});
  return c.result(c.reshape(c.op(K, {rows}, {{"axis", Attr(int64_t{1})}}), shape));
}

// LayerNormalization (opset 17): normalise over axis..rank-1; outputs Y, Mean and InvStdDev
// (both with the normalised dims kept as 1s). Computes in f32 (stash_type 1) for narrower floats.
Status layerNorm(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  auto scale = c.input(1);
  if (!scale) return scale.error();
  const TensorType& xt = (*x)->type();
  int rank = xt.rank();
  int64_t axis = c.intAttr("axis", -1);
  if (axis < -rank || axis >= rank) return c.error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  double epsilon = c.floatAttr("epsilon", 1e-5f);
  Value* bias = nullptr;
  if (c.hasInput(2)) {
    auto b = c.input(2);
    if (!b) return b.error();
    bias = *b;
  }
  Shape normShape(xt.shape.begin() + axis, xt.shape.end());
  bool onlyY = !c.wantsOutput(1) && !c.wantsOutput(2);
  // kiln's layer_norm when it fits exactly: one output, scale and bias of shape x.shape[axis:].
  if (onlyY && (*scale)->type().shape == normShape && (!bias || bias->type().shape == normShape)) {
    Value* b = bias ? bias : c.op(OpKind::BroadcastTo, {c.scalarLike(*x, 0)}, {{"shape", Attr::ints(normShape)}});
    return c.result(c.op(OpKind::LayerNorm, {*x, *scale, b}, {{"axis", Attr(axis)}, {"epsilon", Attr(epsilon)}}));
  }
  DType stash = c.intAttr("stash_type", 1) == 1 && xt.dtype != DType::F64 ? DType::F32 : xt.dtype;
  std::vector<int64_t> axes;
  for (int64_t i = axis; i < rank; ++i) axes.push_back(i);
  AttrList keep = {{"axes", Attr::ints(axes)}, {"keepdims", Attr(true)}};
  Value* xs = c.cast(*x, stash);
  Value* mean = c.op(OpKind::ReduceMean, {xs}, keep);
  Value* d = c.op(OpKind::Sub, {xs, mean});
  Value* var = c.op(OpKind::ReduceMean, {c.op(OpKind::Mul, {d, d})}, keep);
  Value* inv = c.op(OpKind::Rsqrt, {c.op(OpKind::Add, {var, c.scalar(stash, epsilon)})});
  Value* y = c.op(OpKind::Mul, {c.cast(c.op(OpKind::Mul, {d, inv}), xt.dtype), *scale});
  if (bias) y = c.op(OpKind::Add, {y, bias});
  c.setOutput(1, mean);
  c.setOutput(2, inv);
  return c.result(y);
}

// MeanVarianceNormalization: (x - mean) / sqrt(var) over `axes` (default [0, 2, 3]), with ONNX's
// function body's epsilon of 1e-9 under the square root.
Status meanVarianceNorm(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  std::vector<int64_t> axes = c.intsAttr("axes").value_or(std::vector<int64_t>{0, 2, 3});
  AttrList keep = {{"axes", Attr::ints(axes)}, {"keepdims", Attr(true)}};
  Value* mean = c.op(OpKind::ReduceMean, {*x}, keep);
  Value* d = c.op(OpKind::Sub, {*x, mean});
  Value* var = c.op(OpKind::ReduceMean, {c.op(OpKind::Mul, {d, d})}, keep);
  Value* denom = c.op(OpKind::Sqrt, {c.op(OpKind::Add, {var, c.scalarLike(*x, 1e-9)})});
  return c.result(c.op(OpKind::Div, {d, denom}));
}

}  // namespace

void addNormalizationConverters(ConverterTable& t) {
  t["Softmax"] = softmax<OpKind::Softmax>;
  t["LogSoftmax"] = softmax<OpKind::LogSoftmax>;
  t["LayerNormalization"] = layerNorm;
  t["MeanVarianceNormalization"] = meanVarianceNorm;
}

}  // namespace kiln::onnx_import
