// Element emitters for reductions: reduce_*, argmax/argmin, softmax, log_softmax, layer_norm and
// softmax_cross_entropy. Each output element loops over the elements it combines, in the order
// ir/interp/reductions.cpp visits them, accumulating floats in double (max and min, which round
// nothing, in their own type) and ints in wrapping i64.
#include <llvm/IR/Constants.h>

#include <cmath>

#include "codegen/element_emitter.h"
#include "ir/shape_rules.h"

namespace kiln::codegen {

ReducedAxes reducedAxesOf(const Op& reduce) {
  const TensorType& xt = reduce.operand(0)->type();
  if (reduce.kind() == OpKind::Argmax || reduce.kind() == OpKind::Argmin) {
    int axis = *normalizeAxis(reduce.intAttr("axis"), xt.rank());
    int64_t n = xt.shape[static_cast<size_t>(axis)];
    return {{axis}, reduce.attr("keepdims").getBool(), {n}, n};
  }
  auto axes = reductionAxes(optionalIntsAttr(reduce, "axes"), xt.rank());
  KILN_INTERNAL_CHECK(axes.ok(), "reduce: axes were not verified");
  ReducedAxes r{*axes, reduce.attr("keepdims").getBool(), {}, 1};
  for (int a : r.axes) r.extents.push_back(xt.shape[static_cast<size_t>(a)]);
  r.count = numElements(r.extents);
  return r;
}

// Output dims and reduced positions interleaved back into the operand's order (keepdims outputs
// hold a size-1 dim at each reduced axis, which is skipped).
Index reducedSource(const Index& index, const ReducedAxes& r, const Index& ivs, int rank) {
  Index source;
  size_t out = 0, iv = 0;
  for (int d = 0; d < rank; ++d) {
    bool reduced = std::find(r.axes.begin(), r.axes.end(), d) != r.axes.end();
    if (reduced) {
      source.push_back(ivs[iv++]);
      if (r.keepdims) ++out;
    } else {
      source.push_back(index[out++]);
    }
  }
  return source;
}

namespace {

// Float x (f16, bf16 or f32; f64 on i64 bits) as an ordered integer key: non-negative floats as
// they are, negative ones with their magnitude bits flipped, so that integer order is float order
// (-0 below +0); NaN is `nanKey`.
llvm::Value* orderedKey(ElementEmitter& e, llvm::Value* x, llvm::Value* nanKey) {
  auto& b = e.b;
  llvm::Type* floatType = x->getType()->getScalarType()->isDoubleTy() ? b.getDoubleTy() : b.getFloatTy();
  llvm::Value* f = b.CreateFPCast(x, floatType);  // exact for f16, bf16 and f32
  llvm::Type* keyType = nanKey->getType();
  llvm::Value* bits = b.CreateBitCast(f, keyType);
  llvm::Value* magnitude = llvm::ConstantInt::get(keyType, llvm::APInt::getSignedMaxValue(keyType->getIntegerBitWidth()));
  llvm::Value* ordered =
      b.CreateSelect(b.CreateICmpSLT(bits, llvm::ConstantInt::get(keyType, 0)), b.CreateXor(bits, magnitude), bits);
  return b.CreateSelect(b.CreateFCmpUNO(f, f), nanKey, ordered);
}

// The largest (`largest`) or smallest key of a key type.
llvm::Value* extremeKey(llvm::Type* keyType, bool largest) {
  unsigned bits = keyType->getIntegerBitWidth();
  return llvm::ConstantInt::get(keyType, largest ? llvm::APInt::getSignedMaxValue(bits) : llvm::APInt::getSignedMinValue(bits));
}

// A float max (or min) the CPU's loop vectoriser keeps in SIMD lanes, 16 to a 512-bit vector: on
// each element's f32 bits (f64's as i64, 8 to a vector) as an ordered integer key (orderedKey),
// and NaN as the largest key for max (the smallest for min), so NaN beats every value as in the
// interpreter. Integer max and min vectorise without the no-NaN promise LLVM needs for maxnum,
// and f32 holds f16 and bf16 exactly, so the result is exact; the key of the winner is decoded
// back to its float (NaN as a quiet NaN). A row of +0 and -0 gives +0 for max and -0 for min.
// (f64 compared as doubles was a chain of scalar max, NaN check and blend per element: softmax
// over f64[2048,1000] spent two thirds of its time in its max pass.)
Accumulation vectorisableMaxMin(ElementEmitter& e, bool isMax, DType t) {
  auto& b = e.b;
  bool isDouble = t == DType::F64;
  llvm::Type* keyType = isDouble ? b.getInt64Ty() : b.getInt32Ty();
  llvm::Type* floatType = isDouble ? b.getDoubleTy() : b.getFloatTy();
  auto key = [&e, keyType, isMax](llvm::Value* x) { return orderedKey(e, x, extremeKey(keyType, isMax)); };
  auto combine = [&e, isMax](llvm::Value* a, llvm::Value* c) -> llvm::Value* {
    return e.b.CreateBinaryIntrinsic(isMax ? llvm::Intrinsic::smax : llvm::Intrinsic::smin, a, c);
  };
  auto add = [key, combine](llvm::Value* a, llvm::Value* x) { return combine(a, key(x)); };
  auto finish = [&e, keyType, floatType, t](llvm::Value* a) {
    auto& b = e.b;
    llvm::Value* magnitude = extremeKey(keyType, /*largest=*/true);
    llvm::Value* bits = b.CreateSelect(b.CreateICmpSLT(a, llvm::ConstantInt::get(keyType, 0)), b.CreateXor(a, magnitude), a);
    llvm::Value* f = b.CreateBitCast(bits, floatType);
    llvm::Value* quiet = b.CreateSelect(b.CreateFCmpUNO(f, f), llvm::ConstantFP::getQNaN(floatType), f);
    return e.fromDouble(b.CreateFPCast(quiet, b.getDoubleTy()), t);
  };
  return {key(llvm::ConstantFP::getInfinity(floatType, /*negative=*/isMax)), add, combine, finish, std::nullopt};
}

}  // namespace

Values argCandidate(ElementEmitter& e, const Op& op, llvm::Value* k, llvm::Value* x) {
  DType t = op.operand(0)->type().dtype;
  return {k, isInt(t) ? e.toI64(x, t) : x};
}

Values argIdentity(ElementEmitter& e, const Op& op, int64_t n) {
  DType t = op.operand(0)->type().dtype;
  bool isMax = op.kind() == OpKind::Argmax;
  // The value every element ties or beats; index n loses every tie.
  llvm::Value* worst = isFloat(t)       ? e.constant(t, isMax ? -INFINITY : INFINITY)
                       : isUnsigned(t) ? e.i64(isMax ? 0 : -1)  // -1: all ones, the largest unsigned
                                       : e.i64(isMax ? INT64_MIN : INT64_MAX);
  return {e.i64(n), worst};
}

Values argBetter(ElementEmitter& e, const Op& op, const Values& a, const Values& c, bool later) {
  auto& b = e.b;
  DType t = op.operand(0)->type().dtype;
  bool isMax = op.kind() == OpKind::Argmax;
  llvm::Value *ka = a[0], *va = a[1], *kc = c[0], *vc = c[1];
  llvm::Value* earlier = later ? b.getFalse() : b.CreateICmpSLT(kc, ka);
  llvm::Value* cWins;
  if (isInt(t)) {
    // Ints held as i64: zero-extended when unsigned, so the unsigned compares order them.
    bool u = isUnsigned(t);
    llvm::Value* beyond = isMax ? (u ? b.CreateICmpUGT(vc, va) : b.CreateICmpSGT(vc, va))
                                : (u ? b.CreateICmpULT(vc, va) : b.CreateICmpSLT(vc, va));
    cWins = b.CreateOr(beyond, b.CreateAnd(b.CreateICmpEQ(vc, va), earlier));
  } else {
    // NaN beats every number, and between two NaNs (or two equal numbers) the earlier index wins.
    llvm::Value* aNaN = b.CreateFCmpUNO(va, va);
    llvm::Value* cNaN = b.CreateFCmpUNO(vc, vc);
    llvm::Value* beyond = isMax ? b.CreateFCmpOGT(vc, va) : b.CreateFCmpOLT(vc, va);
    llvm::Value* numbers = b.CreateOr(beyond, b.CreateAnd(b.CreateFCmpOEQ(vc, va), earlier));
    cWins = b.CreateSelect(aNaN, b.CreateAnd(cNaN, earlier), b.CreateOr(cNaN, numbers));
  }
  return {b.CreateSelect(cWins, kc, ka), b.CreateSelect(cWins, vc, va)};
}

namespace {

// The dtype of the floats a sum adds: a sum of f32 values cast to f64 (split-reductions widens a
// split sum's chunks so) adds f32 elements as an f32 sum does, and its loop vectorises at the
// f32 width (a gelu's loss over f32[4096,1024]: its erf was computed 8 wide, not 16).
DType summedFloatsOf(const Op& op) {
  const Value* x = op.operand(0);
  DType t = x->type().dtype;
  const Op* producer = x->definingOp();
  if (t != DType::F64 || !producer || producer->kind() != OpKind::Cast) return t;
  DType source = producer->operand(0)->type().dtype;
  return isFloat(source) ? source : t;
}

bool keepsSumInF32(ElementEmitter& e, const Op& op) {
  const Attr* accumulate = op.findAttr("accumulate");
  return accumulate && accumulate->getDType() == DType::F32 && e.target().sumsInF32WhereAllowed();
}

// An f32 sum kept in f32 (reduce_sum {accumulate = f32}): each product of a `mul` feeding it is
// fused into its step (one fma, as a BLAS dot product takes it), every step reassociable so that
// the loop vectoriser keeps partial sums in lanes. A matrix-vector row so is 3.4x faster than
// widened to double where the matrix stays in cache (f32[512,512] x [512,1]: 21 -> 6.5 us) and
// reads at the memory's bandwidth where it streams (f32[4096,4096] x [4096]: 1.8 -> 1.5 ms).
Accumulation f32Accumulation(ElementEmitter& e) {
  auto reassociable = [](llvm::Value* v) {
    if (auto* i = llvm::dyn_cast<llvm::Instruction>(v)) i->setHasAllowReassoc(true);
    return v;
  };
  auto add = [&e, reassociable](llvm::Value* sum, llvm::Value* x) {
    auto* product = llvm::dyn_cast<llvm::BinaryOperator>(x);
    if (product && product->getOpcode() == llvm::Instruction::FMul)
      return reassociable(e.b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {sum->getType()},
                                              {product->getOperand(0), product->getOperand(1), sum}));
    return reassociable(e.b.CreateFAdd(sum, x));
  };
  auto combine = [&e, reassociable](llvm::Value* a, llvm::Value* c) { return reassociable(e.b.CreateFAdd(a, c)); };
  return {e.constant(DType::F32, 0.0), add, combine, [](llvm::Value* sum) { return sum; }, DType::F32};
}

}  // namespace

