// Internal to codegen: the shared element emitter, which computes the value of one element of a
// kernel group's value at a multi-index, by recursion over the group's ops (XLA's "elemental IR
// emitter"). The per-family files (emit_*.cpp) lower the ops; this header is what they share.
//
// Conventions:
//  - An index is one i64 per dimension of the value's shape, outermost first.
//  - Values live in registers in their compute type: bool as i1, ints in their width, f16, bf16
//    and f32 as float, f64 as double. In memory bool is i8 (0/1), f16 is half and bf16 is i16
//    (rounded by the target's instruction where it has one, cvt.rn.bf16.f32 on sm_80 and later,
//    else by integer code here, so no target needs a bf16 conversion routine).
//  - Each op's result is rounded to its dtype before another op of the group reads it, so a
//    group computes what the interpreter computes op by op.
#pragma once

#include <llvm/IR/IRBuilder.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "codegen/column_reduction.h"
#include "codegen/conv_rows.h"
#include "codegen/scatter_rows.h"
#include "codegen/kernel_emitter.h"
#include "codegen/matmul_tile.h"
#include "codegen/row_prefetch.h"
#include "codegen/transpose_tile.h"

namespace kiln::codegen {

using Index = std::vector<llvm::Value*>;
using Values = std::vector<llvm::Value*>;

// The errors the kernels of one module can raise; a kernel stores 1 + index into its error word.
class ErrorTable {
 public:
  int add(const Op& op, const std::string& message);
  std::vector<KernelError> take() { return std::move(errors_); }

 private:
  std::vector<KernelError> errors_;
};

struct Accumulation;

class ElementEmitter {
 public:
  ElementEmitter(llvm::IRBuilder<>& b, TargetHooks& target, const KernelGroup& group, const Values& buffers,
                 llvm::Value* status, ErrorTable& errors);

  // Loop kernels: computes and stores the elements of work item `item`: elementsPerItem()
  // consecutive elements of one segment's outputs (all of them first, then the stores, so the
  // target can merge neighbouring loads and stores into vector ones), with a guarded tail.
  void emitLoopItem(llvm::Value* item);
  // Element `item` of segment `segment` alone (the target loops segment by segment; one element per item).
  void emitSegmentItem(size_t segment, llvm::Value* item);
  // Tiled transposes (transpose_tile.h), on a GPU block of kTile x kTileRows threads, `lane` the
  // thread's index in it: tile `item` of the input is read into shared memory with consecutive
  // threads on consecutive input addresses, then the outputs are computed and stored with
  // consecutive threads on consecutive output addresses, the transposed input read from the tile.
  void emitTileItem(const TransposeTile& tile, llvm::Value* item, llvm::Value* lane);
  // The CPU's tiles (transpose_tile.h, registerTransposeTile): tile `item`'s input moved into a
  // stack tile in blocks transposed in registers, then its outputs computed and stored row by row
  // along the output's innermost axis, the transposed input read from the stack tile.
  void emitRegisterTileItem(const TransposeTile& tile, llvm::Value* item);
  // Tiled matmuls (matmul_tile.h), on a GPU block of kTile x kTileRows threads: tile `item` of the
  // output, each thread summing four outputs over K through shared-memory tiles of A and B, then
  // the group's epilogue on each and the stores.
  void emitMatmulTileItem(const MatmulTile& tile, llvm::Value* item, llvm::Value* lane);
  // Generated matmuls on the CPU (matmul_tile.h, cpuMatmulRows): item `item`'s kCpuMatmulColumns
  // outputs of one row, accumulated on the stack over K (outside) and the columns (inside), then
  // the group's epilogue on each and the stores.
  void emitCpuMatmulItem(const MatmulTile& tile, llvm::Value* item);
  // Generated convolutions on the CPU (conv_rows.h): item `item`'s block of output channels by
  // output columns of one output row, summed over the window in vector registers, then the
  // group's epilogue on each and the stores (emit_conv_rows.cpp).
  void emitCpuConvItem(const ConvRows& tile, llvm::Value* item);
  // Generated gather_backward (scatter_rows.h): item `item`'s block of output rows by columns,
  // dy's slices added into sums on the stack in index order, then the group's epilogue on each
  // and the stores (emit_scatter_rows.cpp; the CPU's blocks, the GPU's one row per thread).
  void emitScatterItem(const ScatterRows& tile, llvm::Value* item);
  // The epilogue of a block of contraction sums on the stack (`sums`, of `accType`, row r at
  // r * stride): for r < rows and q < count, the group's outputs at indexOf(r, q), `hero`'s value
  // there being the sum (contractionResult), then the stores (the CPU's matmul and conv blocks).
  void storeSumBlock(const Op& hero, llvm::Value* sums, llvm::Type* accType, int64_t stride, llvm::Value* rows,
                     llvm::Value* count, const std::function<Index(llvm::Value*, llvm::Value*)>& indexOf,
                     const Shape& shape);
  // Which block of `rows` x `columns` outputs of a (batched) matmul work item `item` computes: its
  // batch index, then the block's row and column among the blocks.
  Index matmulBlock(const MatmulTile& tile, llvm::Value* item, int64_t rows, int64_t columns);
  // Column reductions on the CPU (column_reduction.h): tile `item` of segment `segment`'s outputs,
  // each reduction summed into one accumulator per output of the tile, reduced axes outside and
  // the tile's columns inside, then the outputs computed from the accumulators.
  void emitColumnTileItem(size_t segment, const ColumnTiles& tiles, llvm::Value* item);
  // Row kernels: row `row`, on lane `lane` of the target's rowLanes(): the row values once (each
  // reduction accumulated per lane, then combined across lanes), then the row's full outputs.
  void emitRow(llvm::Value* row, llvm::Value* lane);
  // CPU row kernels over short rows (row_block.h): block `item` of `rows` rows side by side. The
  // inputs of the full shape are moved into stack tiles, column by column, each row's code runs in
  // a loop over the block's rows that LLVM widens to one row per lane, and the outputs' tiles are
  // moved back. A last block of fewer rows goes row by row.
  void emitRowBlock(llvm::Value* item, int64_t rows);

