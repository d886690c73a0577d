// CPU row kernels fetch the next row's inputs while they work on the current row. A row kernel
// reads its row from memory in its first pass (a softmax's max) and from the cache in the later
// ones (the exp and sum, the outputs), where the core computes and the memory bus, as far as this
// thread is concerned, idles: the hardware prefetchers follow the first pass's stream and stop
// when it stops. So the second pass over each row also issues prefetches for the next row's
// elements, a block of them before each block of the pass, and the next row's first pass finds
// them in the cache: the memory traffic of one row overlaps the arithmetic of the one before.
// Softmax over f32[2048,2048] on a 2-core Zen 3: 1.88 -> 1.58 ms, layer norm 0.88 -> 0.74 ms
// (alternating with the binary before, medians of 5).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "codegen/kernel_plan.h"

namespace kiln::codegen {

// Bytes of the widest prefetched input per block of the second pass: its prefetches (64 lines)
// go out together, then the block is computed. Softmax over rows of 2048 f32 ran as well with
// blocks of 2 KiB and 4 KiB; blocks of 1 KiB made the pass's inner loop one of at most 256 trips,
// which loop_hints.h keeps rolled, and a layer norm's variance pass ran slower so (0.84 -> 1.08
// ms over [2048,2048]).
inline constexpr int64_t kPrefetchBlockBytes = 4096;

// Rows shorter than this (of the widest prefetched input) fetch nothing: the hardware prefetchers
// follow a stream of short rows across them, and the prefetches only cost (softmax over rows of 10
// f32: 0.61 -> 0.74 ms with them; rows of 32 to 128 within noise either way).
inline constexpr int64_t kMinPrefetchRowBytes = 1024;

struct RowPrefetch {
  std::vector<size_t> inputs;  // indices into group.inputs: those read whole, along the rows
  int64_t blockElements = 0;   // elements of a row per block: kPrefetchBlockBytes of the widest
};

// What a row kernel fetches ahead: its inputs of the full shape (rows ++ inner) that only
// elementwise ops and the row's reductions read, so each is read at the element's own index,
// row after row (an input a layout op reads may be read in any order); nothing where there is no
// such input or its rows are shorter than kMinPrefetchRowBytes.
std::optional<RowPrefetch> rowPrefetchFor(const KernelGroup& group);

}  // namespace kiln::codegen
