// Generated matmuls on the GPU as shared-memory tiles (what runs where cuBLASLt does not: integer
// and f64 matmuls, shapes it refuses, machines without it, the simulator). One block computes a
// kTile x kTile block of outputs, each of its 256 threads four of them, stepping through K in
// tiles of A and B read once into shared memory with consecutive threads on consecutive
// addresses: each element of A and B is read from global memory once per tile of outputs instead
// of once per output. Sums run in k order in f64 (integers in i64), as the interpreter's, so the
// result is the same bits. The group's other ops (a bias, an activation) are the epilogue,
// computed from the tile's results before the store (element_emitter.h, emitMatmulTileItem).
#pragma once

#include <optional>

#include "codegen/kernel_plan.h"
#include "codegen/transpose_tile.h"  // kTile, kTileRows

namespace kiln::codegen {

struct MatmulTile {
  const Op* matmul = nullptr;  // both operands of rank 2 or more
  // The group inputs the operands are read from: each the operand itself, or the input of a
  // transpose of its last two axes in the group (transposed = true), read in place.
  const Value* stored[2] = {nullptr, nullptr};
  bool transposed[2] = {false, false};
  Shape shape;                 // the output's: batch..., M, N
  int64_t k = 0;
  // Blocks: every batch index times the tiles of [M, N].
  int64_t tiles() const;
  // The output's batch dims, and operand i's (which broadcast to the output's).
  Shape batch() const { return Shape(shape.begin(), shape.end() - 2); }
  Shape operandBatch(size_t i) const {
    const Shape& s = matmul->operand(i)->type().shape;
    return Shape(s.begin(), s.end() - 2);
  }
};

// The tile layout of `group`, or nothing when it is not a loop kernel of one segment whose ops
// are one matmul of two inputs (no vector operand; either may be transposed in the group)
// followed by elementwise ops on its shape, or when M or N is under kTile.
std::optional<MatmulTile> matmulTile(const KernelGroup& group);

// Generated matmuls on the CPU (what oneDNN does not take: f16, f64, integers, bf16 on CPUs
// without AVX-512, KILN_CPU_LIBRARIES=off): a work item computes kCpuMatmulColumns neighbouring
// outputs of cpuMatmulItemRows() rows (kCpuMatmulRows, halved down to kCpuMatmulMicroRows while
// that leaves fewer than kCpuMatmulItemsPerThread items for each of the runtime's threads:
// host_threads.h), an accumulator each on the stack. Over whole columns it goes 8
// (two vectors) at a time, K in blocks of kCpuMatmulPackedK rows of B whose 8 columns are packed,
// widened, into a contiguous stack strip, which every group of kCpuMatmulMicroRows rows of the
// item then runs over with its 4 x 2 vector sums in registers: B's rows N elements apart, a power
// of two bytes, share cache sets, and the strip serves 64 rows rather than 4 (on the 2-core Zen 3,
// f64 [512,512] x [512,512]: items of 4 rows with no strip 6.8-7.7 ms, see docs/codegen.md). The
// last block of columns, and the rows past the last group of 4, accumulate on the stack with K
// outside and the columns inside (B read a row at a time, each element serving every row of the
// group). Sums run in k order in f64 (integers in i64), as the interpreter's, so the result is the
// same bits. Same layouts as matmulTile, for N of 8 or more.
inline constexpr int64_t kCpuMatmulColumns = 64, kCpuMatmulRows = 64, kCpuMatmulMicroRows = 4, kCpuMatmulPackedK = 256,
                         kCpuMatmulItemsPerThread = 4;
std::optional<MatmulTile> cpuMatmulRows(const KernelGroup& group);
// The rows of a work item of a CPU matmul (above), from kCpuMatmulRows down.
int64_t cpuMatmulItemRows(const MatmulTile& tile);
// Work items of a CPU matmul: every batch index times the blocks of rows and of columns.
int64_t cpuMatmulItems(const MatmulTile& tile);

}  // namespace kiln::codegen
