// Indexing ONNX ops spelt with kiln's iota, compare and select: GatherElements (a one-hot pick
// along the axis, summed: exact, as every other term is a zero), GatherND (linear indices and a
// gather), Hardmax, Trilu, EyeLike, OneHot.
#include "frontend/onnx/onnx_converters.h"
#include "frontend/onnx/onnx_indexing.h"
#include "frontend/onnx/onnx_tensor.h"

namespace kiln::onnx_import {

Value* wrapNegative(NodeContext& c, Value* idx, int64_t n) {
  Value* zero = c.scalarLike(idx, 0);
  return c.op(OpKind::Select, {c.op(OpKind::Lt, {idx, zero}), c.op(OpKind::Add, {idx, c.scalarLike(idx, static_cast<double>(n))}), idx});
}

// out[p] = data[p with p_axis := idx[p]]: data (cut to idx's shape off the axis) gets a new axis
// for p_axis before `axis`, a one-hot mask marks k == idx[p], and the sum over k picks the value.
Value* gatherAlongAxis(NodeContext& c, Value* data, Value* idx, int64_t axis) {
  if (!data || !idx) return nullptr;
  Shape s = idx->type().shape;
  const Shape& d = data->type().shape;
  int64_t n = d[static_cast<size_t>(axis)];
  std::vector<int64_t> ends;
  for (size_t j = 0; j < s.size(); ++j) ends.push_back(static_cast<int64_t>(j) == axis ? n : s[j]);
  Value* x = c.op(OpKind::Slice, {data}, {{"starts", Attr::ints(std::vector<int64_t>(s.size(), 0))}, {"ends", Attr::ints(ends)}});
  Shape wide = s;  // [.., S_axis, n, ..]
  wide.insert(wide.begin() + axis + 1, n);
  Shape xShape = ends;
  xShape.insert(xShape.begin() + axis, 1);
  Shape idxShape = s;
  idxShape.insert(idxShape.begin() + axis + 1, 1);
  Value* xb = c.op(OpKind::BroadcastTo, {c.reshape(x, xShape)}, {{"shape", Attr::ints(wide)}});
  Value* k = c.b().iota({idx->type().dtype, wide}, axis + 1);
  Value* mask = c.op(OpKind::Eq, {k, c.reshape(wrapNegative(c, idx, n), idxShape)});
  DType t = data->type().dtype;
  DType sumType = isNum(t) ? t : DType::I32;  // bools pick as 0/1
  Value* zeros = c.scalar(sumType, 0);
  Value* picked = c.op(OpKind::Select, {mask, c.cast(xb, sumType), zeros});
  return c.cast(c.op(OpKind::ReduceSum, {picked}, {{"axes", Attr::ints({axis + 1})}}), t);
}

namespace {

Status gatherElements(NodeContext& c) {
  auto data = c.input(0);
  if (!data) return data.error();
  auto idx = c.input(1);
  if (!idx) return idx.error();
  int rank = (*data)->type().rank();
  if ((*idx)->type().rank() != rank) return c.error("indices must have the data's rank " + std::to_string(rank));
  int64_t axis = c.intAttr("axis", 0);
  if (axis < -rank || axis >= rank) return c.error("axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += rank;
  return c.result(gatherAlongAxis(c, *data, *idx, axis));
}

// Hardmax: 1 at the first maximum along `axis` (opset 13; before, the 2-D coercion as Softmax).
Status hardmax(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  const TensorType& t = (*x)->type();
  int rank = t.rank();
  bool coerce2d = c.opset() < 13;
  int64_t axis = c.intAttr("axis", coerce2d ? 1 : -1);
  if (axis < -rank || axis >= rank) return c.error("axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += rank;
  Value* in = *x;
  int64_t reduceAxis = axis;
  if (coerce2d) {
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < rank; ++i) (i < axis ? outer : inner) *= t.shape[static_cast<size_t>(i)];
    in = c.reshape(in, {outer, inner});
    reduceAxis = 1;
  }
  Value* arg = c.op(OpKind::Argmax, {in}, {{"axis", Attr(reduceAxis)}, {"keepdims", Attr(true)}});
  Value* k = c.b().iota({DType::I64, in ? in->type().shape : Shape{}}, reduceAxis);
  Value* y = c.cast(c.op(OpKind::Eq, {k, arg}), t.dtype);
  return c.result(c.reshape(y, t.shape));
}

// Trilu: keep j - i <= k (lower) or j - i >= k (upper) over the last two dims.
Status trilu(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  const TensorType& t = (*x)->type();
  if (t.rank() < 2) return c.error("needs rank >= 2, got " + t.str());
  int64_t k = 0;
  if (c.hasInput(1)) {
    auto kv = c.staticInts(1, "k");
    if (!kv) return kv.error();
    if (kv->size() != 1) return c.error("k must be a scalar");
    k = (*kv)[0];
  }
  Shape plane(t.shape.end() - 2, t.shape.end());
  Value* diff = c.op(OpKind::Sub, {c.b().iota({DType::I64, plane}, 1), c.b().iota({DType::I64, plane}, 0)});
  Value* kk = c.scalar(DType::I64, static_cast<double>(k));
  Value* keep = c.op(c.intAttr("upper", 1) ? OpKind::Ge : OpKind::Le, {diff, kk});
  Value* zero = isNum(t.dtype) ? c.scalarLike(*x, 0) : c.scalar(t.dtype, 0);
  return c.result(c.op(OpKind::Select, {keep, *x, zero}));
}

// EyeLike: ones on the diagonal shifted by k, of the input's shape and `dtype` (default: its own).
Status eyeLike(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  const TensorType& t = (*x)->type();
  if (t.rank() != 2) return c.error("needs a 2-D input, got " + t.str());
  DType dtype = t.dtype;
  if (c.hasAttr("dtype")) {
    auto d = dtypeFromOnnx(static_cast<int32_t>(c.intAttr("dtype", 1)));
    if (!d) return c.unsupported("dtype " + onnxDTypeName(static_cast<int32_t>(c.intAttr("dtype", 1))));
    dtype = *d;
  }
  Value* diff = c.op(OpKind::Sub, {c.b().iota({DType::I64, t.shape}, 1), c.b().iota({DType::I64, t.shape}, 0)});
  Value* on = c.op(OpKind::Eq, {diff, c.scalar(DType::I64, static_cast<double>(c.intAttr("k", 0)))});
  return c.result(c.cast(on, dtype));
}

// OneHot(indices, depth, values=[off, on]): a new axis of size depth, on where k == index.
Status oneHot(NodeContext& c) {
  auto idx = c.input(0);
  if (!idx) return idx.error();
  auto depthT = c.staticInput(1, "depth");
  if (!depthT) return depthT.error();
  if (depthT->numElements() != 1) return c.error("depth must hold one value");
  int64_t depth = static_cast<int64_t>(depthT->getDouble(0));
  auto values = c.input(2);
  if (!values) return values.error();
  Shape s = (*idx)->type().shape;
  int outRank = static_cast<int>(s.size()) + 1;
  int64_t axis = c.intAttr("axis", -1);
  if (axis < -outRank || axis >= outRank) return c.error("axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += outRank;
  Shape out = s, idxShape = s;
  out.insert(out.begin() + axis, depth);
  idxShape.insert(idxShape.begin() + axis, 1);
  Value* index = c.cast(*idx, DType::I64);
  if (isFloat((*idx)->type().dtype)) index = c.cast(*idx, DType::I64);  // ONNX truncates float indices
  index = wrapNegative(c, index, depth);
  Value* k = c.b().iota({DType::I64, out}, axis);
  Value* on = c.op(OpKind::Eq, {k, c.reshape(index, idxShape)});
  Value* offValue = c.reshape(c.op(OpKind::Slice, {*values}, {{"starts", Attr::ints({0})}, {"ends", Attr::ints({1})}}), {});
  Value* onValue = c.reshape(c.op(OpKind::Slice, {*values}, {{"starts", Attr::ints({1})}, {"ends", Attr::ints({2})}}), {});
  return c.result(c.op(OpKind::Select, {on, onValue, offValue}));
}

// GatherND: each index row (the last axis of indices, k long) addresses data's dims b..b+k-1
// (b = batch_dims, whose positions the index rows share with data); the rows become linear
// indices into data flattened over its first b + k dims, and a gather along axis 0 picks.
Status gatherND(NodeContext& c) {
  auto data = c.input(0);
  if (!data) return data.error();
  auto idxIn = c.input(1);
  if (!idxIn) return idxIn.error();
  const Shape& d = (*data)->type().shape;
  const Shape& is = (*idxIn)->type().shape;
  int64_t b = c.intAttr("batch_dims", 0);
  if (is.empty()) return c.error("indices must have rank >= 1");
  int64_t k = is.back();
  if (b < 0 || b + k > static_cast<int64_t>(d.size()) || b >= static_cast<int64_t>(is.size()))
    return c.error("indices " + shapeStr(is) + " do not fit data " + shapeStr(d) + " with batch_dims " + std::to_string(b));
  Shape rows(is.begin(), is.end() - 1);  // one linear index per row
  Value* idx = c.cast(*idxIn, DType::I64);
  Value* linear = nullptr;
  for (int64_t j = 0; j < b; ++j) {
    Value* pos = c.b().iota({DType::I64, rows}, j);
    linear = linear ? c.op(OpKind::Add, {c.op(OpKind::Mul, {linear, c.scalar(DType::I64, static_cast<double>(d[static_cast<size_t>(j)]))}), pos}) : pos;
  }
  for (int64_t j = 0; j < k; ++j) {
    int64_t n = d[static_cast<size_t>(b + j)];
    Value* part = c.reshape(c.op(OpKind::Slice, {idx}, {{"starts", Attr::ints({j})}, {"ends", Attr::ints({j + 1})}, {"axes", Attr::ints({-1})}}), rows);
    part = wrapNegative(c, part, n);
    linear = linear ? c.op(OpKind::Add, {c.op(OpKind::Mul, {linear, c.scalar(DType::I64, static_cast<double>(n))}), part}) : part;
  }
  if (!linear) linear = c.b().constant(Tensor(TensorType{DType::I64, rows}));  // k = 0, b = 0: row 0 everywhere
  int64_t outer = 1;
  for (int64_t j = 0; j < b + k; ++j) outer *= d[static_cast<size_t>(j)];
  Shape flat = {outer};
  flat.insert(flat.end(), d.begin() + b + k, d.end());
  return c.result(c.op(OpKind::Gather, {c.reshape(*data, flat), linear}, {{"axis", Attr(int64_t{0})}}));
}

// ReverseSequence: along time_axis, the first sequence_lens[b] steps of batch b reversed, the rest
// kept: a GatherElements with index t < len ? len - 1 - t : t.
Status reverseSequence(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  auto lens = c.input(1);
  if (!lens) return lens.error();
  const Shape& s = (*x)->type().shape;
  int64_t timeAxis = c.intAttr("time_axis", 0), batchAxis = c.intAttr("batch_axis", 1);
  if (s.size() < 2 || (timeAxis != 0 && timeAxis != 1) || batchAxis != 1 - timeAxis) return c.error("needs time_axis and batch_axis to be 0 and 1");
  Shape lensShape(s.size(), 1);
  lensShape[static_cast<size_t>(batchAxis)] = s[static_cast<size_t>(batchAxis)];
  Value* len = c.reshape(c.cast(*lens, DType::I64), lensShape);
  Value* t = c.b().iota({DType::I64, s}, timeAxis);
  Value* reversed = c.op(OpKind::Sub, {c.op(OpKind::Sub, {len, c.scalar(DType::I64, 1)}), t});
  Value* idx = c.op(OpKind::Select, {c.op(OpKind::Lt, {t, len}), reversed, t});
  return c.result(gatherAlongAxis(c, *x, idx, timeAxis));
}

// TopK along `axis`: element i's rank is the count of elements before it in the order (larger
// first, or smaller with largest = 0; ties by index); output slot r takes the element of rank r.
Status topK(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  auto kv = c.staticInts(1, "K");
  if (!kv) return kv.error();
  if (kv->size() != 1) return c.error("K must hold one value");
  const Shape& s = (*x)->type().shape;
  int rank = static_cast<int>(s.size());
  int64_t axis = c.intAttr("axis", -1);
  if (axis < -rank || axis >= rank) return c.error("axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += rank;
  int64_t n = s[static_cast<size_t>(axis)], k = (*kv)[0];
  if (k < 0 || k > n) return c.error("K = " + std::to_string(k) + " is outside [0, " + std::to_string(n) + "]");
  bool largest = c.intAttr("largest", 1) != 0;
  Shape wide = s;  // [.., i, j, ..]: compare element i with element j
  wide.insert(wide.begin() + axis + 1, n);
  Shape asI = s, asJ = s;
  asI.insert(asI.begin() + axis + 1, 1);
  asJ.insert(asJ.begin() + axis, 1);
  Value* xi = c.reshape(*x, asI);
  Value* xj = c.reshape(*x, asJ);
  Value* i = c.b().iota({DType::I64, wide}, axis);
  Value* j = c.b().iota({DType::I64, wide}, axis + 1);
  Value* before = c.op(OpKind::Or, {c.op(largest ? OpKind::Gt : OpKind::Lt, {xj, xi}),
                                    c.op(OpKind::And, {c.op(OpKind::Eq, {xj, xi}), c.op(OpKind::Lt, {j, i})})});
  Value* order = c.op(OpKind::ReduceSum, {c.cast(before, DType::I64)}, {{"axes", Attr::ints({axis + 1})}});  // rank of i
  // slot r (a new axis after `axis`, k long) takes the i whose rank is r.
  Shape slots = s;
  slots.insert(slots.begin() + axis + 1, k);
  Shape orderKept = s;
  orderKept.insert(orderKept.begin() + axis + 1, 1);
  Value* hit = c.op(OpKind::Eq, {c.reshape(order, orderKept), c.b().iota({DType::I64, slots}, axis + 1)});
  Value* values = c.op(OpKind::ReduceSum, {c.op(OpKind::Select, {hit, c.reshape(*x, orderKept), c.scalarLike(*x, 0)})}, {{"axes", Attr::ints({axis})}});
  Value* positions = c.b().iota({DType::I64, slots}, axis);
  Value* indices = c.op(OpKind::ReduceSum, {c.op(OpKind::Select, {hit, positions, c.scalar(DType::I64, 0)})}, {{"axes", Attr::ints({axis})}});
  c.setOutput(1, indices);
  return c.result(values);
}

}  // namespace

void addIndexingConverters(ConverterTable& t) {
  t["ReverseSequence"] = reverseSequence;
  t["TopK"] = topK;
  t["GatherND"] = gatherND;
  t["GatherElements"] = gatherElements;
  t["Hardmax"] = hardmax;
  t["Trilu"] = trilu;
  t["EyeLike"] = eyeLike;
  t["OneHot"] = oneHot;
}

}  // namespace kiln::onnx_import
