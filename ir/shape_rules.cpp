// Broadcasting, axes, slicing and windowed-op shape rules.
#include "ir/shape_rules.h"

#include <algorithm>

#include "ir/ir.h"

namespace kiln {

std::optional<Shape> broadcastShapes(const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

bool broadcastsTo(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  size_t offset = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[offset + i]) return false;
  return true;
}

std::optional<int> normalizeAxis(int64_t axis, int rank) {
  if (axis < -rank || axis >= rank) return std::nullopt;
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

Expected<std::vector<int>> reductionAxes(const std::optional<std::vector<int64_t>>& axes, int rank) {
  std::vector<int> out;
  if (!axes) {
    for (int i = 0; i < rank; ++i) out.push_back(i);
    return out;
  }
  for (int64_t a : *axes) {
    auto n = normalizeAxis(a, rank);
    if (!n) return Error("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
    if (std::find(out.begin(), out.end(), *n) != out.end())
      return Error("axis " + std::to_string(a) + " is listed twice");
    out.push_back(*n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Shape reducedShape(const Shape& in, const std::vector<int>& axes, bool keepdims) {
  Shape out;
  for (int i = 0; i < static_cast<int>(in.size()); ++i) {
    bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (!reduced) out.push_back(in[i]);
    else if (keepdims) out.push_back(1);
  }
  return out;
}

Expected<std::vector<SliceAxis>> resolveSlice(const Shape& shape, const std::vector<int64_t>& starts,
                                              const std::vector<int64_t>& ends,
                                              const std::optional<std::vector<int64_t>>& axes,
                                              const std::optional<std::vector<int64_t>>& steps) {
  int rank = static_cast<int>(shape.size());
  if (starts.size() != ends.size())
    return Error("starts has " + std::to_string(starts.size()) + " entries but ends has " + std::to_string(ends.size()));
  std::vector<int64_t> axisList;
  if (axes) axisList = *axes;
  else
    for (size_t i = 0; i < starts.size(); ++i) axisList.push_back(static_cast<int64_t>(i));
  if (axisList.size() != starts.size())
    return Error("axes has " + std::to_string(axisList.size()) + " entries but starts has " + std::to_string(starts.size()));
  if (steps && steps->size() != starts.size())
    return Error("steps has " + std::to_string(steps->size()) + " entries but starts has " + std::to_string(starts.size()));

  std::vector<SliceAxis> out;
  for (int64_t d : shape) out.push_back({0, 1, d});
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < axisList.size(); ++i) {
    auto axis = normalizeAxis(axisList[i], rank);
    if (!axis) return Error("axis " + std::to_string(axisList[i]) + " is out of range for rank " + std::to_string(rank));
    if (seen[*axis]) return Error("axis " + std::to_string(axisList[i]) + " is listed twice");
    seen[*axis] = true;
    int64_t dim = shape[*axis];
    int64_t step = steps ? (*steps)[i] : 1;
    if (step == 0) return Error("steps must not be 0");
    int64_t start = starts[i], end = ends[i];
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    // Counted in unsigned arithmetic: step may be any int64, INT64_MIN included.
    uint64_t stride = step > 0 ? static_cast<uint64_t>(step) : 0 - static_cast<uint64_t>(step);
    int64_t count;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      count = end > start ? static_cast<int64_t>(1 + static_cast<uint64_t>(end - start - 1) / stride) : 0;
    } else {
      start = std::clamp<int64_t>(start, -1, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      count = start > end ? static_cast<int64_t>(1 + static_cast<uint64_t>(start - end - 1) / stride) : 0;
    }
    out[*axis] = {count > 0 ? start : 0, step, count};
  }
  return out;
}

bool isMatrixTranspose(const Op& op) {
  if (op.kind() != OpKind::Transpose) return false;
  std::vector<int64_t> perm = op.intsAttr("perm");
  size_t r = perm.size();
  if (r < 2) return false;
  for (size_t d = 0; d + 2 < r; ++d)
    if (perm[d] != static_cast<int64_t>(d)) return false;
  return perm[r - 2] == static_cast<int64_t>(r - 1) && perm[r - 1] == static_cast<int64_t>(r - 2);
}

PoolWindow poolWindow(const Op& pool) {
  PoolWindow w{pool.intsAttr("kernel"), {}, pool.intsAttr("pads"), pool.intsAttr("dilations")};
  w.strides = w.kernel;
  if (const Attr* s = pool.findAttr("strides")) w.strides = *s->getIntList();
  return w;
}

bool isChannelsLast(const Op& conv) {
  const Attr* layout = conv.findAttr("layout");
  return layout && layout->getString() == "nhwc";
}

Shape permuteShape(const Shape& shape, const std::vector<int64_t>& perm) {
  Shape out;
  for (int64_t axis : perm) out.push_back(shape[static_cast<size_t>(axis)]);
  return out;
}

Expected<Shape> matmulShape(const Shape& a, const Shape& b) {
  if (a.empty() || b.empty()) return Error("operands must have rank >= 1, got " + shapeStr(a) + " and " + shapeStr(b));
  Shape a2 = a.size() == 1 ? Shape{1, a[0]} : a;
  Shape b2 = b.size() == 1 ? Shape{b[0], 1} : b;
  int64_t k1 = a2.back(), k2 = b2[b2.size() - 2];
  if (k1 != k2)
    return Error("contracting dimensions differ: " + shapeStr(a) + " has " + std::to_string(k1) + ", " + shapeStr(b) +
                 " has " + std::to_string(k2));
  Shape batchA(a2.begin(), a2.end() - 2), batchB(b2.begin(), b2.end() - 2);
  auto batch = broadcastShapes(batchA, batchB);
  if (!batch) return Error("batch dimensions " + shapeStr(batchA) + " and " + shapeStr(batchB) + " do not broadcast");
  Shape out = *batch;
  if (a.size() > 1) out.push_back(a2[a2.size() - 2]);
  if (b.size() > 1) out.push_back(b2.back());
  return out;
}

int64_t windowOutputSize(int64_t in, int64_t kernel, int64_t stride, int64_t padBegin, int64_t padEnd,
                         int64_t dilation) {
  // In 128 bits: the attributes may be any int64 values, and no step here may overflow. A size
  // beyond int64 saturates (the op table then rejects the type as too large).
  __int128 span = static_cast<__int128>(dilation) * (static_cast<__int128>(kernel) - 1) + 1;
  __int128 padded = static_cast<__int128>(in) + padBegin + padEnd;
  if (padded < span) return 0;
  __int128 size = (padded - span) / stride + 1;
  return size > INT64_MAX ? INT64_MAX : static_cast<int64_t>(size);
}

}  // namespace kiln
