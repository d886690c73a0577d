// split-reductions: reductions that would leave a GPU idle, cut into stages (split_reductions.h).
#include "passes/split_reductions.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "ir/shape_rules.h"
#include "passes/rewrite.h"

namespace kiln::passes {

namespace {

// When a reduction leaves a device idle, and how finely to cut it.
struct SplitPolicy {
  const char* device;          // for remarks: "the GPU"
  int64_t minSplitElements;    // reductions reading fewer elements are left alone
  int64_t enoughRows;          // rows a row reduction needs to fill the device without splitting
  int64_t rowWorkers;          // what the rows' chunks should number: rows x parts >= this
  int64_t minRowChunk;         // a chunk of a row is at least this long
  int64_t columnWorkers;       // what a column reduction's first stage should number
  int64_t columnsPerWorker;    // columns one of those takes (1: a GPU thread; a CPU column tile)
  int64_t minColumnChunk;      // a chunk of columns is at least this many rows
  bool outerColumns;           // whether reductions over middle axes ([outer, n, inner]) split too
  bool copiesSharedOperands;   // whether the first stage recomputes a shared operand (copyElementwiseChain)
  bool alignsRowCuts;          // whether a row's cut follows its dims' boundaries (alignedRowCut)
};

// Sized for an H100-class GPU: 132 SMs, eight 256-thread blocks each at once. A block reads a
// reduction of under 64K elements quickly; a row chunk is a block's 256 lanes of 16 elements;
// a row reduction with half the device's blocks in rows fills it; a column sum's first stage
// wants a thread per output, each over at least 8 rows.
constexpr int64_t kDeviceBlocks = 132 * 8;
constexpr SplitPolicy kGpuPolicy{"the GPU", int64_t{1} << 16, kDeviceBlocks / 2, kDeviceBlocks, 4096,
                                 kDeviceBlocks * 256, 1, 8, false, true, false};
// The CPU runs a row kernel's rows, and a column reduction's tiles of 32 columns
// (codegen/column_reduction.h), one work item per thread at a time: fewer than 32 of them leave
// cores idle (a full sum, a global pool over [1,112,112,32] in NHWC: one item). A fixed count,
// not this machine's cores, so that a program's results are the same on every machine. The first
// stage reads a shared operand from memory rather than recompute it: on the CPU a SiLU costs more
// than the bytes it saves.
constexpr SplitPolicy kCpuPolicy{"the CPU's cores", int64_t{1} << 16, 32, 32, 4096, 32, 32, 64, true, false, true};

bool isReduction(OpKind k) {
  return k == OpKind::ReduceSum || k == OpKind::ReduceMean || k == OpKind::ReduceMax || k == OpKind::ReduceMin ||
         k == OpKind::ReduceProd;
}

// The value padding may add without changing the result, or none (integer max/min/prod).
std::optional<double> identity(OpKind k, DType t) {
  switch (k) {
    case OpKind::ReduceSum:
    case OpKind::ReduceMean: return 0.0;
    case OpKind::ReduceProd: return isFloat(t) ? std::optional<double>(1.0) : std::nullopt;
    case OpKind::ReduceMax: return isFloat(t) ? std::optional<double>(-INFINITY) : std::nullopt;
    case OpKind::ReduceMin: return isFloat(t) ? std::optional<double>(INFINITY) : std::nullopt;
    default: return std::nullopt;
  }
}

// How to cut an extent of `n` into `parts` chunks of `chunk` (the last padded by `pad`).
struct Cut {
  int64_t parts = 1, chunk = 0, pad = 0;
};

// About `wanted` parts of at least `minChunk` each: an exact divisor of n near that if there is one
// (no padding to copy), else equal chunks with the last padded (when there is an identity to pad
// with). parts == 1: not worth splitting.
Cut cutExtent(int64_t n, int64_t wanted, int64_t minChunk, bool canPad) {
  int64_t parts = std::clamp<int64_t>(wanted, 1, n / minChunk);
  if (parts <= 1) return {};
  for (int64_t p = parts; p >= std::max<int64_t>(2, parts / 2); --p)
    if (n % p == 0) return {p, n / p, 0};
  if (!canPad) return {};
  int64_t chunk = (n + parts - 1) / parts;
  parts = (n + chunk - 1) / chunk;
  return {parts, chunk, parts * chunk - n};
}

// Builds the stages in front of one reduction and replaces it.
class Splitter {
 public:
  explicit Splitter(Op& op) : op_(op), kind_(op.kind()), dtype_(op.operand(0)->type().dtype) {
    const Attr* accumulate = op.findAttr("accumulate");
    keptInF32_ = accumulate && accumulate->getDType() == DType::F32;
  }

