// ONNX ops that make or retype tensors: Constant, ConstantOfShape, Shape and Size (constants,
// since kiln's shapes are static), Cast, CastLike, Range (computed at compile time) and Dropout
// (the identity at inference).
#include <cmath>

#include "frontend/onnx/onnx_converters.h"
#include "frontend/onnx/onnx_tensor.h"

namespace kiln::onnx_import {

namespace {

Tensor vectorTensor(DType t, const std::vector<double>& values) {
  Tensor out(TensorType{t, {static_cast<int64_t>(values.size())}});
  for (size_t i = 0; i < values.size(); ++i) out.setDouble(static_cast<int64_t>(i), values[i]);
  return out;
}

Tensor intVector(const std::vector<int64_t>& values) {
  Tensor out(TensorType{DType::I64, {static_cast<int64_t>(values.size())}});
  for (size_t i = 0; i < values.size(); ++i) out.setInt(static_cast<int64_t>(i), values[i]);
  return out;
}

Status constant(NodeContext& c) {
  if (c.hasAttr("value")) {
    auto t = c.tensorAttr("value");
    if (!t) return t.error();
    return c.result(c.b().constant(std::move(*t)));
  }
  if (c.hasAttr("value_float")) return c.result(c.scalar(DType::F32, c.floatAttr("value_float", 0)));
  if (c.hasAttr("value_int")) return c.result(c.scalar(DType::I64, static_cast<double>(c.intAttr("value_int", 0))));
  if (auto fs = c.floatsAttr("value_floats")) return c.result(c.b().constant(vectorTensor(DType::F32, {fs->begin(), fs->end()})));
  if (auto is = c.intsAttr("value_ints")) return c.result(c.b().constant(intVector(*is)));
  if (c.hasAttr("sparse_value")) return c.unsupported("sparse_value");
  if (c.hasAttr("value_string") || c.hasAttr("value_strings")) return c.unsupported("string constants");
  return c.error("has no value attribute");
}

// ConstantOfShape: the shape input (known at compile time) filled with `value` (default f32 0).
Status constantOfShape(NodeContext& c) {
  auto shape = c.staticInts(0, "shape");
  if (!shape) return shape.error();
  for (int64_t d : *shape)
    if (d < 0) return c.error("negative dimension " + std::to_string(d) + " in the shape");
  Tensor fill = Tensor::scalar(DType::F32, 0.0);
  if (c.hasAttr("value")) {
    auto t = c.tensorAttr("value");
    if (!t) return t.error();
    if (t->numElements() != 1) return c.error("value must hold one element, got " + t->type().str());
    fill = std::move(*t);
  }
  Value* scalar = c.b().constant(Tensor(fill));
  if (fill.rank() != 0) scalar = c.reshape(scalar, {});
  return c.result(c.op(OpKind::BroadcastTo, {scalar}, {{"shape", Attr::ints(*shape)}}));
}

// Shape (with opset 15's start/end, clamped to the rank) and Size: constants of the static type.
Status shape(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  const Shape& s = (*x)->type().shape;
  int64_t rank = static_cast<int64_t>(s.size());
  auto clampIndex = [&](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + rank : i, 0, rank); };
  int64_t start = clampIndex(c.intAttr("start", 0)), end = clampIndex(c.intAttr("end", rank));
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i) dims.push_back(s[static_cast<size_t>(i)]);
  return c.result(c.b().constant(intVector(dims)));
}

Status size(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  Tensor n(TensorType{DType::I64, {}});
  n.setInt(0, (*x)->type().numElements());
  return c.result(c.b().constant(std::move(n)));
}

Status cast(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  int64_t to = c.intAttr("to", 0);
  auto dtype = dtypeFromOnnx(static_cast<int32_t>(to));
  if (!dtype) return c.unsupported("casts to " + onnxDTypeName(static_cast<int32_t>(to)));
  return c.result(c.cast(*x, *dtype));
}

Status castLike(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  auto like = c.input(1);
  if (!like) return like.error();
  return c.result(c.cast(*x, (*like)->type().dtype));
}

// Range(start, limit, delta): max(ceil((limit - start) / delta), 0) values start + i delta.
Status range(NodeContext& c) {
  Tensor bounds[3];
  const char* names[] = {"start", "limit", "delta"};
  for (size_t i = 0; i < 3; ++i) {
    auto t = c.staticInput(i, names[i]);
    if (!t) return t.error();
    if (t->numElements() != 1) return c.error(std::string(names[i]) + " must be a scalar, got " + t->type().str());
    bounds[i] = std::move(*t);
  }
  DType dtype = bounds[0].dtype();
  Tensor out;
  if (isInt(dtype)) {
    int64_t start = bounds[0].getInt(0), limit = bounds[1].getInt(0), delta = bounds[2].getInt(0);
    if (delta == 0) return c.error("delta must not be 0");
    int64_t n = std::max<int64_t>(0, (limit - start + delta + (delta > 0 ? -1 : 1)) / delta);
    out = Tensor(TensorType{dtype, {n}});
    for (int64_t i = 0; i < n; ++i) out.setInt(i, start + i * delta);
  } else {
    double start = bounds[0].getDouble(0), limit = bounds[1].getDouble(0), delta = bounds[2].getDouble(0);
    if (delta == 0) return c.error("delta must not be 0");
    double count = std::ceil((limit - start) / delta);
    if (!(count < static_cast<double>(kMaxElements))) return c.error("produces too many elements");
    int64_t n = std::max<int64_t>(0, static_cast<int64_t>(count));
    out = Tensor(TensorType{dtype, {n}});
    for (int64_t i = 0; i < n; ++i) out.setDouble(i, start + static_cast<double>(i) * delta);
  }
  return c.result(c.b().constant(std::move(out)));
}

// Dropout at inference (no training_mode, or training_mode false, or a ratio of 0) is the identity
// with an all-true mask; random dropping in training is not something a static graph reproduces.
Status dropout(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  bool training = c.opset() < 7 && c.intAttr("is_test", 0) == 0;
  double ratio = c.floatAttr("ratio", 0.5f);
  if (c.opset() >= 12) {
    training = false;
    if (c.hasInput(2)) {
      auto t = c.staticInput(2, "training_mode");
      if (!t) return t.error();
      training = t->numElements() == 1 && t->getBool(0);
    }
    if (c.hasInput(1)) {
      auto r = c.staticInput(1, "ratio");
      if (!r) return r.error();
      ratio = r->numElements() == 1 ? r->getDouble(0) : ratio;
    }
  }
  if (training && ratio != 0) return c.unsupported("training mode with a non-zero ratio (random)");
  if (c.wantsOutput(1)) {
    // The mask is bool from opset 10; before, it has the input's dtype.
    DType maskType = c.opset() >= 10 ? DType::Bool : (*x)->type().dtype;
    c.setOutput(1, c.op(OpKind::BroadcastTo, {c.scalar(maskType, 1)}, {{"shape", Attr::ints((*x)->type().shape)}}));
  }
  return c.result(*x);
}

}  // namespace

void addTensorConverters(ConverterTable& t) {
  t["Constant"] = constant;
  t["ConstantOfShape"] = constantOfShape;
  t["Shape"] = shape;
  t["Size"] = size;
  t["Cast"] = cast;
  t["CastLike"] = castLike;
  t["Range"] = range;
  t["Dropout"] = dropout;
}

}  // namespace kiln::onnx_import
