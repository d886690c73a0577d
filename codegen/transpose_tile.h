// Loop kernels that read an input transposed, so that their loads and stores disagree on the
// fastest-varying axis (transposes, NCHW <-> NHWC, permutes fused with elementwise ops). On the GPU
// such a kernel goes through a shared-memory tile: a block reads a 32 x 32 tile of the input with
// consecutive threads on consecutive input addresses, then writes the output with consecutive
// threads on consecutive output addresses, each half coalesced (element_emitter.h, emitTileItem);
// 4 neighbours per thread, as 128-bit vectors, where both tiled axes are a multiple of 4.
#pragma once

#include <optional>
#include <vector>

#include "codegen/kernel_plan.h"

namespace kiln::codegen {

struct TransposeTile {
  const Value* input = nullptr;   // the transpose's operand
  // The group input whose buffer holds it: the operand itself, or what reshapes (views: the same
  // elements in the same order) made the operand from, so the operand's linear index reads it.
  const Value* buffer = nullptr;
  // The value whose elements the tile holds, at the operand's indices: the operand itself, or, in
  // the CPU's tiles, the buffer where elementwise ops of the operand's shape make the operand from
  // it (a bias and a relu before the transpose back from channels-last), computed per element from
  // the tile as the outputs are.
  const Value* stacked = nullptr;
  const Op* transpose = nullptr;
  Shape shape;                   // the kernel's (only) segment shape: the output's
  int inputInnerAxis = 0;        // the output axis the input's innermost axis becomes (not the last)
  // Tiles of kTile x kTile over (inputInnerAxis, the last axis), for every index of the other axes.
  int64_t tiles() const;
};

inline constexpr int64_t kTile = 32;      // a tile's side: a warp's width
inline constexpr int64_t kTileRows = 8;   // rows of threads in a block: 8 x 32 = 256 threads

// Whether `op` is a transpose that moves its operand's innermost axis, so that reading its operand
// in the order of its result's elements would stride (what both the GPU tile and the CPU's bands
// of rows are for).
bool movesInnermostAxis(const Op& op);

// The CPU's tiles (TargetHooks::transposesInRegisters): a tile of kTile x kTile outputs per work
// item. Its input is moved into a tile on the stack in blocks of kRegisterBlock x kRegisterBlock,
// each read as kRegisterBlock vectors along the input's innermost axis, transposed in registers
// (shuffles) and written as vectors along the output's; then the outputs are computed and stored
// row by row from the stack tile, a loop the vectoriser widens (element_emitter.h,
// emitRegisterTileItem). Where both tiled axes hold at least one block: rows shorter than that go
// in bands of rows (cpu_target.cpp), whose short-row loop vectorises across rows instead.
// These also take elementwise ops before the transpose (transposeTile's `elementwiseBefore`).
inline constexpr int64_t kRegisterBlock = 8;
std::optional<TransposeTile> registerTransposeTile(const KernelGroup& group);

// The tile layout of `group`, or nothing when it is not a loop kernel of one segment whose only
// layout ops are one transpose moving the innermost axis of an input, or of a reshape (or a chain
// of them) of an input read by nothing else (a flatten's gradient unflattened), and whose other
// ops are elementwise on the output's shape; or it is too small (under 1,024 elements) to be
// worth a tile. With `elementwiseBefore`, the operand may also be made from an input by a chain of
// elementwise ops of the operand's shape, each reading the chain and otherwise only values with
// fewer elements (broadcast along the tile).
std::optional<TransposeTile> transposeTile(const KernelGroup& group, bool elementwiseBefore = false);

}  // namespace kiln::codegen
