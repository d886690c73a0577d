// The kernel plan: a function split into the steps the runtime executes in order. A kernel step
// is a group of ops lowered to one generated kernel: a `fusion` op's body (passes/fusion.cpp) or
// a single op; a region step is a `map` or `while`, which the host drives over the plans of its
// regions.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "passes/row_structure.h"

namespace kiln::codegen {

// How a kernel's work is laid out.
//  - Loop: work items walk the elements of the outputs. Outputs of the same shape form one
//    segment, computed together per element (multi-output fusion); outputs of different shapes
//    (horizontal fusion of independent updates) take the segments one after another.
//  - Row: every output is a "full" value of shape rows ++ inner or a "row value" (one per row,
//    shape rows ++ [1,..] or rows), and the group's reductions combine exactly the inner dims. A
//    work item is one row: it computes the row values once (reductions first), then the full
//    values of the row (softmax, layer norm, log_softmax as one kernel).
enum class KernelKind { Loop, Row };

struct Segment {
  Shape shape;                  // of every output in the segment
  std::vector<size_t> outputs;  // indices into KernelGroup::outputs
};

// Ops lowered together into one kernel.
struct KernelGroup {
  std::string name;                  // kernel symbol, e.g. "k3_row_reduce_max": plan index + what it does
  KernelKind kind = KernelKind::Loop;
  std::vector<const Op*> ops;        // program order (a fusion's body without its yield)
  std::vector<const Value*> inputs;  // values defined outside the group that it reads, in argument order
  std::vector<const Value*> outputs; // values the kernel computes and stores, in argument order (after the inputs)
  std::vector<const Value*> results; // the values outputs[k] become for the rest of the function (the fusion's results)
  std::vector<Segment> segments;     // Loop
  Shape rows, inner;                 // Row: full values are rows ++ inner
  std::vector<const Op*> rowOps;     // Row: ops computing row values, once per row, in program order
  const Op* fusion = nullptr;        // the fusion op the group came from, or null for a single op

  int64_t numRows() const { return kiln::numElements(rows); }
  int64_t rowLength() const { return kiln::numElements(inner); }
  // Row kernels: whether `v` holds an element per element of the rows (a full value, as softmax's
  // output), not one per row.
  bool spansRows(const Value* v) const { return v->type().numElements() == numRows() * rowLength(); }
  // Elements the kernel stores (all outputs together).
  int64_t numOutputElements() const;
  // The bytes of its inputs and of its outputs, each buffer once.
  uint64_t bytesRead() const;
  uint64_t bytesWritten() const;
};

struct BlockPlan;

// A `map` or `while` op, run by the host over compiled plans of its regions.
struct RegionStep {
  const Op* op;
  std::vector<std::unique_ptr<BlockPlan>> regions;  // map: {body}; while: {cond, body}
};

struct Step {
  enum class Kind { Kernel, Region } kind;
  int group = -1;        // Kernel: index into BlockPlan::groups
  RegionStep region;     // Region
};

// The plan of one block (a function body or a region).
struct BlockPlan {
  const Block* block;
  std::vector<KernelGroup> groups;
  std::vector<Step> steps;
  // Constant data defined in this block (ir/constant_data.h): no step computes them; the runtime
  // holds each in a buffer made once per executable, which kernels read as an input.
  std::vector<const Value*> constants;
  // Every kernel group of this plan and of nested region plans, depth first (for emitting one
  // LLVM module per function).
  std::vector<const KernelGroup*> allGroups() const;
  // The constant data of this plan and of nested region plans, depth first.
  std::vector<const Value*> allConstants() const;
};

// Plans a function: one kernel per fusion op and per remaining op that is neither a region op,
// a terminator nor constant data. Kernel names are unique across the whole function (nested regions included).
std::unique_ptr<BlockPlan> planFunction(const Function& function);

// The one op of `kind` in `group` where the group is a loop kernel of one segment, its outputs
// and that op's result all of the segment's shape, its other ops elementwise on that shape (the
// op's epilogue), and the op's first `inputs` operands inputs of the group; else null. The CPU's
// generated convolutions and gather_backward (conv_rows.h, scatter_rows.h) take such kernels.
const Op* heroWithElementwiseEpilogue(const KernelGroup& group, OpKind kind, size_t inputs);

// The alignment in bytes (a power of two, at most 16) every address of `v`'s buffer has at run
// time. Buffers the runtime allocates are 16-byte aligned; a `map` body's argument is slice i of
// the map's operand, at i x (the slice's bytes) into it, so it is only as aligned as the slice
// size allows (and as its operand, for nested maps). Kernels widen loads only as far as this.
uint64_t bufferAlignment(const Value* v);

}  // namespace kiln::codegen