Accumulation accumulationFor(ElementEmitter& e, const Op& op, int64_t count) {
  DType t = op.result()->type().dtype;
  OpKind kind = op.kind();
  if (isInt(t)) {
    // Unsigned dtypes accumulate zero-extended in i64 and compare and divide unsigned.
    bool isUnsignedInt = isUnsigned(t);
    int64_t identity = kind == OpKind::ReduceProd  ? 1
                       : kind == OpKind::ReduceMax ? (isUnsignedInt ? 0 : INT64_MIN)
                       : kind == OpKind::ReduceMin ? (isUnsignedInt ? -1 : INT64_MAX)  // -1: all ones, UINT64_MAX
                                                   : 0;
    auto combine = [&e, kind, isUnsignedInt](llvm::Value* a, llvm::Value* v) -> llvm::Value* {
      auto& b = e.b;
      auto less = [&](llvm::Value* p, llvm::Value* q) { return isUnsignedInt ? b.CreateICmpULT(p, q) : b.CreateICmpSLT(p, q); };
      switch (kind) {
        case OpKind::ReduceMax: return b.CreateSelect(less(a, v), v, a);
        case OpKind::ReduceMin: return b.CreateSelect(less(v, a), v, a);
        case OpKind::ReduceProd: return b.CreateMul(a, v);
        default: return b.CreateAdd(a, v);  // sum, mean
      }
    };
    return {e.i64(identity), [&e, combine, t](llvm::Value* a, llvm::Value* x) { return combine(a, e.toI64(x, t)); },
            combine,
            [&e, kind, count, t, isUnsignedInt](llvm::Value* a) {
              auto& b = e.b;
              // count > 0 here: a mean of no ints is an error raised before the loop.
              llvm::Value* r = a;
              if (kind == OpKind::ReduceMean) r = isUnsignedInt ? b.CreateUDiv(a, e.i64(count)) : b.CreateSDiv(a, e.i64(count));
              return b.CreateTrunc(r, e.computeType(t));
            },
            std::nullopt};
  }
  const bool isMaxMin = kind == OpKind::ReduceMax || kind == OpKind::ReduceMin;
  if (isMaxMin && e.target().reassociatesSums()) return vectorisableMaxMin(e, kind == OpKind::ReduceMax, t);
  if (isMaxMin) {
    // Exact in the elements' own compute type (f32 for f16/bf16/f32): a max or min rounds nothing,
    // so doubles would only cost a conversion per element and 64-bit shuffles.
    bool isMax = kind == OpKind::ReduceMax;
    auto combine = [&e, isMax](llvm::Value* a, llvm::Value* v) { return isMax ? e.floatMax(a, v) : e.floatMin(a, v); };
    return {e.constant(t, isMax ? -INFINITY : INFINITY), combine, combine, [](llvm::Value* a) { return a; }, std::nullopt};
  }
  if (kind == OpKind::ReduceSum && keepsSumInF32(e, op)) return f32Accumulation(e);
  double identity = kind == OpKind::ReduceProd ? 1.0 : 0.0;
  auto combine = [&e, kind](llvm::Value* a, llvm::Value* v) -> llvm::Value* {
    return kind == OpKind::ReduceProd ? e.b.CreateFMul(a, v) : e.accumulate(a, v);
  };
  return {e.f64(identity), [&e, combine](llvm::Value* a, llvm::Value* x) { return combine(a, e.toDouble(x)); },
          combine,
          [&e, kind, count, t](llvm::Value* a) {
            llvm::Value* r = kind == OpKind::ReduceMean ? e.b.CreateFDiv(a, e.f64(static_cast<double>(count))) : a;  // 0/0 = NaN
            return e.fromDouble(r, t);
          },
          /*summedFloats=*/summedFloatsOf(op)};
}

