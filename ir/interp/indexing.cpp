// Index arithmetic and element copies shared by the interpreter's kernels.
#include "ir/interp/kernels.h"

namespace kiln::interp {

std::vector<int64_t> stridedIndices(const Shape& shape, const std::vector<int64_t>& strides, int64_t base) {
  int64_t n = numElements(shape);
  std::vector<int64_t> out(static_cast<size_t>(n));
  std::vector<int64_t> index(shape.size(), 0);
  int64_t flat = base;
  for (int64_t i = 0; i < n; ++i) {
    out[static_cast<size_t>(i)] = flat;
    // Odometer increment, innermost dimension first.
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      ++index[d];
      flat += strides[d];
      if (index[d] < shape[d]) break;
      flat -= strides[d] * shape[d];
      index[d] = 0;
    }
  }
  return out;
}

std::vector<int64_t> broadcastIndices(const Shape& from, const Shape& to) {
  std::vector<int64_t> fromStrides = rowMajorStrides(from);
  std::vector<int64_t> strides(to.size(), 0);  // dims `from` lacks, or has as 1, repeat: stride 0
  size_t offset = to.size() - from.size();
  for (size_t d = 0; d < from.size(); ++d)
    if (from[d] != 1) strides[offset + d] = fromStrides[d];
  return stridedIndices(to, strides);
}

Tensor gatherElements(const TensorType& type, const Tensor& src, const std::vector<int64_t>& indices) {
  Tensor out(type);
  for (size_t i = 0; i < indices.size(); ++i) copyElement(out, static_cast<int64_t>(i), src, indices[i]);
  return out;
}

AxisSplit splitAt(const Shape& shape, int axis) {
  AxisSplit s{1, shape[axis], 1};
  for (int d = 0; d < axis; ++d) s.outer *= shape[d];
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) s.inner *= shape[d];
  return s;
}

std::vector<double> toDoubles(const Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numElements()));
  for (int64_t i = 0; i < t.numElements(); ++i) out[static_cast<size_t>(i)] = t.getDouble(i);
  return out;
}

std::vector<int64_t> toInts(const Tensor& t) {
  std::vector<int64_t> out(static_cast<size_t>(t.numElements()));
  for (int64_t i = 0; i < t.numElements(); ++i) out[static_cast<size_t>(i)] = t.getInt(i);
  return out;
}

Tensor takeRow(const Tensor& x, int64_t i, const TensorType& rowType) {
  Tensor row(rowType);
  if (row.byteSize() > 0)
    std::memcpy(row.data(), static_cast<const uint8_t*>(x.data()) + static_cast<size_t>(i) * row.byteSize(),
                row.byteSize());
  return row;
}

void putRow(Tensor& dst, int64_t i, const Tensor& row) {
  if (row.byteSize() > 0)
    std::memcpy(static_cast<uint8_t*>(dst.data()) + static_cast<size_t>(i) * row.byteSize(), row.data(),
                row.byteSize());
}

}  // namespace kiln::interp
