// columnTiles: which outputs of a loop segment come from column reductions.
#include "codegen/column_reduction.h"

#include <algorithm>
#include <unordered_set>

#include "codegen/element_emitter.h"  // reducedAxesOf
#include "codegen/host_threads.h"

namespace kiln::codegen {

namespace {

bool isReduce(OpKind kind) {
  switch (kind) {
    case OpKind::ReduceSum:
    case OpKind::ReduceMean:
    case OpKind::ReduceMax:
    case OpKind::ReduceMin:
    case OpKind::ReduceProd:
    case OpKind::Argmax:
    case OpKind::Argmin: return true;
    default: return false;
  }
}

// A reduce whose result has `shape` and whose operand's innermost axis, kept, is its result's
// innermost axis; over at least two elements (one is a copy, none raises an error).
bool isColumnReduction(const Op& op, const Shape& shape) {
  if (!isReduce(op.kind()) || op.result()->type().shape != shape) return false;
  const TensorType& x = op.operand(0)->type();
  ReducedAxes reduced = reducedAxesOf(op);
  if (x.rank() < 2 || reduced.axes.empty() || reduced.axes.back() == x.rank() - 1) return false;
  return reduced.count >= 2 && x.shape.back() == shape.back();
}

}  // namespace

std::optional<ColumnTiles> columnTiles(const KernelGroup& group, const Segment& segment) {
  const Shape& shape = segment.shape;
  if (group.kind != KernelKind::Loop || shape.empty() || shape.back() < 8) return std::nullopt;
  // The ops the segment's outputs are computed from.
  std::unordered_set<const Value*> cone;
  std::vector<const Value*> pending;
  for (size_t k : segment.outputs) pending.push_back(group.outputs[k]);
  while (!pending.empty()) {
    const Value* v = pending.back();
    pending.pop_back();
    const Op* op = v->definingOp();
    if (!cone.insert(v).second || !op || std::find(group.ops.begin(), group.ops.end(), op) == group.ops.end()) continue;
    for (const Value* operand : op->operands()) pending.push_back(operand);
  }
  ColumnTiles tiles;
  for (const Op* op : group.ops)
    if (cone.count(op->result()) && isColumnReduction(*op, shape)) tiles.reductions.push_back(op);
  if (tiles.reductions.empty()) return std::nullopt;
  tiles.columns = shape.back();
  tiles.rows = numElements(shape) / tiles.columns;
  while (tiles.tile > kMinColumnTile && tiles.items() < kColumnTileItemsPerThread * hostThreads()) tiles.tile /= 2;
  return tiles;
}

}  // namespace kiln::codegen