  // Reduces `x` ([outer..., n, rest..., inner...] as one [outer, n, rest..., inner] view) over its
  // extent n and the dims `rest` in `cut.parts` chunks of n: returns [outer, inner] without the
  // extents of 1 (in the accumulation dtype, sums not yet divided). Leaving out unit extents keeps
  // a column sum's second stage a plain column sum, which the pass may split again.
  Value* reduceMiddle(Value* x, int64_t outer, int64_t n, int64_t inner, const Cut& cut, const Shape& rest = {}) {
    Shape view, chunked;
    if (outer > 1) view.push_back(outer), chunked.push_back(outer);
    int64_t nAxis = static_cast<int64_t>(view.size());
    view.push_back(n);
    view.insert(view.end(), rest.begin(), rest.end());
    chunked.insert(chunked.end(), {cut.parts, cut.chunk});
    chunked.insert(chunked.end(), rest.begin(), rest.end());
    if (inner > 1) view.push_back(inner), chunked.push_back(inner);
    Value* v = reshape(x, view);
    if (cut.pad > 0) {
      std::vector<int64_t> pads(2 * view.size(), 0);
      pads[view.size() + static_cast<size_t>(nAxis)] = cut.pad;
      v = op(OpKind::Pad, {v}, {{"pads", Attr::ints(pads)}, {"value", Attr(*identity(kind_, dtype_))}});
    }
    v = widen(reshape(v, chunked));
    OpKind partial = kind_ == OpKind::ReduceMean ? OpKind::ReduceSum : kind_;
    std::vector<int64_t> chunkAxes;
    for (int64_t a = 0; a <= static_cast<int64_t>(rest.size()); ++a) chunkAxes.push_back(nAxis + 1 + a);
    v = op(partial, {v}, stageAttrs(chunkAxes));
    return op(partial, {v}, stageAttrs({nAxis}));
  }

  // The unsplit reduction's result from a [outer, inner] total over `count` elements each.
  void finish(Value* total, int64_t count) {
    if (kind_ == OpKind::ReduceMean)
      total = op(OpKind::Div, {total, insertConstantBefore(op_, Tensor::scalar(total->type().dtype, double(count)))});
    if (total->type().dtype != dtype_) total = op(OpKind::Cast, {total}, {{"to", Attr(dtype_)}});
    Value* result = reshape(total, op_.result()->type().shape);
    result->setName(op_.result()->name());
    replaceOp(op_, result);
  }

  // The same reduction over other axes of `x` (the batch-norm case's outer stage).
  Value* reduceAxes(Value* x, const std::vector<int64_t>& axes) {
    return op(kind_ == OpKind::ReduceMean ? OpKind::ReduceSum : kind_, {widen(x)}, stageAttrs(axes));
  }

 private:
  Value* op(OpKind kind, const std::vector<Value*>& operands, AttrList attrs = {}) {
    return insertOpBefore(op_, kind, operands, std::move(attrs));
  }
  Value* reshape(Value* v, const Shape& shape) {
    return v->type().shape == shape ? v : op(OpKind::Reshape, {v}, {{"shape", Attr::ints(shape)}});
  }
  // A stage's attributes: its axes, and the sum's own f32 accumulation where it has one.
  AttrList stageAttrs(const std::vector<int64_t>& axes) const {
    AttrList attrs = {{"axes", Attr::ints(axes)}, {"keepdims", Attr(false)}};
    if (keptInF32_) attrs.emplace_back("accumulate", Attr(DType::F32));
    return attrs;
  }
  // Float sums, means and products accumulate the chunks in f64: the result rounds once. A sum
  // kept in f32 (matvec-as-rows' rows) stays in f32, its stages too.
  Value* widen(Value* v) {
    bool exact = keptInF32_ || kind_ == OpKind::ReduceMax || kind_ == OpKind::ReduceMin || !isFloat(dtype_) || dtype_ == DType::F64;
    return exact || v->type().dtype == DType::F64 ? v : op(OpKind::Cast, {v}, {{"to", Attr(DType::F64)}});
  }

