// CPU row kernels over short rows take several rows side by side, one per vector lane. One row at
// a time, a row shorter than two vectors leaves the vectoriser nothing to widen: softmax over rows
// of 10 f32 spent ~180 instructions a row on scalar maxes, a scalar exp for the elements past one
// vector, a horizontal max and a sequential sum (f32[409600,10]: 6.2 ms, 24% of the copy
// bandwidth, where jax.jit took 2.6). So a work item is a block of `lanes` rows (16 f32 on
// AVX-512, 8 on AVX2): its inputs are moved into stack tiles transposed in registers (element k of
// the block's row r at tile[k * lanes + r]), the row's code runs in a loop over r with its own
// loops unrolled, which LLVM widens to one row per lane, and the outputs' tiles are transposed
// back and stored whole. Each lane runs its row's code unchanged, its sums in the same order as
// one row at a time.
#pragma once

#include <cstdint>
#include <vector>

#include <llvm/IR/IRBuilder.h>

#include "codegen/kernel_plan.h"

namespace kiln::codegen {

// How many rows one work item of the row kernel `group` computes side by side on a target whose
// vectors hold `lanes` f32: `lanes` where the rows are shorter than two vectors (2 to 2 * lanes - 1
// elements) but not exactly one, and there is at least one block of them; else 1.
int64_t rowBlockRows(const KernelGroup& group, int lanes);

// The vectors `in` (all of one type and width) read as one flat array of elements, permuted:
// element p of the result is element perm[p] of `in`. Each result vector is built by a chain of
// two-source shuffles, one per vector of `in` it draws from (AVX-512's vpermt2ps).
std::vector<llvm::Value*> permuteAcrossVectors(llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& in,
                                               const std::vector<int64_t>& perm);

// The permutation that turns `rows` rows of `columns` elements (row-major) into their columns
// (column-major: element k of row r lands at k * rows + r), and its inverse.
std::vector<int64_t> rowsToColumns(int64_t rows, int64_t columns);
std::vector<int64_t> columnsToRows(int64_t rows, int64_t columns);

}  // namespace kiln::codegen
