// ONNX ops that combine positions along an axis: CumSum, ScatterElements/Scatter and ScatterND, spelt as
// a mask over a pair of axes (i, j) with a sum over one of them; and the window functions
// (Hann, Hamming, Blackman), which are constants of a compile-time size.
#include <cmath>

#include "frontend/onnx/onnx_converters.h"
#include "frontend/onnx/onnx_indexing.h"
#include "frontend/onnx/onnx_tensor.h"

namespace kiln::onnx_import {

namespace {

// CumSum: out[i] = sum of x[j] over j <= i (j < i exclusive; j >= i, j > i reversed), as a masked
// sum over a second copy of the axis.
Status cumSum(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  auto axisV = c.staticInts(1, "axis");
  if (!axisV) return axisV.error();
  if (axisV->size() != 1) return c.error("axis must be a scalar");
  const Shape& s = (*x)->type().shape;
  int rank = static_cast<int>(s.size());
  int64_t axis = (*axisV)[0];
  if (axis < -rank || axis >= rank) return c.error("axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += rank;
  int64_t n = s[static_cast<size_t>(axis)];
  Shape wide = s, xs = s;
  wide.insert(wide.begin() + axis + 1, n);  // [.., i, j, ..]
  xs.insert(xs.begin() + axis, 1);          // x along j
  Value* i = c.b().iota({DType::I64, wide}, axis);
  Value* j = c.b().iota({DType::I64, wide}, axis + 1);
  bool exclusive = c.intAttr("exclusive", 0) != 0, reverse = c.intAttr("reverse", 0) != 0;
  OpKind cmp = reverse ? (exclusive ? OpKind::Gt : OpKind::Ge) : (exclusive ? OpKind::Lt : OpKind::Le);
  Value* mask = c.op(cmp, {j, i});
  Value* xb = c.op(OpKind::BroadcastTo, {c.reshape(*x, xs)}, {{"shape", Attr::ints(wide)}});
  Value* terms = c.op(OpKind::Select, {mask, xb, c.scalarLike(*x, 0)});
  return c.result(c.op(OpKind::ReduceSum, {terms}, {{"axes", Attr::ints({axis + 1})}}));
}

// ScatterElements: out = data, except out[p with p_axis := idx[p]] = updates[p] (or data + / *
// updates with reduction add / mul). Per target index k, a mask idx[p] == k selects the updates
// that land there; indices are unique (ONNX requires it without a reduction), so sums are exact.
Status scatterElements(NodeContext& c) {
  auto data = c.input(0);
  if (!data) return data.error();
  auto idx = c.input(1);
  if (!idx) return idx.error();
  auto upd = c.input(2);
  if (!upd) return upd.error();
  const Shape& d = (*data)->type().shape;
  Shape s = (*idx)->type().shape;
  int rank = static_cast<int>(d.size());
  if (static_cast<int>(s.size()) != rank || (*upd)->type().shape != s) return c.error("indices and updates must share a shape of the data's rank");
  int64_t axis = c.intAttr("axis", 0);
  if (axis < -rank || axis >= rank) return c.error("axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += rank;
  std::string reduction = c.stringAttr("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul") return c.unsupported("reduction '" + reduction + "'");
  int64_t n = d[static_cast<size_t>(axis)];
  Shape wide = s, kept = s;
  wide.insert(wide.begin() + axis + 1, n);  // [.., p_axis, k, ..]
  kept.insert(kept.begin() + axis + 1, 1);
  Value* k = c.b().iota({(*idx)->type().dtype, wide}, axis + 1);
  Value* mask = c.op(OpKind::Eq, {k, c.reshape(wrapNegative(c, *idx, n), kept)});
  Value* ub = c.op(OpKind::BroadcastTo, {c.reshape(*upd, kept)}, {{"shape", Attr::ints(wide)}});
  AttrList overP = {{"axes", Attr::ints({axis})}};
  bool mul = reduction == "mul";
  Value* combined = c.op(mul ? OpKind::ReduceProd : OpKind::ReduceSum, {c.op(OpKind::Select, {mask, ub, c.scalarLike(*upd, mul ? 1 : 0)})}, overP);
  Value* hits = c.op(OpKind::ReduceSum, {c.cast(mask, DType::I32)}, overP);
  // Positions beyond indices' shape (off the axis) are not touched: pad up to the data's shape.
  std::vector<int64_t> pads(2 * static_cast<size_t>(rank), 0);
  for (int j = 0; j < rank; ++j)
    if (j != axis) pads[static_cast<size_t>(rank + j)] = d[static_cast<size_t>(j)] - s[static_cast<size_t>(j)];
  AttrList padAttrs = {{"pads", Attr::ints(pads)}};
  combined = c.op(OpKind::Pad, {combined}, padAttrs);
  Value* hit = c.op(OpKind::Gt, {c.op(OpKind::Pad, {hits}, padAttrs), c.scalar(DType::I32, 0)});
  Value* landed = reduction == "none" ? combined : c.op(mul ? OpKind::Mul : OpKind::Add, {*data, combined});
  return c.result(c.op(OpKind::Select, {hit, landed, *data}));
}

// ScatterND: data flattened over its first k dims (k = indices' last dim) gets update row r at the
// linear index of index row r; a mask [rows, positions] picks, as in ScatterElements.
Status scatterND(NodeContext& c) {
  auto data = c.input(0);
  if (!data) return data.error();
  auto idxIn = c.input(1);
  if (!idxIn) return idxIn.error();
  auto upd = c.input(2);
  if (!upd) return upd.error();
  const Shape& d = (*data)->type().shape;
  const Shape& is = (*idxIn)->type().shape;
  if (is.empty() || is.back() > static_cast<int64_t>(d.size())) return c.error("indices " + shapeStr(is) + " do not fit data " + shapeStr(d));
  int64_t k = is.back(), rows = 1, positions = 1;
  for (size_t j = 0; j + 1 < is.size(); ++j) rows *= is[j];
  for (int64_t j = 0; j < k; ++j) positions *= d[static_cast<size_t>(j)];
  Shape rest(d.begin() + k, d.end());
  std::string reduction = c.stringAttr("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul") return c.unsupported("reduction '" + reduction + "'");
  Value* idx = c.reshape(c.cast(*idxIn, DType::I64), {rows, k});
  Value* linear = c.b().constant(Tensor(TensorType{DType::I64, {rows, 1}}));
  for (int64_t j = 0; j < k; ++j) {
    int64_t n = d[static_cast<size_t>(j)];
    Value* part = wrapNegative(c, c.op(OpKind::Slice, {idx}, {{"starts", Attr::ints({j})}, {"ends", Attr::ints({j + 1})}, {"axes", Attr::ints({1})}}), n);
    linear = c.op(OpKind::Add, {c.op(OpKind::Mul, {linear, c.scalar(DType::I64, static_cast<double>(n))}), part});
  }
  Shape wide = {rows, positions}, maskShape = {rows, positions}, updShape = {rows, 1};
  wide.insert(wide.end(), rest.begin(), rest.end());
  maskShape.insert(maskShape.end(), rest.size(), 1);
  updShape.insert(updShape.end(), rest.begin(), rest.end());
  Value* mask = c.op(OpKind::Eq, {linear, c.b().iota({DType::I64, {rows, positions}}, 1)});
  Value* maskWide = c.reshape(mask, maskShape);
  Value* ub = c.reshape(*upd, updShape);
  bool mul = reduction == "mul";
  Value* picked = c.op(OpKind::Select, {maskWide, ub, c.scalarLike(*upd, mul ? 1 : 0)});
  if (picked && picked->type().shape != wide) picked = c.op(OpKind::BroadcastTo, {picked}, {{"shape", Attr::ints(wide)}});
  Shape flat = {positions};
  flat.insert(flat.end(), rest.begin(), rest.end());
  Value* combined = c.reshape(c.op(mul ? OpKind::ReduceProd : OpKind::ReduceSum, {picked}, {{"axes", Attr::ints({0})}}), d);
  Value* hits = c.op(OpKind::ReduceSum, {c.cast(mask, DType::I32)}, {{"axes", Attr::ints({0})}});
  Shape hitShape = {positions};
  hitShape.insert(hitShape.end(), rest.size(), 1);
  Value* hit = c.op(OpKind::Gt, {c.reshape(hits, hitShape), c.scalar(DType::I32, 0)});
  hit = c.reshape(c.op(OpKind::BroadcastTo, {hit}, {{"shape", Attr::ints(flat)}}), d);
  Value* landed = reduction == "none" ? combined : c.op(mul ? OpKind::Mul : OpKind::Add, {*data, combined});
  return c.result(c.op(OpKind::Select, {hit, landed, *data}));
}

// Window functions: sum_m a_m cos(2 pi m k / N), N = size (periodic) or size - 1 (symmetric).
template <int Kind>
Status window(NodeContext& c) {
  auto size = c.staticInput(0, "size");
  if (!size) return size.error();
  if (size->numElements() != 1) return c.error("size must be a scalar");
  int64_t n = size->getInt(0);
  if (n < 0) return c.error("size must not be negative");
  auto dtype = dtypeFromOnnx(static_cast<int32_t>(c.intAttr("output_datatype", 1)));
  if (!dtype) return c.unsupported("output_datatype " + onnxDTypeName(static_cast<int32_t>(c.intAttr("output_datatype", 1))));
  double denom = c.intAttr("periodic", 1) ? static_cast<double>(n) : static_cast<double>(n - 1);
  Tensor out(TensorType{*dtype, {n}});
  for (int64_t k = 0; k < n; ++k) {
    double x = 2 * M_PI * static_cast<double>(k) / denom, v;
    if (Kind == 0) v = 0.5 - 0.5 * std::cos(x);                                  // Hann
    else if (Kind == 1) v = 25.0 / 46.0 - 21.0 / 46.0 * std::cos(x);             // Hamming
    else v = 0.42 - 0.5 * std::cos(x) + 0.08 * std::cos(2 * x);                  // Blackman
    out.setDouble(k, v);
  }
  return c.result(c.b().constant(std::move(out)));
}

}  // namespace

void addScanConverters(ConverterTable& t) {
  t["CumSum"] = cumSum;
  t["ScatterElements"] = scatterElements;
  t["Scatter"] = scatterElements;
  t["ScatterND"] = scatterND;
  t["HannWindow"] = window<0>;
  t["HammingWindow"] = window<1>;
  t["BlackmanWindow"] = window<2>;
}

}  // namespace kiln::onnx_import
