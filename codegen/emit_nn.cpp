// Element emitters for the dense ops: matmul, conv2d, max_pool2d and avg_pool2d. Each output
// element loops over its contraction or window in the order of ir/interp/nn.cpp, accumulating
// floats in double (rounded once; max_pool2d in x's own type, where max is exact) and ints in
// wrapping i64. (On the GPU these later prefer cuBLASLt and cuDNN; this generated code stays as
// the fallback and the reference.)
#include <llvm/IR/Constants.h>

#include <algorithm>
#include <cmath>

#include "codegen/element_emitter.h"
#include "ir/shape_rules.h"

namespace kiln::codegen {

namespace {

// NumPy matmul: a 1-D a is a row [1,K], a 1-D b a column [K,1], and those unit dims are not in
// the result; batch dims broadcast.
llvm::Value* matmul(ElementEmitter& e, const Op& op, const Index& index) {
  auto& b = e.b;
  const Value* a = op.operand(0);
  const Value* c = op.operand(1);
  const Shape& as = a->type().shape;
  const Shape& bs = c->type().shape;
  bool aVector = as.size() == 1, bVector = bs.size() == 1;
  Shape batchA(as.begin(), as.end() - (aVector ? 1 : 2)), batchB(bs.begin(), bs.end() - (bVector ? 1 : 2));
  Shape batch = *broadcastShapes(batchA, batchB);
  int64_t k = as.back();
  Index batchIndex(index.begin(), index.begin() + static_cast<ptrdiff_t>(batch.size()));
  llvm::Value* row = aVector ? nullptr : index[batch.size()];
  llvm::Value* column = bVector ? nullptr : index.back();
  bool ints = isInt(a->type().dtype);
  llvm::Value* zero = ints ? e.i64(0) : e.f64(0.0);
  llvm::Value* acc = e.loop(k, {zero}, [&](llvm::Value* p, const Values& sum) {
    Index ai = e.broadcastIndex(batchIndex, batchA, batch);
    if (!aVector) ai.push_back(row);
    ai.push_back(p);
    Index bi = e.broadcastIndex(batchIndex, batchB, batch);
    bi.push_back(p);
    if (!bVector) bi.push_back(column);
    llvm::Value* x = e.emit(a, ai);
    llvm::Value* y = e.emit(c, bi);
    if (ints) return Values{e.multiplyAdd(sum[0], e.toI64(x, a->type().dtype), e.toI64(y, c->type().dtype))};
    return Values{e.multiplyAdd(sum[0], e.toDouble(x), e.toDouble(y))};
  })[0];
  DType t = op.result()->type().dtype;
  return ints ? b.CreateTrunc(acc, e.computeType(t)) : e.fromDouble(acc, t);
}

// ONNX Conv (cross-correlation) with groups; out-of-range input positions read zero padding
// and are skipped, so the sum adds exactly the terms the interpreter adds. Channels-last is the
// same sum at the channels-first view of the output index, reading x at channels-last indices.
llvm::Value* conv2d(ElementEmitter& e, const Op& op, const Index& outIndex) {
  auto& b = e.b;
  const Value* x = op.operand(0);
  const Value* w = op.operand(1);
  std::vector<int64_t> strides = op.intsAttr("strides"), pads = op.intsAttr("pads"), dil = op.intsAttr("dilations");
  ActivationLayout layout = activationLayout(op);
  Index index = layout.channelsFirst(outIndex);
  Shape xs = layout.channelsFirst(x->type().shape);
  const Shape& ws = w->type().shape;
  int64_t groupChannels = ws[1];
  int64_t outPerGroup = ws[0] / op.intAttr("groups");
  llvm::Value* firstChannel = b.CreateMul(b.CreateUDiv(index[1], e.i64(outPerGroup)), e.i64(groupChannels));
  Shape window{groupChannels, ws[2], ws[3]};
  llvm::Value* acc = e.loopNest(window, {e.f64(0.0)}, [&](const Index& ivs, const Values& sum) {
    llvm::Value* iy = e.windowPosition(index[2], strides[0], pads[0], ivs[1], dil[0]);
    llvm::Value* ix = e.windowPosition(index[3], strides[1], pads[1], ivs[2], dil[1]);
    llvm::Value* inside = b.CreateAnd(e.inRange(iy, xs[2]), e.inRange(ix, xs[3]));
    return e.ifThen(inside, [&] {
      llvm::Value* channel = b.CreateAdd(firstChannel, ivs[0]);
      llvm::Value* xv = e.emit(x, layout.stored({index[0], channel, iy, ix}));
      llvm::Value* wv = e.emit(w, {index[1], ivs[0], ivs[1], ivs[2]});
      return Values{e.multiplyAdd(sum[0], e.toDouble(xv), e.toDouble(wv))};
    }, sum);
  })[0];
  return e.fromDouble(acc, op.result()->type().dtype);
}

constexpr int64_t kMaxUnrolledWindow = 16;

// Padding never takes part: max is over the window's real elements (NaN wins), avg their mean.
// Channels-last pools at the channels-first view (ActivationLayout).
llvm::Value* pool2d(ElementEmitter& e, const Op& op, const Index& outIndex) {
  auto& b = e.b;
  const Value* x = op.operand(0);
  ActivationLayout layout = activationLayout(op);
  Index index = layout.channelsFirst(outIndex);
  Shape xs = layout.channelsFirst(x->type().shape);
  auto [kernel, strides, pads, dil] = poolWindow(op);
  bool isMax = op.kind() == OpKind::MaxPool2d;
  // Max is exact in x's own compute type; avg sums in double.
  llvm::Type* accType = isMax ? e.computeType(x->type().dtype) : b.getDoubleTy();
  // Without padding every window lies inside x (the output size is floor((in - span) / stride) + 1),
  // so the reads need no bounds test: unconditional, the CPU's vectoriser reads a stride-2 window
  // with interleaved loads instead of masked gathers.
  bool padded = std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; });
  Values init{llvm::ConstantFP::get(accType, isMax ? -INFINITY : 0.0), e.i64(0)};
  auto window = [&](const Index& ivs, const Values& c) {
    llvm::Value* iy = e.windowPosition(index[2], strides[0], pads[0], ivs[0], dil[0]);
    llvm::Value* ix = e.windowPosition(index[3], strides[1], pads[1], ivs[1], dil[1]);
    auto add = [&](llvm::Value* v) { return isMax ? e.floatMax(c[0], v) : b.CreateFAdd(c[0], e.toDouble(v)); };
    if (!padded) return Values{add(e.emit(x, layout.stored({index[0], index[1], iy, ix}))), b.CreateAdd(c[1], e.i64(1))};
    return e.ifThen(b.CreateAnd(e.inRange(iy, xs[2]), e.inRange(ix, xs[3])), [&] {
      return Values{add(e.emit(x, layout.stored({index[0], index[1], iy, ix}))), b.CreateAdd(c[1], e.i64(1))};
    }, c);
  };
  // A small window as straight-line code, so that the loop over a row's columns (channels, NHWC) is
  // innermost and the vectoriser widens it (LLVM left a 3x3 window's inner loop rolled): on a
  // 2-core Sapphire Rapids, an avg pool 3x3 stride 1 pad 1 over f32[8,64,56,56] 3.1 -> 1.4 ms, a
  // max pool 3x3 stride 2 pad 1 over NHWC f32[8,112,112,64] 0.76 -> 0.61. Not along strided
  // NCHW rows, which it then widens worse (that max pool over NCHW 1.55 -> 1.67).
  Values acc = init;
  if (kernel[0] * kernel[1] <= kMaxUnrolledWindow && (layout.channelsLast || strides[1] == 1)) {
    for (int64_t ky = 0; ky < kernel[0]; ++ky)
      for (int64_t kx = 0; kx < kernel[1]; ++kx) acc = window({e.i64(ky), e.i64(kx)}, acc);
  } else {
    acc = e.loopNest({kernel[0], kernel[1]}, init, window);
  }
  if (isMax) return acc[0];
  return e.fromDouble(b.CreateFDiv(acc[0], b.CreateSIToFP(acc[1], b.getDoubleTy())), op.result()->type().dtype);
}

}  // namespace

Index ActivationLayout::stored(const Index& i) const { return channelsLast ? Index{i[0], i[2], i[3], i[1]} : i; }
Index ActivationLayout::channelsFirst(const Index& i) const { return channelsLast ? Index{i[0], i[3], i[1], i[2]} : i; }
Shape ActivationLayout::channelsFirst(const Shape& s) const { return channelsLast ? permuteShape(s, kChannelsFirst) : s; }
ActivationLayout activationLayout(const Op& op) { return {isChannelsLast(op)}; }

llvm::Value* emitNN(ElementEmitter& e, const Op& op, const Index& index) {
  switch (op.kind()) {
    case OpKind::Matmul: return matmul(e, op, index);
    case OpKind::Conv2d: return conv2d(e, op, index);
    case OpKind::MaxPool2d:
    case OpKind::AvgPool2d: return pool2d(e, op, index);
    default: return emitBackward(e, op, index);
  }
}

}  // namespace kiln::codegen