  // The value of `v` at `index`, in its compute type, rounded to its dtype.
  llvm::Value* emit(const Value* v, const Index& index);

  // ---- helpers for the op emitters ----
  llvm::IRBuilder<>& b;
  llvm::LLVMContext& ctx() { return b.getContext(); }
  const KernelGroup& group() const { return group_; }
  llvm::Module& module() { return *b.GetInsertBlock()->getModule(); }

  llvm::Type* computeType(DType t);
  llvm::Type* storageType(DType t);
  llvm::Value* i64(int64_t v) { return b.getInt64(static_cast<uint64_t>(v)); }
  llvm::Value* f64(double v) { return llvm::ConstantFP::get(b.getDoubleTy(), v); }
  // 0 <= position < size, for window reads that may fall into padding.
  llvm::Value* inRange(llvm::Value* position, int64_t size) {
    return b.CreateAnd(b.CreateICmpSGE(position, i64(0)), b.CreateICmpSLT(position, i64(size)));
  }
  // The input position that window offset k of output position `out` reads:
  // out * stride - padBefore + k * dilation (conv2d, pooling and their backward ops).
  llvm::Value* windowPosition(llvm::Value* out, int64_t stride, int64_t padBefore, llvm::Value* k, int64_t dilation) {
    return b.CreateAdd(b.CreateSub(b.CreateMul(out, i64(stride)), i64(padBefore)), b.CreateMul(k, i64(dilation)));
  }
  // A constant of dtype `t`'s compute type holding `v` (floats) or int64 `v` truncated (ints).
  llvm::Value* constant(DType t, double v);
  llvm::Value* intConstant(DType t, int64_t v);

  // `count` values of `type` on the stack, allocated in the kernel's entry block: one fixed slot per
  // call, not one per iteration of the loops the code is in.
  llvm::Value* stackArray(llvm::Type* type, int64_t count, const char* name) {
    llvm::BasicBlock& entry = b.GetInsertBlock()->getParent()->getEntryBlock();
    llvm::IRBuilder<> atEntry(&entry, entry.begin());
    return atEntry.CreateAlloca(type, i64(count), name);
  }

  // min(v, most) of two i64 values (a count cut at the tensor's edge).
  llvm::Value* atMost(llvm::Value* v, llvm::Value* most) { return b.CreateSelect(b.CreateICmpSLT(v, most), v, most); }
  llvm::Value* atMost(llvm::Value* v, int64_t most) { return atMost(v, i64(most)); }

