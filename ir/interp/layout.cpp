// Layout kernels: they move or select elements without arithmetic, so they copy bytes and work
// for every dtype. Each computes, for every output element, the index of its source element.
#include <optional>
#include <string>

#include "ir/interp/kernels.h"
#include "ir/shape_rules.h"

namespace kiln::interp {

namespace {

std::optional<std::vector<int64_t>> optionalInts(const Op& op, std::string_view name) {
  if (const Attr* a = op.findAttr(name)) return a->getIntList();
  return std::nullopt;
}

}  // namespace

// Row-major order is unchanged by a reshape, so the bytes are copied as they are.
Tensor reshape(const Op& op, const Tensor& x) {
  Tensor out(op.result()->type());
  if (out.byteSize() > 0) std::memcpy(out.data(), x.data(), out.byteSize());
  return out;
}

// out[i_0, .., i_r] = x[j] with j[perm[d]] = i_d.
Tensor transpose(const Op& op, const Tensor& x) {
  std::vector<int64_t> perm = op.intsAttr("perm");
  std::vector<int64_t> xStrides = rowMajorStrides(x.shape());
  std::vector<int64_t> strides;
  for (int64_t p : perm) strides.push_back(xStrides[p]);
  return gatherElements(op.result()->type(), x, stridedIndices(op.result()->type().shape, strides));
}

Tensor broadcastTo(const Op& op, const Tensor& x) {
  const TensorType& type = op.result()->type();
  return gatherElements(type, x, broadcastIndices(x.shape(), type.shape));
}

// Each operand contributes, per outer block, one contiguous run of shape[axis] * inner elements.
Tensor concat(const Op& op, const std::vector<const Tensor*>& xs) {
  Tensor out(op.result()->type());
  int axis = *normalizeAxis(op.intAttr("axis"), out.rank());
  AxisSplit s = splitAt(out.shape(), axis);
  int64_t outIndex = 0;
  for (int64_t o = 0; o < s.outer; ++o) {
    for (const Tensor* x : xs) {
      int64_t run = x->shape()[axis] * s.inner;
      for (int64_t k = 0; k < run; ++k) copyElement(out, outIndex++, *x, o * run + k);
    }
  }
  return out;
}

// ONNX Slice: element k along an axis reads start + k * step (resolveSlice clamps the bounds).
Tensor slice(const Op& op, const Tensor& x) {
  auto axes = resolveSlice(x.shape(), op.intsAttr("starts"), op.intsAttr("ends"), optionalInts(op, "axes"),
                           optionalInts(op, "steps"));
  KILN_INTERNAL_CHECK(axes.ok(), "slice: attributes were not verified");
  std::vector<int64_t> xStrides = rowMajorStrides(x.shape());
  std::vector<int64_t> strides;
  int64_t base = 0;
  for (size_t d = 0; d < axes->size(); ++d) {
    base += (*axes)[d].start * xStrides[d];
    strides.push_back((*axes)[d].step * xStrides[d]);
  }
  return gatherElements(op.result()->type(), x, stridedIndices(op.result()->type().shape, strides, base));
}

// ONNX Gather: out[o, j.., i] = x[o, indices[j..], i]; a negative index counts from the end.
Expected<Tensor> gather(const Op& op, const Tensor& x, const Tensor& indices) {
  Tensor out(op.result()->type());
  int axis = *normalizeAxis(op.intAttr("axis"), x.rank());
  AxisSplit s = splitAt(x.shape(), axis);
  int64_t numIndices = indices.numElements();
  std::vector<int64_t> resolved;
  for (int64_t j = 0; j < numIndices; ++j) {
    int64_t index = indices.getInt(j);
    if (index < -s.n || index >= s.n)
      return Error("index " + std::to_string(index) + " is out of range [" + std::to_string(-s.n) + ", " +
                   std::to_string(s.n) + ") for axis " + std::to_string(axis));
    resolved.push_back(index < 0 ? index + s.n : index);
  }
  int64_t outIndex = 0;
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t j = 0; j < numIndices; ++j)
      for (int64_t i = 0; i < s.inner; ++i)
        copyElement(out, outIndex++, x, (o * s.n + resolved[j]) * s.inner + i);
  return out;
}

// Constant padding: out[i] = x[i - begin] where that is inside x, else `value` converted to the
// dtype (truncated toward zero for ints). Negative pads crop: the same formula, shifted inward.
Tensor pad(const Op& op, const Tensor& x) {
  Tensor out(op.result()->type());
  std::vector<int64_t> pads = op.intsAttr("pads");
  Attr value = op.attr("value");
  Tensor fill(TensorType{out.dtype(), {}});
  if (value.isInt()) fill.setInt(0, value.getInt());  // exact for i64 beyond 2^53
  else fill.setDouble(0, value.getNumber());
  int rank = x.rank();
  std::vector<int64_t> xStrides = rowMajorStrides(x.shape());
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < out.numElements(); ++i) {
    // index: the multi-index of output element i.
    int64_t source = 0;
    bool inside = true;
    for (int d = 0; d < rank; ++d) {
      int64_t j = index[d] - pads[d];
      inside = inside && j >= 0 && j < x.shape()[d];
      source += j * xStrides[d];
    }
    if (inside) copyElement(out, i, x, source);
    else copyElement(out, i, fill, 0);
    for (int d = rank - 1; d >= 0; --d) {
      if (++index[d] < out.shape()[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

}  // namespace kiln::interp