namespace {

llvm::Value* reduce(ElementEmitter& e, const Op& op, const Index& index) {
  auto& b = e.b;
  const Value* x = op.operand(0);
  const TensorType& xt = x->type();
  DType t = xt.dtype;
  ReducedAxes reduced = reducedAxesOf(op);
  OpKind kind = op.kind();
  bool isMaxMin = kind == OpKind::ReduceMax || kind == OpKind::ReduceMin;
  if (reduced.count == 0 && (isMaxMin || (kind == OpKind::ReduceMean && isInt(t)))) {
    // Known when compiling; raised by the kernel, which runs only if the result is non-empty.
    e.raiseIf(b.getTrue(), e.addError(op, "cannot reduce zero elements of " + xt.str() + " (the result has no value)"));
    return llvm::Constant::getNullValue(e.computeType(t));
  }
  auto element = [&](const Index& ivs) { return e.emit(x, reducedSource(index, reduced, ivs, xt.rank())); };
  Accumulation acc = accumulationFor(e, op, reduced.count);
  // Adjacent reduced axes (H and W of NCHW's [0, 2, 3]) are one loop: the same order of elements.
  std::vector<Shape> runs;
  for (size_t k = 0; k < reduced.axes.size(); ++k) {
    if (k == 0 || reduced.axes[k] != reduced.axes[k - 1] + 1) runs.emplace_back();
    runs.back().push_back(reduced.extents[k]);
  }
  // The last run, the innermost of the reduced axes, in accumulateRun's loop (widened at the
  // elements' width), the runs outside it in loops around that.
  Shape last;  // no reduced axes (a rank-0 operand): one element
  if (!runs.empty()) {
    last = runs.back();
    runs.pop_back();
  }
  Values total = e.mergedLoopNest(runs, {acc.init}, [&](const Index& outer, const Values& c) {
    return Values{e.accumulateRun(acc, c[0], numElements(last), [&](llvm::Value* k) {
      Index ivs = outer;
      for (llvm::Value* iv : e.delinearize(k, last)) ivs.push_back(iv);
      return element(ivs);
    })};
  });
  return acc.finish(total[0]);
}

}  // namespace

