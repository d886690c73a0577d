// Lowers kernel groups to LLVM IR with a target's hooks: the shared element emitter computes
// one output element of any op (elementwise, layout, reduction, matmul, convolution, pooling),
// and the target wraps it in its loop.
#pragma once

#include <llvm/IR/Module.h>

#include <optional>
#include <string>
#include <vector>

#include "codegen/kernel_plan.h"
#include "codegen/target.h"

namespace kiln::codegen {

// A run-time error a kernel can raise (a gather index out of range, a label outside [0, K), an
// integer division by zero). Kernels store 1 + the index of the error in the function's error
// table into their error word; the runtime turns it back into this message and location.
struct KernelError {
  std::string message;  // "gather: index out of range for axis 0 of size 5"
  SourceLoc loc;
};

// The target's elementsPerItem() for the widest element `group`'s kernel loads or stores: how many
// neighbouring elements a thread takes at once (4 for f32 on the GPU, 8 for bf16).
int64_t vectorWidth(const KernelGroup& group, const TargetHooks& target);

// The elements one work item of the loop kernel `group` computes: its vectorWidth(), except 1 for
// a kernel with a reduction in it. There each element reads along the reduced axes, and with one
// element per thread neighbouring threads read neighbouring addresses at every step
// (a column sum's warp reads 128 contiguous bytes); four per thread would stride them by four.
int64_t elementsPerItem(const KernelGroup& group, const TargetHooks& target);

// The threads that share one work item of `group` on `target`: a row's lanes (rowLanes), a
// block for a tiled transpose (transpose_tile.h), else 1. The runtime launches blocks whose size
// is a multiple of it.
int lanesPerItem(const KernelGroup& group, const TargetHooks& target);

// A loop kernel may compute a pool window's columns per item in `segment`: where it holds a max
// pool's backward pass over disjoint, unpadded windows whose stride along the last axis, k > 1,
// divides the rows (and reads no input transposed): k, else 1. The window's reads and writes are
// then interleaved groups of k, which the CPU's loop vectoriser widens; one element per item reads
// its window through an index divided by the stride, which it can only gather (the CNN training
// step's 2x2 pool gradient, [32,32,32,32] f32 on a 2-core Zen 3: 1.41 -> 0.42-0.56 ms).
int64_t poolWindowColumns(const KernelGroup& group, const Segment& segment);
// poolWindowColumns where `target` loops pool windows (TargetHooks::loopsPoolWindows) and loops
// `group` part by part, else 1.
int64_t windowColumnsOf(const KernelGroup& group, const Segment& segment, const TargetHooks& target);
// Where a row of `segment` changes course (ItemPart::columnBreaks): the edges along the innermost
// axis of each pad and of each concat on that axis computed at the segment's shape, ascending,
// inside (0, the row's length); none where there would be more than kMaxColumnBreaks. Each run
// between them is its own loop, in which a pad's or concat's choice is the same for every column,
// so LLVM folds it away: plain vector loads where one loop had masked ones for every vector (on a
// 2-core Zen 3, alternating binaries: pad of f32[32,64,56,56] to 58x58 4.4 -> 1.3 ms, jax.jit
// 1.4; a concat of two f32[2048,1024] along the rows 1.2 -> 0.7 ms).
inline constexpr size_t kMaxColumnBreaks = 8;
std::vector<int64_t> columnBreaksOf(const KernelGroup& group, const Segment& segment);

// The row the CPU loops a segment of the loop kernel `group` in (ItemPart::rowLength): the
// segment's innermost dim, or its trailing dims together where the kernel cannot tell those apart:
// every op is elementwise (or a broadcast_to) and every value it reads either spans all of them or
// is broadcast along all of them. A relu of f32[32,64,56,56], or a bias over its channels, then
// runs in rows of 3136: in rows of 56, each row's vector loop left 24 scalar iterations whose
// stores landed on the lines of its streaming ones (11.2 ms; 1.1 ms as f32[2048,3136]).
int64_t loopRowLength(const KernelGroup& group, const Segment& segment);

// A transposed segment whose transposes all move the input's innermost axis, of at most
// kMaxMovedExtent elements, to the same output dim, and make the output's innermost axis of the
// input's next one (an image's channels moved first, [H,W,3] -> [3,H,W]; [N,3] -> [3,N]):
// {that axis's extent, the output elements between neighbours along it}. Each input row of a few
// elements then feeds as many output rows; the CPU loops over them in the input's order
// (ItemPart::movedExtent). In bands of output rows, one column at a time, every such input row
// was read once per output row it feeds ([1024,1024,3] -> [3,1024,1024] f32: 10.6 ms, jax.jit
// 0.9).
inline constexpr int64_t kMaxMovedExtent = 4;
struct MovedAxis {
  int64_t extent = 0, stride = 0;
};
std::optional<MovedAxis> movedShortAxisOf(const KernelGroup& group, const Segment& segment);

// The work items of `group`'s kernel on `target`: rows, tiles, or groups of elementsPerItem() elements.
// The runtime launches (CPU: splits) exactly this many.
int64_t numWorkItems(const KernelGroup& group, const TargetHooks& target);
// The most output elements one of those work items computes, for the CPU's chunk sizes: a loop
// kernel's elementsPerItem(), or a column tile's width (column_reduction.h); 1 for rows and tiles
// (the runtime sizes those itself).
int64_t outputsPerWorkItem(const KernelGroup& group, const TargetHooks& target);

// Emits one kernel per group of `plan` (nested region plans included) into `module`, whose
// target triple and data layout the caller has set. Returns the errors the kernels can raise.
std::vector<KernelError> emitKernels(llvm::Module& module, TargetHooks& target, const BlockPlan& plan);

}  // namespace kiln::codegen
