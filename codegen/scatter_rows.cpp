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

std::optional<ScatterRows> cpuScatterRows(const KernelGroup& group) {
  if (group.kind != KernelKind::Loop || group.segments.size() != 1) return std::nullopt;
  ScatterRows layout;
  layout.shape = group.segments[0].shape;
  for (const Value* out : group.outputs)
    if (out->type().shape != layout.shape) return std::nullopt;
  for (const Op* op : group.ops) {
    if (op->kind() == OpKind::GatherBackward && !layout.op) layout.op = op;
    else if (op->info().cls != OpClass::Elementwise || op->result()->type().shape != layout.shape) return std::nullopt;
  }
  const Op* op = layout.op;
  if (!op || op->result()->type().shape != layout.shape) return std::nullopt;
  auto isInput = [&](const Value* v) { return std::find(group.inputs.begin(), group.inputs.end(), v) != group.inputs.end(); };
  if (!isInput(op->operand(0)) || !isInput(op->operand(1))) return std::nullopt;
  const Shape& shape = layout.shape;
  layout.axis = *normalizeAxis(op->intAttr("axis"), static_cast<int>(shape.size()));
  const auto axis = static_cast<size_t>(layout.axis);
  layout.outer = numElements(Shape(shape.begin(), shape.begin() + layout.axis));
  layout.n = shape[axis];
  layout.inner = numElements(Shape(shape.begin() + layout.axis + 1, shape.end()));
  if (layout.n == 0 || layout.inner == 0) return std::nullopt;  // nothing to add up
  layout.numIndices = numElements(op->operand(1)->type().shape);
  layout.columns = std::min(layout.inner, kScatterColumns);
  layout.rows = std::max<int64_t>(1, std::min(layout.n, kScatterSums / layout.columns));
  return layout;
}

}  // namespace kiln::codegen