ArgKeys argKeysFor(ElementEmitter& e, const Op& op) {
  auto& b = e.b;
  DType t = op.operand(0)->type().dtype;
  bool isMax = op.kind() == OpKind::Argmax;
  bool isUnsignedInt = isUnsigned(t);
  ArgKeys keys;
  keys.keyType = t == DType::F64 || isInt(t) ? b.getInt64Ty() : b.getInt32Ty();
  llvm::Type* keyType = keys.keyType;
  keys.key = [&e, t, isMax, keyType](llvm::Value* x) -> llvm::Value* {
    auto& b = e.b;
    if (isInt(t)) return e.toI64(x, t);
    llvm::Value* f = b.CreateFPCast(x, t == DType::F64 ? b.getDoubleTy() : b.getFloatTy());
    return orderedKey(e, b.CreateFAdd(f, llvm::ConstantFP::get(f->getType(), 0.0)), extremeKey(keyType, isMax));
  };
  keys.extreme = isMax ? (isUnsignedInt ? llvm::Intrinsic::umax : llvm::Intrinsic::smax)
                       : (isUnsignedInt ? llvm::Intrinsic::umin : llvm::Intrinsic::smin);
  keys.worst = isUnsignedInt ? llvm::ConstantInt::get(keyType, isMax ? 0 : UINT64_MAX) : extremeKey(keyType, !isMax);
  keys.beats = [&e, isMax, isUnsignedInt](llvm::Value* key, llvm::Value* best) -> llvm::Value* {
    auto& b = e.b;
    if (isMax) return isUnsignedInt ? b.CreateICmpUGT(key, best) : b.CreateICmpSGT(key, best);
    return isUnsignedInt ? b.CreateICmpULT(key, best) : b.CreateICmpSLT(key, best);
  };
  return keys;
}

