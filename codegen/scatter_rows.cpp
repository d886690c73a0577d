// Which kernels are a generated gather_backward with an elementwise epilogue, and their blocks of
// output rows (scatter_rows.h).
#include "codegen/scatter_rows.h"

#include <algorithm>

#include "ir/shape_rules.h"

namespace kiln::codegen {

Shape ScatterRows::grid() const {
  auto ceilDiv = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  return {outer, ceilDiv(n, rows), ceilDiv(inner, columns)};
}

std::optional<ScatterRows> scatterRows(const KernelGroup& group, int64_t sums, int64_t columns) {
  const Op* op = heroWithElementwiseEpilogue(group, OpKind::GatherBackward, 2);
  if (!op) return std::nullopt;
  ScatterRows layout;
  layout.op = op;
  layout.shape = group.segments[0].shape;
  const Shape& shape = layout.shape;
  layout.axis = *normalizeAxis(op->intAttr("axis"), static_cast<int>(shape.size()));
  const auto axis = static_cast<size_t>(layout.axis);
  layout.outer = numElements(Shape(shape.begin(), shape.begin() + layout.axis));
  layout.n = shape[axis];
  layout.inner = numElements(Shape(shape.begin() + layout.axis + 1, shape.end()));
  if (layout.n == 0 || layout.inner == 0) return std::nullopt;  // nothing to add up
  layout.numIndices = numElements(op->operand(1)->type().shape);
  layout.columns = std::min(layout.inner, columns);
  layout.rows = std::max<int64_t>(1, std::min(layout.n, sums / layout.columns));
  return layout;
}

}  // namespace kiln::codegen
