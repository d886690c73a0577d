// The row structure of a group of ops: what lets the fusion pass put a reduction and its
// consumers (softmax's normalisation, layer norm's scale and shift) in one kernel, and lets
// codegen emit that kernel one row per work item, computing each row's reductions once.
#pragma once

#include <optional>
#include <vector>

#include "ir/ir.h"

namespace kiln::passes {

// A group has a row structure when every reduction in it (reduce_sum/mean/max/min/prod)
// combines exactly the trailing `inner` dims of an operand of shape rows ++ inner, and every
// "row value" (a value that depends on such a reduction and has shape rows ++ [1,..] or rows) is
// only read in ways that keep its row: by elementwise ops of the same rank, by broadcast_to, or by
// a reshape between the two row shapes. Other values of the group are computed from the kernel's
// inputs at whatever index they are read, so any shape is fine for them.
struct RowShape {
  Shape rows, inner;
  Shape full() const;
};

struct RowAnalysis {
  RowShape shape;
  std::vector<const Op*> rowOps;  // ops whose result is a row value, in program order (reductions included)
};

// The row structure of `ops` (program order; values they use that none of them defines are the
// kernel's inputs), or nullopt when there is none: no reduction, reductions over other axes,
// disagreeing shapes, a row value read at another row's index, or rows of fewer than 2 elements.
std::optional<RowAnalysis> analyzeRows(const std::vector<const Op*>& ops);

// Whether `reduction` (a row-reducible op) combines trailing dims only: a row kernel's reduction.
bool reducesTrailingDims(const Op& reduction);

// Whether `shape` is the shape of one value per row: rows ++ [1]*|inner| or rows.
bool isRowShape(const Shape& shape, const RowShape& row);

// reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod, and argmax/argmin over the last
// axis: the reductions a row kernel combines across a row (argmax as (index, value) pairs).
bool isRowReducible(OpKind kind);

}  // namespace kiln::passes