namespace {

// argReduce on the CPU along the innermost axis, in two passes the loop vectoriser widens (the
// one-pass scan's compare of {index, value} pairs it keeps scalar): the extreme element's key, as
// a max or min reduction, then the first index whose element has that key, as a min reduction of
// the indices that match.
// Floats compare by orderedKey (NaN the extreme, so the first NaN wins) of x + 0, which is +0 for
// -0: the two are equal, so the first of them wins; ints by their value (unsigned as unsigned).
// The second pass computes the elements again (a fused operand too): from the L1 or L2 cache for
// rows of the usual lengths.
llvm::Value* argReduceInTwoPasses(ElementEmitter& e, const Op& op, const std::function<llvm::Value*(llvm::Value*)>& element,
                                  int64_t n) {
  auto& b = e.b;
  ArgKeys keys = argKeysFor(e, op);
  llvm::Value* best = e.loop(n, {keys.worst}, [&](llvm::Value* k, const Values& c) {
    return Values{b.CreateBinaryIntrinsic(keys.extreme, c[0], keys.key(element(k)))};
  })[0];
  // Indices in i32 where they fit, so the compares and the index vector are as wide as the keys'.
  llvm::Type* indexType = n <= INT32_MAX ? b.getInt32Ty() : b.getInt64Ty();
  llvm::Value* first = e.loop(n, {llvm::ConstantInt::get(indexType, n)}, [&](llvm::Value* k, const Values& c) {
    llvm::Value* match = b.CreateICmpEQ(keys.key(element(k)), best);
    llvm::Value* candidate = b.CreateSelect(match, b.CreateTrunc(k, indexType), llvm::ConstantInt::get(indexType, n));
    return Values{b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, c[0], candidate)};
  })[0];
  return b.CreateZExt(first, b.getInt64Ty());
}

