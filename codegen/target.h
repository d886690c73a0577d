// What the shared kernel emitter asks of a target (the host CPU or NVPTX): math functions and
// the kernel's entry point with its loop over output elements. Everything else is shared.
#pragma once

#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <string>
#include <vector>

namespace kiln::codegen {

// The CPU's cache line (x86-64's, and AArch64's usual one).
inline constexpr int64_t kCpuCacheLineBytes = 64;

struct KernelGroup;

// Threads of a GPU warp: shuffleXor reaches across this many lanes; wider rows also go through
// shared memory (ElementEmitter::combineWarps).
inline constexpr int kWarpSize = 32;

// Float math the element emitter cannot express as plain LLVM instructions.
enum class MathFn { Exp, Log, Log1p, Sqrt, Tanh, Erf, Sin, Cos, Asin, Acos, Atan, Pow, Floor, Ceil, Fabs };

// Emits the body for one work item: `buffers` are the kernel's buffer pointers (group inputs, then
// outputs), `status` points at the i32 error word, `item` is the i64 work item index and `lane`
// the i64 index of this thread among the `lanes` threads that share the item (0 when lanes is 1).
// Where the target loops part by part (emitKernel's `parts`), `part` is the part's index and `item`
// the index within that part; else `part` is -1 and `item` counts all items. `column`, where the
// target loops over rows of a part's items, is item's index within its row (item % rowLength, as
// a loop counter); else null.
using WorkItemBodyFn = std::function<void(llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& buffers,
                                          llvm::Value* status, llvm::Value* item, llvm::Value* lane,
                                          llvm::Value* column, int part)>;

// A run of work items of one shape: `items` of them, in rows of `rowLength` (0: no rows).
struct ItemPart {
  int64_t items = 0;
  int64_t rowLength = 0;
  // The part's elements are computed through a transpose that moves an input's innermost axis:
  // looping row by row would read that input with a stride, so the CPU goes in bands of rows.
  bool transposed = false;
  // Elements per item, side by side in a row (windowColumnsOf in kernel_emitter.h): `items` and
  // `rowLength` count items, and a row holds rowLength * columnsPerItem elements.
  int64_t columnsPerItem = 1;
  // Where the transpose moves an input's innermost axis of a few elements (movedShortAxisOf in
  // kernel_emitter.h): its extent, and how many elements apart the output holds neighbours along
  // it (0: no such axis). The CPU then numbers the part's items in the input's order.
  int64_t movedExtent = 0, movedStride = 0;
  // Columns where the code's course changes along a row (columnBreaksOf in kernel_emitter.h: a
  // pad's or a concat's edges on the innermost axis), ascending, inside (0, rowLength). The CPU
  // loops over each run of columns between them separately.
  std::vector<int64_t> columnBreaks;
};

class TargetHooks {
 public:
  virtual ~TargetHooks() = default;
  virtual std::string name() const = 0;  // "cpu" or "nvptx"
  // Calls the target's f32 or f64 implementation of `fn` (libm or LLVM intrinsics on the CPU,
  // libdevice's __nv_* on NVPTX). All args have the same float type.
  virtual llvm::Value* emitMath(llvm::IRBuilder<>& b, MathFn fn, llvm::ArrayRef<llvm::Value*> args) = 0;
  // Defines the kernel `name` in `module` with this target's ABI for `numBuffers` buffers and an
  // error word, and a loop over work items [0, numItems) that runs `body` once per item on each of
  // `lanes` threads (1, or rowLanes() for row kernels). All lanes of an item run the same code, so
  // they may exchange values with shuffleXor (and, across warps, through sharedArray).
  // `parts` (empty, or items [0, numItems) as parts one after another) let a target loop part by
  // part, and within a part row by row, passing the part and each item's column: the CPU does, so
  // that a loop holds one shape's code without branches, never crosses a row, and reads inputs
  // broadcast along rows contiguously (all of which lets it vectorise).
  virtual llvm::Function* emitKernel(llvm::Module& module, const std::string& name,
                                     const std::vector<uint64_t>& bufferAlignments, int64_t numItems, int lanes,
                                     const std::vector<ItemPart>& parts, const WorkItemBodyFn& body) = 0;
  // How many consecutive elements a work item of a loop kernel computes, given the widest element
  // (in bytes) it loads or stores: on the GPU as many as fill 128 bits, 4 to 8 (f32: 4, bf16: 8),
  // so loads and stores are as wide as they go; 1 on the CPU, whose loop vectoriser widens the
  // loop itself.
  virtual int elementsPerItem(size_t widestElementBytes) const = 0;
  // A load of `width` consecutive elements of `type` at `ptr` (aligned to `align` bytes) as one
  // vector, which the target keeps whole (NVPTX: ld.global.nc.v4, even when the elements' uses
  // end up in different blocks).
  virtual llvm::Value* loadVector(llvm::IRBuilder<>& b, llvm::Type* type, llvm::Value* ptr, unsigned width,
                                  uint64_t align) {
    return b.CreateAlignedLoad(llvm::FixedVectorType::get(type, width), ptr, llvm::Align(align));
  }
  // The bits (i16) of the f32 `v` rounded to bf16, nearest even, by one instruction where the
  // target has one; nullptr where it has none, and the element emitter rounds with integer code.
  virtual llvm::Value* roundToBFloat16(llvm::IRBuilder<>& /*b*/, llvm::Value* /*v*/) { return nullptr; }
  // The f32 whose bits are the bf16 `bits` (i16) followed by 16 zeros, by one instruction where
  // the target has one; nullptr where the element emitter shifts the bits itself.
  virtual llvm::Value* widenBFloat16(llvm::IRBuilder<>& /*b*/, llvm::Value* /*bits*/) { return nullptr; }
  // Whether llvm.maximum/minimum on f32 (NaN wins, -0 below +0) is one instruction (NVPTX sm_80
  // and later: max.NaN.f32); where it is not, float max and min are compares and selects.
  virtual bool hasNaNPropagatingMinMax() const { return false; }
  // How many threads share one row of the row kernel `group`: 1 on the CPU; on the GPU a warp (32),
  // or a whole block for rows too few for their warps to fill the device (nvptx_target.h).
  virtual int rowLanes(const KernelGroup& group) const = 0;
  // How many rows of the row kernel `group` one work item computes side by side, one per vector
  // lane (row_block.h): on the CPU, rows shorter than two vectors; 1 elsewhere.
  virtual int64_t rowsPerItem(const KernelGroup& /*group*/) const { return 1; }
  // The value `v` (i32, i64, float or double) of the lane whose index is this lane's XOR
  // `laneMask`, for butterfly reductions across a warp's lanes. Only called when rowLanes() > 1.
  virtual llvm::Value* shuffleXor(llvm::IRBuilder<>& b, llvm::Value* v, int laneMask) = 0;
  // Whether loop kernels that read an input transposed (transpose_tile.h) or compute a matmul
  // (matmul_tile.h) go through shared-memory tiles: on the GPU, whose loads and stores are
  // coalesced per warp and whose blocks share a fast scratch memory.
  virtual bool sharedMemoryTiles() const { return false; }
  // Whether loop kernels that read an input transposed go tile by tile, moving the input into a
  // stack tile in blocks transposed in vector registers (transpose_tile.h, registerTransposeTile):
  // on the CPU, where element by element every store (or load) would land in another cache line.
  virtual bool transposesInRegisters() const { return false; }
  // Whether loop kernels compute the outputs of a column reduction a tile at a time, reduced axes
  // outside and the tile's columns inside (column_reduction.h): on the CPU, whose vectoriser only
  // widens innermost loops. GPU threads of a warp walk neighbouring columns side by side already.
  virtual bool tilesColumnReductions() const { return false; }
  // Whether a loop kernel holding a max pool's backward pass over disjoint windows computes one
  // window's columns per item (windowColumnsOf in kernel_emitter.h): on the CPU, where one
  // element per item reads its window's columns through an index divided by the stride, which
  // the vectoriser can only gather; a window's columns per item read and write them as
  // interleaved groups it widens. GPU threads gather from cache lines their warp shares anyway.
  virtual bool loopsPoolWindows() const { return false; }
  // Whether a row kernel's second pass over each row prefetches the next row's inputs
  // (row_prefetch.h): on the CPU, whose thread runs a row's passes one after another. A GPU
  // block's warps keep the memory system busy by their number.
  virtual bool prefetchesNextRow() const { return false; }
  // Whether float sums may be reassociated (still in f64): on the CPU, so that the loop vectoriser
  // keeps several partial sums in SIMD lanes; the order is fixed by the compiled code, so runs stay
  // bit-identical. The GPU orders its sums itself (lanes, warps, split stages).
  virtual bool reassociatesSums() const { return false; }
  // Whether a reduce_sum {accumulate = f32} (docs/ir.md) keeps its sum in f32, a product feeding
  // it fused into each step: on the CPU, whose matrix-vector rows (matvec-as-rows) then take one
  // fma per vector of products, as a BLAS gemv. The GPU sums in double regardless.
  virtual bool sumsInF32WhereAllowed() const { return false; }
  // The f32 lanes of the vectors a loop of float sums should be widened to, or 0 for no hint (the
  // GPU). A sum of f32 elements accumulates in double, and LLVM's cost model widens such a loop to
  // the double's lanes, computing the elements (an exp, a tanh) at half width; the hint
  // (llvm.loop.vectorize.width) keeps them at full width, the sum in two double vectors.
  virtual int floatSumLanes() const { return 0; }
  // How many vectors an iteration of a loop of `trips` iterations should take at once (its
  // interleave count; 0: the compiler's own choice), given how many inline transcendental chains
  // the target had emitted before the loop's body (`mathBefore`, from inlineMathEmitted()) and
  // after it: codegen/loop_hints.h. The GPU has no vector loops: 0.
  virtual int loopInterleave(int64_t /*trips*/, int64_t /*mathBefore*/) const { return 0; }
  virtual int64_t inlineMathEmitted() const { return 0; }
  // Whether a generated kernel reading `readBytes` and writing `writtenBytes` writes an output of
  // `outputBytes` with streaming (non-temporal) stores: streaming_stores.h. Never on the GPU.
  virtual bool streamsOutput(int64_t /*outputBytes*/, int64_t /*readBytes*/, int64_t /*writtenBytes*/) const { return false; }
  // GPU only: an array of `count` elements of `type` in shared memory, one per block, owned by the
  // kernel being emitted (named <kernel>.<what>); and a barrier every thread of the block reaches.
  virtual llvm::GlobalVariable* sharedArray(llvm::IRBuilder<>& b, llvm::Type* type, uint64_t count,
                                            const std::string& what) = 0;
  virtual void syncBlock(llvm::IRBuilder<>& b) = 0;
};

}  // namespace kiln::codegen