  Op& op_;
  OpKind kind_;
  DType dtype_;
  bool keptInF32_ = false;  // reduce_sum {accumulate = f32}
};

int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t d = from; d < to; ++d) p *= s[d];
  return p;
}

// A row reduction's cut along its reduced dims' own boundaries: chunks of whole trailing dims
// `rest` (of a [lead, rest...] view of the dims from `first` on) where that gives at least half
// the chunks the flat cut `flat` gives, else the flat cut of the dims as one extent. A chunk of a
// flattened [4096,768] row is 98,304 elements whose operands broadcast along a dim ([768] scales,
// [4096,1] statistics) are indexed by a division per element, which stops vectorisation; a chunk
// of [128,768] keeps the columns a loop of their own (a layer norm's loss sum 2.1 -> 0.65 ms).
// The CPU's alone: the GPU divides by a constant in a multiply and a shift, and fewer divisors of a
// leading dim there only meant fewer blocks (a sum over f32[1024,768] x [768] on the simulator:
// 192 -> 128 blocks, 14% more warp instructions).
struct RowCut {
  int64_t lead;
  Cut cut;
  Shape rest;
};
RowCut alignedRowCut(const Shape& shape, size_t first, int64_t wanted, int64_t minChunk, bool canPad, const Cut& flat) {
  for (size_t split = first + 1; split < shape.size(); ++split) {
    int64_t lead = product(shape, first, split), restElements = product(shape, split, shape.size());
    Cut cut = cutExtent(lead, wanted, std::max<int64_t>(1, (minChunk + restElements - 1) / restElements), canPad);
    if (cut.parts > 1 && 2 * cut.parts >= flat.parts)
      return {lead, cut, Shape(shape.begin() + static_cast<std::ptrdiff_t>(split), shape.end())};
  }
  return {product(shape, first, shape.size()), flat, {}};
}

// Elementwise ops one reduction recomputes rather than share (a chain's length). Its operand's
// producers are used by others too (a softmax's exp(x - max) feeds its sum and its division); a
// first stage sharing them would make fusion store them and read them back, and give the stage a
// loop kernel's shape where on its own it is a row kernel. Recomputing costs a few instructions
// per element, never bytes (copyElementwiseChain).
constexpr int kMaxOwnChain = 16;