// The first occurrence of the max (min) wins; NaN counts as the extreme, so the first NaN wins.
llvm::Value* argReduce(ElementEmitter& e, const Op& op, const Index& index) {
  const Value* x = op.operand(0);
  int rank = x->type().rank();
  ReducedAxes reduced = reducedAxesOf(op);
  auto element = [&](llvm::Value* k) { return e.emit(x, reducedSource(index, reduced, {k}, rank)); };
  int64_t n = reduced.count;
  // Along the innermost axis only: down a strided axis neither pass vectorises, and reading the
  // elements twice made argmax over axis 0 of f32[1000,4096] 12.4 -> 31.4 ms (column tiles take
  // those where the CPU tiles them: emitColumnTileItem).
  if (e.target().reassociatesSums() && n > 1 && reduced.axes[0] == rank - 1) return argReduceInTwoPasses(e, op, element, n);
  Values best = e.loop(n - 1, argCandidate(e, op, e.i64(0), element(e.i64(0))), [&](llvm::Value* iv, const Values& c) {
    llvm::Value* k = e.b.CreateAdd(iv, e.i64(1));
    return argBetter(e, op, c, argCandidate(e, op, k, element(k)), /*later=*/true);
  });
  return best[0];
}

// The row through `index` along `axis`: its max, and the sum of exp(x - max), in double.
struct RowStats {
  llvm::Value* max;
  llvm::Value* sum;
};
RowStats rowStats(ElementEmitter& e, const std::function<llvm::Value*(llvm::Value*)>& element, int64_t n) {
  auto& b = e.b;
  llvm::Value* max = e.loop(n, {e.f64(-INFINITY)}, [&](llvm::Value* k, const Values& c) {
    return Values{e.floatMax(c[0], e.toDouble(element(k)))};
  })[0];
  llvm::Value* sum = e.loop(n, {e.f64(0.0)}, [&](llvm::Value* k, const Values& c) {
    return Values{b.CreateFAdd(c[0], e.math(MathFn::Exp, {b.CreateFSub(e.toDouble(element(k)), max)}))};
  })[0];
  return {max, sum};
}

// softmax: exp(x - max) / sum; log_softmax: x - max - log(sum).
llvm::Value* softmax(ElementEmitter& e, const Op& op, const Index& index) {
  auto& b = e.b;
  const Value* x = op.operand(0);
  size_t axis = static_cast<size_t>(*normalizeAxis(op.intAttr("axis"), x->type().rank()));
  auto element = [&](llvm::Value* k) {
    Index source = index;
    source[axis] = k;
    return e.emit(x, source);
  };
  RowStats row = rowStats(e, element, x->type().shape[axis]);
  llvm::Value* shifted = b.CreateFSub(e.toDouble(e.emit(x, index)), row.max);
  llvm::Value* r = op.kind() == OpKind::LogSoftmax ? b.CreateFSub(shifted, e.math(MathFn::Log, {row.sum}))
                                                   : b.CreateFDiv(e.math(MathFn::Exp, {shifted}), row.sum);
  return e.fromDouble(r, op.result()->type().dtype);
}

