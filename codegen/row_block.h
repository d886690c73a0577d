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

// Row kernels of fewer elements keep one row at a time: a block's unrolled rows take longer to
// compile (a classifier's loss over f32[32,10]: 8 ms more for its examples/*.kiln), and so few
// rows run in microseconds either way.
inline constexpr int64_t kMinRowBlockElements = 8192;

// How many rows one work item of the row kernel `group` computes side by side on a target whose
// vectors hold `lanes` f32: `lanes` where the rows are shorter than two vectors (2 to 2 * lanes - 1
// elements; exactly one only where the kernel writes full rows), there is at least one block of
// them and kMinRowBlockElements in all; else 1.
int64_t rowBlockRows(const KernelGroup& group, int lanes);

// The vectors `in` (all of one type and width) read as one flat array of elements, permuted:
// element p of the result is element perm[p] of `in`. Each result vector is built by a chain of
// two-source shuffles, one per vector of `in` it draws from (AVX-512's vpermt2ps).
std::vector<llvm::Value*> permuteAcrossVectors(llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& in,
                                               const std::vector<int64_t>& perm);

// `rows` rows (a power of two) of `vectors.size()` elements each, row-major in vectors of `rows`
// elements, moved into their columns (column k: vector k, row r in lane r), and back. The
// transpose of a rows x n matrix is the perfect shuffle (interleaving the array's two halves)
// applied log2(rows) times, each output vector of a stage two input vectors shuffled: 4n shuffles
// for 16 rows of n, where building each column from every vector it draws on took n * min(n, 15)
// (rows of 31: 465 shuffles each way, 237 ms to compile the softmax kernel). The way back is the
// inverse, log2(rows) deinterleaves.
std::vector<llvm::Value*> rowsToColumns(llvm::IRBuilder<>& b, std::vector<llvm::Value*> vectors, int64_t rows);
std::vector<llvm::Value*> columnsToRows(llvm::IRBuilder<>& b, std::vector<llvm::Value*> vectors, int64_t rows);

}  // namespace kiln::codegen
