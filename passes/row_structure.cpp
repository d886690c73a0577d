// analyzeRows: find the reductions' common rows/inner split, then check every use of a row value.
#include "passes/row_structure.h"

#include <algorithm>
#include <unordered_set>

#include "ir/shape_rules.h"

namespace kiln::passes {

Shape RowShape::full() const {
  Shape s = rows;
  s.insert(s.end(), inner.begin(), inner.end());
  return s;
}

bool isRowShape(const Shape& shape, const RowShape& row) {
  if (shape == row.rows) return true;
  Shape keep = row.rows;
  keep.insert(keep.end(), row.inner.size(), 1);
  return shape == keep;
}

bool isRowReducible(OpKind kind) {
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

namespace {

// The rows/inner split of a reduction over trailing axes, or nullopt.
std::optional<RowShape> reductionRows(const Op& op) {
  const Shape& shape = op.operand(0)->type().shape;
  if (op.kind() == OpKind::Argmax || op.kind() == OpKind::Argmin) {
    // One axis: rows when it is the last.
    auto axis = normalizeAxis(op.intAttr("axis"), static_cast<int>(shape.size()));
    if (!axis || *axis != static_cast<int>(shape.size()) - 1) return std::nullopt;
    return RowShape{Shape(shape.begin(), shape.end() - 1), Shape{shape.back()}};
  }
  const Attr* axesAttr = op.findAttr("axes");
  auto axes = reductionAxes(axesAttr ? axesAttr->getIntList() : std::nullopt, static_cast<int>(shape.size()));
  if (!axes.ok() || axes->empty()) return std::nullopt;
  std::vector<int> sorted = *axes;
  std::sort(sorted.begin(), sorted.end());
  int rank = static_cast<int>(shape.size());
  int k = static_cast<int>(sorted.size());
  for (int i = 0; i < k; ++i)
    if (sorted[static_cast<size_t>(i)] != rank - k + i) return std::nullopt;
  return RowShape{Shape(shape.begin(), shape.end() - k), Shape(shape.end() - k, shape.end())};
}

// Whether `user` reads the row value `v` (its operand) without leaving v's row.
bool keepsRow(const Op& user, const Value& v, const RowShape& row) {
  const Shape& out = user.result()->type().shape;
  bool outFull = out == row.full(), outRow = isRowShape(out, row);
  switch (user.info().cls) {
    case OpClass::Elementwise:
      // Same rank: broadcasting only stretches size-1 dims, so element (r, k) reads row r.
      return (outFull || outRow) && v.type().rank() == static_cast<int>(out.size());
    case OpClass::Layout:
      if (user.kind() == OpKind::Reshape) return outRow;
      if (user.kind() == OpKind::BroadcastTo) return (outFull || outRow) && v.type().rank() == static_cast<int>(out.size());
      return false;
    default: return false;
  }
}

}  // namespace

bool reducesTrailingDims(const Op& reduction) { return reductionRows(reduction).has_value(); }

std::optional<RowAnalysis> analyzeRows(const std::vector<const Op*>& ops) {
  std::optional<RowShape> row;
  for (const Op* op : ops) {
    OpClass cls = op->info().cls;
    if (cls == OpClass::Library || cls == OpClass::Region || cls == OpClass::Collective) return std::nullopt;
    if (cls != OpClass::Reduction) continue;
    if (!isRowReducible(op->kind())) return std::nullopt;
    auto r = reductionRows(*op);
    if (!r || (row && (r->rows != row->rows || r->inner != row->inner))) return std::nullopt;
    row = r;
  }
  if (!row || numElements(row->inner) < 2) return std::nullopt;

  // Values that depend on a reduction of the group: a row value is cached per row, a full one is
  // computed at (row, k). Either must only be read at its own row.
  std::unordered_set<const Value*> rowValues, fullValues;  // lookups only
  RowAnalysis analysis{*row, {}};
  Shape full = row->full();
  for (const Op* op : ops) {
    bool dependsOnRow = op->info().cls == OpClass::Reduction;
    for (const Value* v : op->operands()) {
      if (rowValues.count(v)) {
        if (!keepsRow(*op, *v, *row)) return std::nullopt;
      } else if (fullValues.count(v)) {
        bool sameIndex = op->info().cls == OpClass::Elementwise && op->result()->type().shape == full;
        if (!sameIndex && op->info().cls != OpClass::Reduction) return std::nullopt;
      } else {
        continue;
      }
      dependsOnRow = true;
    }
    if (!dependsOnRow) continue;
    const Shape& shape = op->result()->type().shape;
    if (isRowShape(shape, *row)) {
      rowValues.insert(op->result());
      analysis.rowOps.push_back(op);
    } else if (shape == full && op->info().cls != OpClass::Reduction) {
      fullValues.insert(op->result());
    } else {
      return std::nullopt;
    }
  }
  return analysis;
}

}  // namespace kiln::passes