// Normalises over dims axis.. with the block's mean and biased variance, both in double.
llvm::Value* layerNorm(ElementEmitter& e, const Op& op, const Index& index) {
  auto& b = e.b;
  const Value* x = op.operand(0);
  size_t axis = static_cast<size_t>(*normalizeAxis(op.intAttr("axis"), x->type().rank()));
  Shape inner(x->type().shape.begin() + static_cast<ptrdiff_t>(axis), x->type().shape.end());
  auto element = [&](const Index& ivs) {
    Index source(index.begin(), index.begin() + static_cast<ptrdiff_t>(axis));
    source.insert(source.end(), ivs.begin(), ivs.end());
    return e.toDouble(e.emit(x, source));
  };
  llvm::Value* count = e.f64(static_cast<double>(numElements(inner)));
  llvm::Value* sum = e.mergedLoopNest({inner}, {e.f64(0.0)}, [&](const Index& ivs, const Values& c) {
    return Values{b.CreateFAdd(c[0], element(ivs))};
  })[0];
  llvm::Value* mean = b.CreateFDiv(sum, count);
  llvm::Value* squares = e.mergedLoopNest({inner}, {e.f64(0.0)}, [&](const Index& ivs, const Values& c) {
    llvm::Value* d = b.CreateFSub(element(ivs), mean);
    return Values{b.CreateFAdd(c[0], b.CreateFMul(d, d))};
  })[0];
  llvm::Value* var = b.CreateFDiv(squares, count);
  llvm::Value* epsilon = e.f64(op.floatAttr("epsilon"));
  llvm::Value* invStd = b.CreateFDiv(e.f64(1.0), e.math(MathFn::Sqrt, {b.CreateFAdd(var, epsilon)}));
  llvm::Value* y = b.CreateFMul(b.CreateFSub(e.toDouble(e.emit(x, index)), mean), invStd);
  Index param(index.begin() + static_cast<ptrdiff_t>(axis), index.end());
  llvm::Value* scaled = b.CreateFMul(y, e.toDouble(e.emit(op.operand(1), param)));
  return e.fromDouble(b.CreateFAdd(scaled, e.toDouble(e.emit(op.operand(2), param))), op.result()->type().dtype);
}

// mean over rows r of max + log(sum exp(x - max)) - logits[r, labels[r]]; a label outside [0, K)
// raises an error (and reads nothing).
llvm::Value* softmaxCrossEntropy(ElementEmitter& e, const Op& op, const Index&) {
  auto& b = e.b;
  const Value* logits = op.operand(0);
  const Value* labels = op.operand(1);
  int64_t rows = logits->type().shape[0], classes = logits->type().shape[1];
  int error = e.addError(op, "label out of range [0, " + std::to_string(classes) + ")");
  llvm::Value* total = e.loop(rows, {e.f64(0.0)}, [&](llvm::Value* r, const Values& c) {
    llvm::Value* label = e.toI64(e.emit(labels, {r}), labels->type().dtype);
    llvm::Value* bad = b.CreateOr(b.CreateICmpSLT(label, e.i64(0)), b.CreateICmpSGE(label, e.i64(classes)));
    e.raiseIf(bad, error);
    auto element = [&](llvm::Value* k) { return e.emit(logits, {r, k}); };
    RowStats row = rowStats(e, element, classes);
    llvm::Value* picked =
        e.ifElse(bad, [&] { return e.f64(0.0); }, [&] { return e.toDouble(element(label)); });
    llvm::Value* loss = b.CreateFSub(b.CreateFAdd(row.max, e.math(MathFn::Log, {row.sum})), picked);
    return Values{b.CreateFAdd(c[0], loss)};
  })[0];
  return e.fromDouble(b.CreateFDiv(total, e.f64(static_cast<double>(rows))), op.result()->type().dtype);
}

}  // namespace

llvm::Value* emitReduction(ElementEmitter& e, const Op& op, const Index& index) {
  switch (op.kind()) {
    case OpKind::ReduceSum:
    case OpKind::ReduceMean:
    case OpKind::ReduceMax:
    case OpKind::ReduceMin:
    case OpKind::ReduceProd: return reduce(e, op, index);
    case OpKind::Argmax:
    case OpKind::Argmin: return argReduce(e, op, index);
    case OpKind::Softmax:
    case OpKind::LogSoftmax: return softmax(e, op, index);
    case OpKind::LayerNorm: return layerNorm(e, op, index);
    case OpKind::SoftmaxCrossEntropy: return softmaxCrossEntropy(e, op, index);
    default: break;
  }
  internalError(__FILE__, __LINE__, "not a reduction: " + std::string(op.name()));
}

}  // namespace kiln::codegen