  // Float compute values widened to double, and back (to t's compute type: f16/bf16 -> float).
  // The widenings and fromStorage take vectors too (the CPU matmul's rows of B).
  llvm::Value* toDouble(llvm::Value* v) {
    return v->getType()->getScalarType()->isDoubleTy() ? v : b.CreateFPExt(v, v->getType()->getWithNewType(b.getDoubleTy()));
  }
  llvm::Value* fromDouble(llvm::Value* v, DType t);
  // A contraction's sum (double; i64 for integers) as its result of dtype `t`: in t's compute type,
  // rounded to t, as emit() gives an op's result. For the sums tiles supply through preloaded_,
  // which emit() returns as they are (an f16 matmul's bias add reads the f16-rounded product).
  llvm::Value* contractionResult(llvm::Value* sum, DType t) {
    return isInt(t) ? b.CreateTrunc(sum, computeType(t)) : roundTo(fromDouble(sum, t), t);
  }
  // Widens an int compute value of dtype `t` to i64: zero-extended for unsigned dtypes (so u64
  // keeps its bits and unsigned i64 comparisons order every unsigned dtype), else sign-extended.
  llvm::Value* toI64(llvm::Value* v, DType t) {
    llvm::Type* i64Type = v->getType()->getWithNewType(b.getInt64Ty());
    return isUnsigned(t) ? b.CreateZExtOrTrunc(v, i64Type) : b.CreateSExtOrTrunc(v, i64Type);
  }
  // Rounds a compute value to dtype `t` (f16, bf16: through their storage format; others: as is).
  llvm::Value* roundTo(llvm::Value* v, DType t);
  // Storage <-> compute conversions.
  llvm::Value* toStorage(llvm::Value* v, DType t);
  llvm::Value* fromStorage(llvm::Value* v, DType t);
  // bf16 bits (i16) to f32 by integer code: a zero-extension and a shift.
  llvm::Value* widenBFloat16Bits(llvm::Value* bits);

  // Row-major linear index of `index` in `shape`, and back (udiv/urem by constants).
  llvm::Value* linearize(const Index& index, const Shape& shape);
  Index delinearize(llvm::Value* linear, const Shape& shape);
  // `item` is an item of `part` (the target loops part by part) and, where `column` is not null,
  // item `column` of a row of part.rowLength (the target loops row by row): delinearize takes the
  // column as the last index instead of item % rowLength, and the rest from the row's start, which
  // stays the same along the row. An item is part.columnsPerItem elements side by side.
  void setItemPart(const ItemPart& part, llvm::Value* item, llvm::Value* column);
  // NumPy broadcasting: the index into `from` that element `index` of `to` reads.
  Index broadcastIndex(const Index& index, const Shape& from, const Shape& to);

  // Float math through the target (f32 or f64 arguments).
  llvm::Value* math(MathFn fn, llvm::ArrayRef<llvm::Value*> args) { return target_.emitMath(b, fn, args); }
  // sum + x for a float reduction's accumulator, reassociable where the target allows it.
  llvm::Value* accumulate(llvm::Value* sum, llvm::Value* x);
  // sum + x * y, a contraction's step (matmul, conv2d and its gradients) as the interpreter takes
  // it (multiplyAdd in ir/interp/kernels.h): integers wrap; float sums, held in double, add the
  // product in one rounding (fma). That is the plain sum's bits for products of widened f32, f16
  // or bf16 values (exact in double) and, for f64, the fused product BLAS and XLA compute: half
  // the instructions of a multiply and an add, on every CPU with FMA.
  llvm::Value* multiplyAdd(llvm::Value* sum, llvm::Value* x, llvm::Value* y);
  // Float max/min that propagate NaN (as a quiet NaN), like the interpreter.
  llvm::Value* floatMax(llvm::Value* a, llvm::Value* c);
  llvm::Value* floatMin(llvm::Value* a, llvm::Value* c);

