// Buffer assignment: where every intermediate value of a planned function lives in ONE arena, with
// values whose live ranges do not overlap sharing bytes. Computed once at compile time; a run (CPU
// or GPU) makes one arena allocation of arenaBytes() and addresses each value as base + offset.
//
// What gets a slot, per block plan (the function body or a region of a `map` / `while`):
//  - every value a step writes: a kernel group's results, a region op's results;
//  - a `while` body's arguments where the host copies the carried values into them every
//    iteration (whileBodyReadsCarriedInPlace is false);
//  - each region of a region step, as one slot holding that region's own arena (below).
// What does not: the function's parameters (the caller's memory), constant data (the
// executable's own buffers, made once: codegen::BlockPlan::constants), its results (their own
// buffers, handed to the caller: resultValues()), arguments of a `map` body and of a `while`
// cond, and of a `while` body that reads the carried values in place (the host points them at
// slices of the operands / at the carried values).
//
// Live ranges are in step indices of the block plan, both ends inclusive: from the step defining
// the value to the last step reading it. A region step reads everything its regions use from
// outside (at any depth), so such a value stays live for the whole region step. Within a region,
// the values its terminator yields (read by the host after the region ran) and the `while` body's
// arguments live until its end. Two slots share bytes only if their ranges are disjoint; as a
// kernel reads its inputs in the step that defines its outputs, an output never shares bytes with
// its own inputs, with one exception: a library kernel whose call adds a residual to its result
// (codegen::inPlaceResidual) writes its output over the residual where nothing reads the
// residual afterwards (a ResNet block's input at the block's last convolution), so that the
// call, which starts its output from the residual (oneDNN's sum post-op), need not copy it: the
// output's slot is the residual's, extended (BufferSlot::sameBytesAs).
//
// Regions: values defined inside a region are planned in that region's own arena (recursively),
// which is one slot of the enclosing arena, live for the region step only. A region runs many
// times (once per map slice or loop iteration) but one iteration at a time, so its values reuse
// the same bytes every iteration, and its whole arena is free for the enclosing block's values
// before and after the region step. A `while`'s cond and body get separate slots (both live at the
// step, so they never overlap): simple and safe with a GPU stream, at the cost of the smaller of
// the two.
//
// Packing is greedy by decreasing size (TFLite's "greedy by size", a simpler cousin of XLA's heap
// simulator): each slot goes into the smallest gap that fits between the slots already placed
// whose live ranges overlap its own, else above the highest of them.
#pragma once

#include <cstddef>
#include <memory>
#include <unordered_map>
#include <vector>

#include "codegen/kernel_plan.h"
#include "ir/ir.h"

namespace kiln {

// One buffer of a block plan's arena: a value, or the arena of one of its regions.
struct BufferSlot {
  const Value* value = nullptr;              // null for a region's arena
  const codegen::BlockPlan* region = nullptr;  // the region whose arena this is (value == null)
  size_t offset = 0;                         // in the block's arena, a multiple of the alignment
  size_t bytes = 0;                          // exact size (a value's byteSize, or the region's arenaBytes)
  int firstStep = 0, lastStep = 0;           // live range in the block plan's steps, inclusive
  int sameBytesAs = -1;                      // the slot (index in the block) whose bytes this one takes over
  // A slot at the end of the block (read by the host after its last step) has lastStep == steps.size().

  bool liveTogetherWith(const BufferSlot& o) const { return firstStep <= o.lastStep && o.firstStep <= lastStep; }
};

// The arena of one block plan (the function body or one region), and those of its regions.
struct BlockBufferPlan {
  const codegen::BlockPlan* plan = nullptr;
  size_t arenaBytes = 0;  // a multiple of the alignment; 0 when nothing is planned here
  std::vector<BufferSlot> slots;
  std::vector<std::unique_ptr<BlockBufferPlan>> regions;  // one per region slot, in slot order
};

// Whether the body of `whileOp` reads the loop-carried values in place: its arguments are the op's
// result buffers, as the cond's are, and what it yields is copied back once an iteration (an
// argument yielded in its own position not at all). True unless the body yields an argument in
// another position (`yield %b, %a` for arguments %a, %b): copied back one after the other, the
// first copy would overwrite what the second reads. Such a body gets copies of the carried values
// every iteration, its arguments slots of its own. Both runtimes follow this.
bool whileBodyReadsCarriedInPlace(const Op& whileOp);

class BufferPlan {
 public:
  static constexpr size_t kDefaultAlignment = 256;  // what cudaMalloc gives; plenty for AVX-512 too

  // Plans `plan`, a plan of `function` (codegen::planFunction). `alignment`: a power of two that
  // every offset is a multiple of (the arena's base must be aligned to it as well).
  static BufferPlan build(const Function& function, const codegen::BlockPlan& plan,
                          size_t alignment = kDefaultAlignment);

  size_t alignment() const { return alignment_; }
  // Bytes of the one arena a run allocates (with every region's arena nested inside).
  size_t arenaBytes() const { return root_->arenaBytes; }
  // What one buffer per value would take: every planned value's size rounded up to the alignment,
  // a region's values counted once (the per-value allocation the plan replaces also reused them
  // across iterations). Function results are in neither figure.
  size_t unsharedBytes() const { return unsharedBytes_; }

  // A planned value's byte offset from the arena's base (a region's values included: the offset
  // of its region's arena is added in). False if `v` has no slot (parameters, results, map and
  // cond arguments, values of other functions).
  bool has(const Value* v) const { return offsets_.count(v) != 0; }
  size_t offset(const Value* v) const;
  const std::unordered_map<const Value*, size_t>& offsets() const { return offsets_; }

  // The values the function returns that a step writes (each once, in return order): the runtime
  // gives each its own buffer, which becomes the caller's result. A returned parameter or
  // constant is not here (the runtime copies it).
  const std::vector<const Value*>& resultValues() const { return resultValues_; }

  // The function body's arena, with its slots and nested region arenas (for tests and reports).
  const BlockBufferPlan& root() const { return *root_; }

 private:
  size_t alignment_ = kDefaultAlignment;
  size_t unsharedBytes_ = 0;
  std::unique_ptr<BlockBufferPlan> root_;
  std::unordered_map<const Value*, size_t> offsets_;
  std::vector<const Value*> resultValues_;
};

}  // namespace kiln