// Splits `op` if it would leave the device idle; whether it did.
bool split(Op& op, const SplitPolicy& policy) {
  const TensorType& xt = op.operand(0)->type();
  if (xt.numElements() < policy.minSplitElements) return false;
  std::optional<std::vector<int64_t>> given;
  if (const Attr* a = op.findAttr("axes")) given = a->getIntList();
  auto normalized = reductionAxes(given, xt.rank());
  if (!normalized.ok() || normalized->empty()) return false;
  std::vector<int> axes = *normalized;
  std::sort(axes.begin(), axes.end());
  const int rank = xt.rank();
  bool canPad = identity(op.kind(), xt.dtype).has_value();
  // What the stages read, once the split is decided: the reduction's own copy of a shared operand.
  auto operand = [&op, &policy] {
    int budget = kMaxOwnChain;
    bool shared = op.operand(0)->uses().size() > 1;
    return shared && policy.copiesSharedOperands ? copyElementwiseChain(op, op.operand(0), budget) : op.operand(0);
  };
  Splitter s(op);
  // The reduced axes that end the shape (a suffix), and whether the rest of them start it.
  size_t suffix = 0;
  while (suffix < axes.size() && axes[axes.size() - 1 - suffix] == rank - 1 - static_cast<int>(suffix)) ++suffix;
  size_t firstSuffixAxis = static_cast<size_t>(rank) - suffix;
  // The reduced axes as one run [first, first + size): a prefix when first is 0.
  bool run = axes.back() - axes.front() + 1 == static_cast<int>(axes.size());
  size_t first = static_cast<size_t>(axes.front()), end = static_cast<size_t>(axes.back()) + 1;
  bool prefix = run && first == 0;

  if (suffix == axes.size()) {
    // Rows: [outer, n]. Few rows: each row over several blocks.
    int64_t rows = product(xt.shape, 0, firstSuffixAxis), n = product(xt.shape, firstSuffixAxis, rank);
    if (rows >= policy.enoughRows) return false;
    int64_t wanted = (policy.rowWorkers + rows - 1) / rows;
    Cut cut = cutExtent(n, wanted, policy.minRowChunk, canPad);
    if (cut.parts <= 1) return false;
    if (!policy.alignsRowCuts) {
      s.finish(s.reduceMiddle(operand(), rows, n, 1, cut), n);
      return true;
    }
    auto [lead, aligned, rest] = alignedRowCut(xt.shape, firstSuffixAxis, wanted, policy.minRowChunk, canPad, cut);
    s.finish(s.reduceMiddle(operand(), rows, lead, 1, aligned, rest), n);
    return true;
  }
  if (prefix || (run && policy.outerColumns)) {
    // Columns: [outer, n, inner]. Enough chunks of rows that the first stage's outputs fill the device.
    int64_t outer = product(xt.shape, 0, first), n = product(xt.shape, first, end), inner = product(xt.shape, end, rank);
    int64_t workers = outer * ((inner + policy.columnsPerWorker - 1) / policy.columnsPerWorker);
    Cut cut = cutExtent(n, (policy.columnWorkers + workers - 1) / workers, policy.minColumnChunk, canPad);
    if (cut.parts <= 1) return false;
    s.finish(s.reduceMiddle(operand(), outer, n, inner, cut), n);
    return true;
  }
  if (suffix > 0) {
    // The innermost axes first (contiguous rows, a row kernel), then the outer ones on the result,
    // whose axes keep their numbers. Each stage may be split again when the pass revisits it.
    std::vector<int64_t> inner, outer;
    for (int a : axes) (static_cast<size_t>(a) >= firstSuffixAxis ? inner : outer).push_back(a);
    Value* rows = s.reduceAxes(operand(), inner);
    s.finish(s.reduceAxes(rows, outer), xt.numElements() / op.result()->type().numElements());
    return true;
  }
  return false;
}

void collect(Block& block, std::vector<Op*>& out) {
  for (const std::unique_ptr<Op>& owned : block.ops()) {
    Op* op = owned.get();
    if (isReduction(op->kind())) out.push_back(op);
    for (size_t r = 0; r < op->numRegions(); ++r) collect(*op->region(r), out);
  }
}

PassResult splitReductionsFor(Module& module, PassContext& context, const SplitPolicy& policy) {
  bool changed = false;
  for (const std::unique_ptr<Function>& f : module.functions()) {
    // New stages may need splitting in turn (a column sum's first stage can still be long): repeat
    // until none splits. Each round divides a reduced extent by at least 8, so this ends quickly.
    for (bool again = true; again;) {
      again = false;
      std::vector<Op*> reductions;
      collect(f->body(), reductions);
      for (Op* op : reductions) {
        std::string name(op->name()), type = op->operand(0)->type().str();
        SourceLoc loc = op->loc();
        if (!split(*op, policy)) continue;  // (split erases op)
        context.remark(name, loc, name + " of " + type + " split into stages that fill " + policy.device);
        again = changed = true;
      }
    }
  }
  return changed;
}

}  // namespace

PassResult splitReductions(Module& module, PassContext& context) { return splitReductionsFor(module, context, kGpuPolicy); }

PassResult splitReductionsForCpu(Module& module, PassContext& context) {
  return splitReductionsFor(module, context, kCpuPolicy);
}

}  // namespace kiln::passes