  // for (iv = 0; iv < count; ++iv) carrying `init`; `body` returns the next values. Returns the
  // values after the loop. The body may emit control flow of its own.
  using LoopBody = std::function<Values(llvm::Value* iv, const Values& carried)>;
  Values loop(int64_t count, Values init, const LoopBody& body);
  // The same for a count known at run time only, which must be 1 or more.
  Values loop(llvm::Value* count, Values init, const LoopBody& body);
  // Nested loops over `extents` (outermost first), the body getting one iv per extent.
  using NestBody = std::function<Values(const Index& ivs, const Values& carried)>;
  Values loopNest(const Shape& extents, Values init, const NestBody& body);
  // The same visiting order, each run of adjacent dims (`runs`, outermost first) walked by one loop
  // over their product; the body still gets one iv per dim. Over a tensor's trailing dims (a
  // reduce over H and W of NCHW) the inner loop then walks a contiguous block, long enough that
  // LLVM vectorises it along memory rather than unrolling a short innermost loop whole and
  // vectorising the loop outside it with gathers.
  Values mergedLoopNest(const std::vector<Shape>& runs, Values init, const NestBody& body);
  // acc.add over element(k) for k in [0, count), from `init`, in one loop. Where acc sums floats,
  // the loop carries a vector width: the target's floatSumLanes(), halved for f64.
  llvm::Value* accumulateRun(const Accumulation& acc, llvm::Value* init, int64_t count,
                             const std::function<llvm::Value*(llvm::Value* k)>& element);
  // Hints the loop just emitted (of `count` trips, whose body began when the target had emitted
  // `mathBefore` inline exps and tanhs) to be widened to `lanes`, with the target's interleave
  // count, and, where it is short enough for LLVM to unroll whole first, kept rolled until then.
  void hintVectorLoop(int64_t count, int lanes, int64_t mathBefore);
  // if (cond) { then() } else { otherwise }: the values of the branch taken.
  Values ifThen(llvm::Value* cond, const std::function<Values()>& then, const Values& otherwise);
  // cond ? then() : otherwise(), computing only the branch taken (for loads that are only in
  // bounds on one side).
  llvm::Value* ifElse(llvm::Value* cond, const std::function<llvm::Value*()>& then,
                      const std::function<llvm::Value*()>& otherwise);
  // Raises kernel error `error` (an ErrorTable index) where `cond` holds; the first error wins.
  void raiseIf(llvm::Value* cond, int error);
  // Stores `code` (1 + an ErrorTable index, i32) into the error word where `cond` holds and it
  // holds no error yet.
  void raiseCode(llvm::Value* cond, llvm::Value* code);
  int addError(const Op& op, const std::string& message) { return errors_.add(op, message); }
  TargetHooks& target() { return target_; }
  // Name for module-level data of this kernel (dense constants).
  std::string dataName(const std::string& what) const { return group_.name + "." + what; }

