// Column reductions on the CPU: a reduction whose reduced axes leave its operand's innermost axis
// (a bias gradient's sum over the batch, a mean over the rows of a matrix). Computed one output
// at a time, each output walks down a column, one element per cache line, and LLVM's loop
// vectoriser, which widens only innermost loops, cannot widen the walk. A loop kernel's segment
// made of such outputs instead takes a tile of up to kColumnTile neighbouring outputs per work
// item: one accumulator per output, the reduced axes outside and the tile's columns inside
// (contiguous loads, vectorised), then the segment's outputs (the reductions' epilogues) from
// the accumulators (element_emitter.h, emitColumnTileItem); argmax and argmin keep each column's
// best key and its index (argmax down axis 0 of f32[1000,4096]: 12.4 ms, one element per cache
// line, before). GPU threads already walk neighbouring
// columns side by side, so only targets that ask for it (TargetHooks::tilesColumnReductions) do this.
#pragma once

#include <optional>
#include <vector>

#include "codegen/kernel_plan.h"

namespace kiln::codegen {

// Outputs per work item: 128 (512 bytes of an f32 row), narrowed down to 32 (two cache lines)
// while that leaves fewer than kColumnTileItemsPerThread work items for each of the runtime's
// threads (host_threads.h), so a bias gradient's [1024] still spreads over the cores (on 16
// threads, 32 items of 32 columns, where 128 would make 8). Narrow tiles cost bandwidth: each
// item reads two cache lines of a row, then jumps a row ahead (often a page), where hardware
// prefetchers stop; the column sum of f32[4096,1024] on 2 threads, 32 -> 128 columns a tile:
// 0.75 -> 0.58 ms.
inline constexpr int64_t kColumnTile = 128, kMinColumnTile = 32, kColumnTileItemsPerThread = 4;

struct ColumnTiles {
  // The reductions the segment's outputs are computed from at the segment's own shape whose
  // reduced axes leave the innermost one, in program order.
  std::vector<const Op*> reductions;
  int64_t rows = 0;     // the segment's elements over its innermost dim
  int64_t columns = 0;  // the segment's innermost dim
  int64_t tile = kColumnTile;  // outputs per work item
  int64_t tilesPerRow() const { return (columns + tile - 1) / tile; }
  int64_t items() const { return rows * tilesPerRow(); }
};

// The tiles of `segment` of the loop kernel `group`, or nothing when no output of it is computed
// from a column reduction, or its rows are too short (under 8 columns) to vectorise.
std::optional<ColumnTiles> columnTiles(const KernelGroup& group, const Segment& segment);

}  // namespace kiln::codegen
