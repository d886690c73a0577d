// Generated gather_backward (an embedding's gradient: zeros with dy's slices added at
// the rows gather read). Computed one output element at a time, every element scanned all the
// indices for the ones naming its row: for a [32000,256] gradient from 16384 indices, 134 billion
// comparisons, minutes a run (2-core Sapphire Rapids), where jax.jit's scatter-add takes
// milliseconds.
//
// Here a work item computes a block of `rows` output rows by `columns` columns: it zeroes their
// sums (double, on the stack), walks the indices once in order, and for each index naming one of
// its rows adds that index's slice of dy to the row's sums, a vectorised loop along the columns.
// Every output element gets the interpreter's terms in its order (index order, from 0.0, in
// double): the same bits. Then the group's elementwise epilogue and the stores (storeSumBlock).
// The indices are scanned once per item, kScatterScan at a time by a vector compare: items x
// indices / 16 compares, not elements x indices; item 0 checks their range.
#pragma once

#include <optional>

#include "codegen/kernel_plan.h"

namespace kiln::codegen {

struct ScatterRows {
  const Op* op = nullptr;  // the gather_backward; dy and the indices are inputs of the group
  Shape shape;             // the output's
  int64_t axis = 0;
  int64_t outer = 1, n = 1, inner = 1;  // the output as [outer, n, inner] around the axis
  int64_t numIndices = 0;
  int64_t rows = 1, columns = 1;        // per item
  // Items: every outer index, block of rows and block of columns.
  Shape grid() const;
  int64_t items() const { return numElements(grid()); }
};

// A block's sums on the stack: at most this many doubles (128 KiB), a row's columns at most
// kScatterColumns of them.
inline constexpr int64_t kScatterSums = 16384, kScatterColumns = 4096;
// Indices compared with a block's rows at once, by one vector compare.
inline constexpr int64_t kScatterScan = 16;

// The layout of `group` with blocks of at most `sums` sums, rows of at most `columns` of them, or
// nothing when it is not a loop kernel of one segment whose ops are one gather_backward reading
// two of the group's inputs, followed by elementwise ops on its shape.
std::optional<ScatterRows> scatterRows(const KernelGroup& group, int64_t sums, int64_t columns);
// The CPU's blocks: kScatterSums sums, rows of kScatterColumns.
inline std::optional<ScatterRows> cpuScatterRows(const KernelGroup& group) {
  return scatterRows(group, kScatterSums, kScatterColumns);
}
// The GPU's: a thread's item is one row of kGpuScatterColumns columns (its sums in local memory,
// cached in L1), so each thread walks the indices once for that many outputs, where an element
// per thread walked them once per output.
inline constexpr int64_t kGpuScatterColumns = 32;
inline std::optional<ScatterRows> gpuScatterRows(const KernelGroup& group) {
  return scatterRows(group, kGpuScatterColumns, kGpuScatterColumns);
}

}  // namespace kiln::codegen
