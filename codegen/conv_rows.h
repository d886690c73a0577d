// Generated convolutions on the CPU: what oneDNN does not take (f64 convolutions; every one with
// KILN_CPU_LIBRARIES=off). Computed one output element at a time, a 3x3 conv over f64[2,32,28,28]
// took 5.1 ms against jax.jit's 0.5-0.7 (2-core Sapphire Rapids): every element loads its window's
// inputs and weights anew, and the sum over the window is a chain of dependent adds.
//
// Here a work item computes a block of outputs of one image and one output row: `rows` output
// channels by `columns` neighbouring output columns (a vector or two of f64 lanes), each output's
// sum in a vector lane, the block's sums in registers. Over the window (channel, ky, kx: the
// interpreter's order) each step loads a vector of x along the output row, one load serving every
// channel of the block, and one weight per channel, broadcast: rows x vectors fused multiply-adds
// for rows + vectors loads. A window row that falls into the padding is skipped for the whole
// block (iy is the same for every output of it); a column that does is masked off, its lane's sum
// kept as it was, so every output adds exactly the terms the interpreter adds, in its order, in
// one rounding each (multiplyAdd): the same bits. The group's elementwise ops are the epilogue,
// computed from the block's sums before the stores (element_emitter.h, emitCpuConvItem).
#pragma once

#include <optional>

#include "codegen/kernel_plan.h"

namespace kiln::codegen {

struct ConvRows {
  const Op* conv = nullptr;  // channels-first; x and w are inputs of the group
  Shape shape;               // the output's: [N, O, OH, OW]
  int64_t rows = 1;          // output channels per item (one group's: they share x)
  int64_t lanes = 1;         // f64 lanes of the target's vectors (the sums are double)
  int64_t vectors = 1;       // vectors of output columns per item
  int64_t columns() const { return lanes * vectors; }
  // Items: every image, block of `rows` channels, output row and block of columns.
  Shape grid() const;
  int64_t items() const { return numElements(grid()); }
};

// The vector sums a block keeps in registers: 16 of AVX-512's 32 vector registers (8 channels x 2
// vectors, or 16 x 1 where an output row fits one vector), 8 of AVX2's and SSE's 16 (4 x 2),
// leaving the rest for the row of x and the weights. (8 x 2 rather than 4 x 2 on AVX-512: the 3x3
// above 0.23 -> 0.19 ms, a 1x1 over f64[4,64,28,28] to 128 channels 0.54 -> 0.39.)
inline constexpr int64_t kCpuConvSumsWide = 16, kCpuConvSumsNarrow = 8;

// The layout of `group`, or nothing when it is not a loop kernel of one segment whose ops are one
// channels-first conv2d of two inputs followed by elementwise ops on its shape, or when its output
// rows are under two lanes long. `floatLanes`: the target's f32 lanes (TargetHooks::floatSumLanes).
std::optional<ConvRows> cpuConvRows(const KernelGroup& group, int floatLanes);

}  // namespace kiln::codegen