 private:
  llvm::Value* emitOp(const Op& op, unsigned result, const Index& index);
  llvm::Value* load(int input, const Index& index);
  // Elements [first, first + width) of `segment`.
  void emitSegmentItem(const Segment& segment, llvm::Value* first, int64_t width);
  // The element at `index` (linear `linear`) of the segment's shape, made current so that loads
  // of same-shaped inputs use the linear index directly (contiguous, hence vectorisable).
  void setCurrent(const Index& index, llvm::Value* linear, const Shape& shape);
  // Loads, for each element of a work item, the inputs that elementwise ops read at that element
  // (same shape, or broadcast to it), all before any arithmetic: the loads of neighbouring
  // elements then sit side by side in one basic block, where LLVM merges them into vector loads
  // (math such as libdevice's tanh branches, which would otherwise split them apart).
  // `sameRow`: the elements share all but the last index, which counts up by one.
  void preloadInputs(const Shape& shape, const std::vector<Index>& indices, const std::vector<llvm::Value*>& linears,
                     bool sameRow);
  // CPU row kernels: stack space to keep `operand` (a row reduction's) per element of the row, or
  // null where that is not worth it or not possible (rowScratch_).
  llvm::Value* rowScratchFor(const Value* operand);
  // The index of `shape` (a row shape) for row `rowIndex`: the row dims, then zeros.
  Index rowValueIndex(const Index& rowIndex, const Shape& shape);
  // Stores `value` as element `linear` of the group's output k.
  void storeOutput(size_t k, llvm::Value* linear, llvm::Value* value);
  // Computes the segment's outputs at `index` (element `linear` of the segment's shape), then
  // stores them.
  void storeElement(const Segment& segment, const Index& index, llvm::Value* linear);
  // Tile `item` of `tile`'s first element: its index along every untiled axis, the first of the
  // tile's along the input's innermost axis and along the last.
  Index tileOrigin(const TransposeTile& tile, llvm::Value* item);
  // The index of the transpose's operand that output `index` reads, built from the same values (so
  // that what a tile preloads for it is found by emitting the transpose at `index`).
  static Index transposeSource(const TransposeTile& tile, const Index& index);
  // Computes and stores every output of the group at `index` (of `shape`), with preloaded_ holding
  // what the tile supplies; clears preloaded_.
  void storeTileElement(const Index& index, const Shape& shape);
  // The same at neighbouring elements along the output's innermost axis (indices[q]: its q-th),
  // each output stored as one vector; preloaded_ holds what the tile supplies for all of them.
  void storeTileElements(const std::vector<Index>& indices, const Shape& shape);
  // Elements of a row one lane takes per step of reduceRow and forEachInRow: on the GPU the
  // kernel's vectorWidth() (8 for 16-bit rows, 4 else: a 128-bit load) where the row is a whole
  // number of them and has that many for every lane, else 4 on the same terms, else 1.
  int64_t rowElementsPerStep() const;
  // The steps of one pass over a row (each lane's share, rowElementsPerStep() at a time): a loop,
  // or, where the steps are few (kUnrolledRowSteps) and the row a whole number of them, straight-
  // line code. Unrolled, every pass computes the same addresses, so LLVM loads each element once
  // and keeps it in registers for the later passes (a softmax's max, sum and output; a layer
  // norm's mean, variance and output) instead of reading the row from memory again.
  Values rowSteps(Values init, const LoopBody& body);
  // loop(count, init, body), with the target's interleave count (loopInterleave) where the body
  // computed an inline exp, tanh or erf.
  Values mathLoop(int64_t count, Values init, const LoopBody& body);
  // The latch branch of the loop loop() has just emitted (for its llvm.loop hints); null where a
  // row block emitted it unrolled.
  llvm::Instruction* lastLoopLatch();
  static constexpr int64_t kUnrolledRowSteps = 8;
  // An input every row reads at the same elements (a layer norm's scale and bias) and a lane's
  // share of it, in forEachInRow's order.
  struct RowInvariantLoads {
    const Value* input;
    std::vector<llvm::Value*> values;
  };
  // Where the lanes share rows (the GPU) and the row's passes are unrolled: such inputs loaded
  // before the row's reductions, so that the loads come before any shuffle or barrier and LLVM
  // hoists them out of the loop over rows (after them, it may not: they would be read again for
  // every row a block takes). At most kRowInvariantRegisters values a lane.
  std::vector<RowInvariantLoads> loadRowInvariantInputs(llvm::Value* lane,
                                                        const std::function<Index(llvm::Value*)>& fullIndex,
                                                        const Shape& full);
  static constexpr int64_t kRowInvariantRegisters = 32;
  // Accumulates f(k) over k in [0, n) of a row: lane-strided, then combined across lanes.
  // For rows shared by more lanes than a warp: `values`, already combined across each warp's
  // lanes by shuffles, combined across the row's warps in warp order (the same bits on every run)
  // and given back to every lane. Each warp's lane 0 writes its values to a shared array of the
  // kernel's own (<kernel>.partials), the block synchronises, every lane reads them all back, and
  // the block synchronises again (so the next row's writes cannot overtake a slow warp's reads).
  Values combineWarps(llvm::Value* lane, int64_t lanes, const Values& values,
                      const std::function<Values(const Values&, const Values&)>& combine);
  // CPU row kernels: `op`'s reduction of the row, of `element(k)`, its operand kept on the stack
  // where rowScratchFor keeps it; the pass fetches the next row where `prefetch` is given.
  // `elementAt` is the same element by its index within the row (the row's inner dims).
  llvm::Value* reduceRowOnOneLane(const Op& op, const Accumulation& acc, llvm::Value* row, const RowPrefetch* prefetch,
                                  const std::function<llvm::Value*(llvm::Value* k)>& element,
                                  const std::function<llvm::Value*(const Index& inner)>& elementAt);
  // The sum of a row of several inner dims as a loop per run of the last dim, each element also
  // stored at its place in `scratch` (of `type`) where there is one.
  llvm::Value* sumInnerRuns(const Accumulation& acc, llvm::Value* init, llvm::Value* scratch, llvm::Type* type,
                            const std::function<llvm::Value*(const Index& inner)>& elementAt);
  // A loop over the runs of the row's last dim (every inner dim but the last): body(run, runStart,
  // carried) with the run's index and its first element's place in the row, to loop the run itself.
  using InnerRunBody = std::function<Values(const Index& run, llvm::Value* runStart, const Values& carried)>;
  Values forEachInnerRun(Values init, const InnerRunBody& body);
  // `index` with `last` appended.
  static Index withLast(Index index, llvm::Value* last);
  // Whether computing `v` at an element runs expensive elementwise math of the group's (an exp, a
  // tanh: passes::isExpensive), the row values already computed aside.
  bool computesExpensiveMath(const Value* v) const;
  // CPU row kernels (row_prefetch.h): a pass over the row's elements as `run(first, count,
  // carried)` over ranges of them, block after block, each range after prefetching its elements of
  // the next row's inputs.
  using RangeBody = std::function<Values(llvm::Value* first, int64_t count, const Values& carried)>;
  Values passPrefetchingNextRow(const RowPrefetch& prefetch, llvm::Value* row, Values init, const RangeBody& run);
  Values reduceRow(llvm::Value* lane, const Values& init, const std::function<Values(llvm::Value* k, const Values&)>& add,
                   const std::function<Values(const Values&, const Values&)>& combine);
  void forEachInRow(llvm::Value* lane, const std::function<void(llvm::Value* k)>& body);

  // emitRowBlock's, while it emits the code of the block's row `lane`: the row's index (its row
  // dims) and the stack tiles of the full-shaped inputs and outputs, element k of the row at
  // tile[k * rows + lane]. Inside, loops of a few constant trips are unrolled (loop()), so that
  // the loop over the lanes is an innermost loop the vectoriser widens, and the row's passes keep
  // nothing on the stack and fetch nothing ahead.
  struct RowBlock {
    int64_t rows = 0;
    llvm::Value* lane = nullptr;
    Index rowIndex;
    std::map<const Value*, llvm::Value*> tiles;  // lookup only
    // Each lane's first error (raiseIf: 1 + its index, 0 for none), i32[rows] on the stack, and
    // whether the rows' code can raise one.
    llvm::Value* errors = nullptr;
    bool raises = false;
  };
  std::optional<RowBlock> rowBlock_;
  static constexpr int64_t kRowBlockUnrolledTrips = 64;
  // The address of element `k` of the block's current row in `v`'s tile; null where `v` has none.
  llvm::Value* rowBlockSlot(const Value* v, llvm::Value* k);

  // setItemPart's, in elements: the item's first element, its column and the row's length.
  llvm::Value* item_ = nullptr;
  llvm::Value* itemColumn_ = nullptr;
  int64_t itemRowLength_ = 0;
  int64_t itemColumns_ = 1;  // the part's columnsPerItem
  TargetHooks& target_;
  const KernelGroup& group_;
  Values buffers_;
  llvm::Value* status_;
  ErrorTable& errors_;
  std::map<const Value*, int> inputIndex_;  // lookup only, never iterated
  // Row kernels: the row values of the current row, computed once before the full values.
  std::map<const Value*, llvm::Value*> rowCache_;  // lookup only
  // The latch branch of every loop loop() has emitted, in order (for hints on a range of them);
  // null for a loop a row block emitted unrolled.
  std::vector<llvm::Instruction*> latches_;
  // CPU row kernels: computed operands of the row's reductions (softmax's exp(x - max)), kept per
  // element on the stack while the reduction runs, so the full values read them back instead of
  // computing them again; rows up to kRowScratchElements long. In program order.
  std::vector<std::pair<const Value*, llvm::Value*>> rowScratch_;
  static constexpr int64_t kRowScratchElements = 16384;
  // Values already emitted, by the block they were finished in, value and index (emit).
  using EmittedKey = std::tuple<llvm::BasicBlock*, const Value*, Index>;
  std::map<EmittedKey, llvm::Value*> emitted_;  // lookup only
  // Loop kernels: inputs loaded up front for all elements of a work item, keyed by input and index.
  std::vector<std::pair<std::pair<const Value*, Index>, llvm::Value*>> preloaded_;
  Index currentIndex_;
  llvm::Value* currentLinear_ = nullptr;
  Shape currentShape_;
};

// The op families (emit_*.cpp). Each returns the op's result at `index`, in its compute type.
llvm::Value* emitElementwise(ElementEmitter& e, const Op& op, const Index& index);
llvm::Value* emitLayout(ElementEmitter& e, const Op& op, const Index& index);
llvm::Value* emitReduction(ElementEmitter& e, const Op& op, const Index& index);
llvm::Value* emitNN(ElementEmitter& e, const Op& op, const Index& index);
llvm::Value* emitBackward(ElementEmitter& e, const Op& op, const Index& index);  // emit_backward.cpp
// Where a conv2d's or pool's activations (and their backward ops': x, y, dx, dy) keep element
// [n,c,y,x]: there, or with layout = "nhwc" at [n,y,x,c]. Their emitters compute channels-first
// indices and read and write through this (emit_nn.cpp); weights are [O,C,kh,kw] either way.
struct ActivationLayout {
  bool channelsLast = false;
  Index stored(const Index& channelsFirst) const;  // where element [n,c,y,x] is stored
  Index channelsFirst(const Index& stored) const;  // which [n,c,y,x] a stored index holds
  Shape channelsFirst(const Shape& stored) const;  // a stored shape as [N,C,H,W]
};
ActivationLayout activationLayout(const Op& op);
// Whether `op` is a max_pool2d_backward whose windows neither overlap nor reach into padding (a
// 2x2 pool of stride 2): each input position lies in at most one window (emit_backward.cpp).
bool isDisjointMaxPoolBackward(const Op& op);
// gather_backward's index `raw` (an i64 value read from its indices) as a row of its axis of `n`
// rows, negative indices wrapped; an index outside [-n, n) raises the op's range error
// (emit_backward.cpp; the per-element form and the CPU's scatter blocks).
llvm::Value* gatherBackwardRow(ElementEmitter& e, const Op& op, llvm::Value* raw, int64_t n);

// How a reduce_* op accumulates (emit_reduction.cpp), shared by reductions computed per output
// element and row kernels: floats in double, ints in wrapping i64.
struct Accumulation {
  llvm::Value* init;
  std::function<llvm::Value*(llvm::Value* acc, llvm::Value* element)> add;  // element in its compute type
  std::function<llvm::Value*(llvm::Value* a, llvm::Value* b)> combine;      // two partial accumulators
  std::function<llvm::Value*(llvm::Value* acc)> finish;                     // to the result's compute type
  // For a double sum of float elements, their dtype: loops vectorise it at the width of one
  // vector of them (TargetHooks::floatSumLanes), f32, f16 and bf16 widened as they are added.
  std::optional<DType> summedFloats;
};
Accumulation accumulationFor(ElementEmitter& e, const Op& op, int64_t count);
// A reduce_* op's reduced axes (sorted), whether it keeps them as size-1 dims, their extents and
// how many elements each output combines.
struct ReducedAxes {
  std::vector<int> axes;
  bool keepdims = false;
  Shape extents;
  int64_t count = 0;
};
ReducedAxes reducedAxesOf(const Op& reduce);  // a reduce_* op's, or argmax/argmin's one axis
// The operand's index (of rank `rank`) that output element `index` combines at position `ivs` of
// the reduced axes.
Index reducedSource(const Index& index, const ReducedAxes& reduced, const Index& ivs, int rank);
// argmax/argmin as a reduction over candidates {index (i64), value (ints as i64)}: element x at
// index k as a candidate; the candidate every element ties or beats (index n, which loses every
// tie); and the better of two, by value (NaN above every number), then the lower index. So the
// first occurrence wins in whatever order lanes and warps combine their candidates. `later`: c's
// index is known to be above a's (a sequential scan from element 0), so a tie never moves.
Values argCandidate(ElementEmitter& e, const Op& op, llvm::Value* k, llvm::Value* x);
Values argIdentity(ElementEmitter& e, const Op& op, int64_t n);
// argmax/argmin on the CPU by keys the loop vectoriser widens (emit_reduction.cpp): each element's
// key (floats: orderedKey of x + 0, so -0 and +0 tie, NaN the extreme; ints: their value, unsigned
// as unsigned), the key every element ties or beats, the intrinsic that keeps the better of two,
// and whether `key` strictly beats `best`.
struct ArgKeys {
  llvm::Type* keyType = nullptr;  // i32 for f32, f16 and bf16; i64 for f64 and ints
  std::function<llvm::Value*(llvm::Value* x)> key;
  llvm::Value* worst = nullptr;
  llvm::Intrinsic::ID extreme = llvm::Intrinsic::not_intrinsic;
  std::function<llvm::Value*(llvm::Value* key, llvm::Value* best)> beats;
};
ArgKeys argKeysFor(ElementEmitter& e, const Op& op);
Values argBetter(ElementEmitter& e, const Op& op, const Values& a, const Values& c, bool later = false);
// Helpers shared by the families.
std::optional<std::vector<int64_t>> optionalIntsAttr(const Op& op, std::string_view name);

}  // namespace kiln::codegen
