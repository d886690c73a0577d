// Element emitters for the backward ops, in gather form: each output element loops over the
// forward op's elements that it contributed to and adds their cotangents up (no atomics, so one
// work item per output element, as every other kernel). Sums are in double, rounded once.
#include <llvm/IR/Constants.h>

#include <algorithm>
#include <cmath>

#include "codegen/element_emitter.h"
#include "ir/shape_rules.h"

namespace kiln::codegen {

namespace {

// The output position `out` of a window that holds input position `in` at window offset `k`:
// out = (in + padBefore - k * dilation) / stride when that divides exactly and lies in
// [0, outSize). Returns the position and whether it is valid.
std::pair<llvm::Value*, llvm::Value*> windowOf(ElementEmitter& e, llvm::Value* in, llvm::Value* k, int64_t stride,
                                               int64_t padBefore, int64_t dilation, int64_t outSize) {
  auto& b = e.b;
  llvm::Value* t = b.CreateSub(b.CreateAdd(in, e.i64(padBefore)), b.CreateMul(k, e.i64(dilation)));
  llvm::Value* nonNegative = b.CreateICmpSGE(t, e.i64(0));
  // t is only divided where it is non-negative, so unsigned division is exact there.
  llvm::Value* safe = b.CreateSelect(nonNegative, t, e.i64(0));
  llvm::Value* out = b.CreateUDiv(safe, e.i64(stride));
  llvm::Value* exact = b.CreateICmpEQ(b.CreateURem(safe, e.i64(stride)), e.i64(0));
  llvm::Value* valid = b.CreateAnd(b.CreateAnd(nonNegative, exact), b.CreateICmpSLT(out, e.i64(outSize)));
  return {out, valid};
}

// Whether a pool's windows along one axis cannot overlap: dilation 1, stride >= kernel.
bool disjointWindows(int64_t kernel, int64_t stride, int64_t dilation) { return dilation == 1 && stride >= kernel; }

// The windows along one axis that may cover input position `in`, for a pool's backward pass.
// Where windows cannot overlap (a 2x2 pool of stride 2) there is one candidate, found by
// division, instead of one per kernel offset.
struct PoolAxis {
  int64_t kernel, stride, padBefore, dilation, outSize, inSize;
  bool disjoint() const { return disjointWindows(kernel, stride, dilation); }
  int64_t candidates() const { return disjoint() ? 1 : kernel; }
  // Disjoint windows that tile the axis exactly: every position lies in a window (a 2x2 pool of
  // stride 2 over an even size), so candidate() needs no check and positions no clamp.
  bool tiles() const { return disjoint() && stride == kernel && padBefore == 0 && inSize == outSize * stride; }
  // (the window, the kernel offset of `in` in it, whether that window exists) for candidate `iv`.
  std::tuple<llvm::Value*, llvm::Value*, llvm::Value*> candidate(ElementEmitter& e, llvm::Value* in,
                                                                 llvm::Value* iv) const {
    if (!disjoint()) {
      auto [out, valid] = windowOf(e, in, iv, stride, padBefore, dilation, outSize);
      return {out, iv, valid};
    }
    auto& b = e.b;
    llvm::Value* t = b.CreateAdd(in, e.i64(padBefore));  // non-negative: in >= 0, padding >= 0
    llvm::Value* out = b.CreateUDiv(t, e.i64(stride));
    llvm::Value* offset = b.CreateSub(t, b.CreateMul(out, e.i64(stride)));
    if (tiles()) return {out, offset, b.getTrue()};
    llvm::Value* valid = b.CreateAnd(b.CreateICmpULT(offset, e.i64(kernel)), b.CreateICmpULT(out, e.i64(outSize)));
    return {out, offset, valid};
  }
};

// dx[n,c,h,w] = sum over the output channels o of c's group and kernel offsets (ky,kx) whose
// window covers (h,w): dy[n,o,oy,ox] * w[o, c mod C/groups, ky, kx]. (Channels-last: the same
// sums at channels-first indices, ActivationLayout.)
llvm::Value* conv2dBackwardData(ElementEmitter& e, const Op& op, const Index& outIndex) {
  auto& b = e.b;
  const Value* dy = op.operand(0);
  const Value* w = op.operand(1);
  std::vector<int64_t> strides = op.intsAttr("strides"), pads = op.intsAttr("pads"), dil = op.intsAttr("dilations");
  ActivationLayout layout = activationLayout(op);
  Index index = layout.channelsFirst(outIndex);
  const Shape& ws = w->type().shape;
  Shape dys = layout.channelsFirst(dy->type().shape);
  int64_t groupChannels = ws[1], outPerGroup = ws[0] / op.intAttr("groups");
  llvm::Value* group = b.CreateUDiv(index[1], e.i64(groupChannels));
  llvm::Value* channel = b.CreateURem(index[1], e.i64(groupChannels));
  llvm::Value* firstOut = b.CreateMul(group, e.i64(outPerGroup));
  llvm::Value* acc = e.loopNest({outPerGroup, ws[2], ws[3]}, {e.f64(0.0)}, [&](const Index& ivs, const Values& sum) {
    auto [oy, yValid] = windowOf(e, index[2], ivs[1], strides[0], pads[0], dil[0], dys[2]);
    auto [ox, xValid] = windowOf(e, index[3], ivs[2], strides[1], pads[1], dil[1], dys[3]);
    return e.ifThen(b.CreateAnd(yValid, xValid), [&] {
      llvm::Value* o = b.CreateAdd(firstOut, ivs[0]);
      llvm::Value* g = e.emit(dy, layout.stored({index[0], o, oy, ox}));
      llvm::Value* wv = e.emit(w, {o, channel, ivs[1], ivs[2]});
      return Values{e.multiplyAdd(sum[0], e.toDouble(g), e.toDouble(wv))};
    }, sum);
  })[0];
  return e.fromDouble(acc, op.result()->type().dtype);
}

// dw[o,c,ky,kx] = sum over n, oy, ox with the input position in range:
//   dy[n,o,oy,ox] * x[n, g*C/groups + c, oy*sy - top + ky*dy, ox*sx - left + kx*dx].
// (Channels-last: x and dy read at channels-first indices, ActivationLayout.)
llvm::Value* conv2dBackwardFilter(ElementEmitter& e, const Op& op, const Index& index) {
  auto& b = e.b;
  const Value* x = op.operand(0);
  const Value* dy = op.operand(1);
  std::vector<int64_t> strides = op.intsAttr("strides"), pads = op.intsAttr("pads"), dil = op.intsAttr("dilations");
  ActivationLayout layout = activationLayout(op);
  Shape xs = layout.channelsFirst(x->type().shape);
  Shape dys = layout.channelsFirst(dy->type().shape);
  const Shape& ws = op.result()->type().shape;
  int64_t outPerGroup = ws[0] / op.intAttr("groups");
  llvm::Value* channel = b.CreateAdd(b.CreateMul(b.CreateUDiv(index[0], e.i64(outPerGroup)), e.i64(ws[1])), index[1]);
  llvm::Value* acc = e.loopNest({dys[0], dys[2], dys[3]}, {e.f64(0.0)}, [&](const Index& ivs, const Values& sum) {
    llvm::Value* iy = e.windowPosition(ivs[1], strides[0], pads[0], index[2], dil[0]);
    llvm::Value* ix = e.windowPosition(ivs[2], strides[1], pads[1], index[3], dil[1]);
    return e.ifThen(b.CreateAnd(e.inRange(iy, xs[2]), e.inRange(ix, xs[3])), [&] {
      llvm::Value* g = e.emit(dy, layout.stored({ivs[0], index[0], ivs[1], ivs[2]}));
      llvm::Value* xv = e.emit(x, layout.stored({ivs[0], channel, iy, ix}));
      return Values{e.multiplyAdd(sum[0], e.toDouble(g), e.toDouble(xv))};
    }, sum);
  })[0];
  return e.fromDouble(acc, op.result()->type().dtype);
}

// One step of a scan for a window's first maximal element: (best, bestAt) after seeing v at
// window offset `at`. The first element takes over (`first`), then a NaN after a number or a
// number above the best so far, nothing after a NaN (as the interpreter's max pool). "Not <="
// (ugt) is "NaN or above" in one compare.
Values firstMaximumStep(ElementEmitter& e, llvm::Value* first, llvm::Value* best, llvm::Value* bestAt, llvm::Value* v,
                        llvm::Value* at) {
  auto& b = e.b;
  llvm::Value* take = b.CreateOr(first, b.CreateAnd(b.CreateFCmpORD(best, best), b.CreateFCmpUGT(v, best)));
  return Values{b.CreateSelect(take, v, best), b.CreateSelect(take, at, bestAt)};
}

// max_pool2d_backward where windows neither overlap nor reach into padding (a 2x2 pool of stride
// 2): (h,w) lies in at most one window, whose elements are all real, so dx[n,c,h,w] is that
// window's dy where (h,w) is its first maximal element, else 0. Every read is unconditional (a
// position past the last window reads the last one and its result is discarded), and the window
// is scanned in x's own type, where comparisons are exact: the CPU vectorises it without masks.
llvm::Value* maxPoolBackwardDisjoint(ElementEmitter& e, const Op& op, const Index& index, const ActivationLayout& layout,
                                     const PoolAxis& rows, const PoolAxis& cols) {
  auto& b = e.b;
  const Value* x = op.operand(0);
  const Value* dy = op.operand(1);
  auto [oy, ky, yValid] = rows.candidate(e, index[2], e.i64(0));
  auto [ox, kx, xValid] = cols.candidate(e, index[3], e.i64(0));
  auto clampTo = [&](llvm::Value* v, const PoolAxis& axis) {
    if (axis.tiles()) return v;  // in range already; a select would make the reads gathers
    return b.CreateSelect(b.CreateICmpULT(v, e.i64(axis.outSize)), v, e.i64(axis.outSize - 1));
  };
  oy = clampTo(oy, rows);
  ox = clampTo(ox, cols);
  // Offsets in the window as 32-bit integers: a vector of them fills one register where 64-bit
  // ones took two, and every step of the scan selects one (half the CPU's scan time on AVX2).
  llvm::Type* type = e.computeType(x->type().dtype);
  llvm::Value* mine = b.CreateTrunc(b.CreateAdd(b.CreateMul(ky, e.i64(cols.kernel)), kx), b.getInt32Ty());
  Values init{llvm::ConstantFP::get(type, -INFINITY), b.getInt32(0)};
  Values scan = e.loopNest({rows.kernel, cols.kernel}, init, [&](const Index& j, const Values& c) {
    llvm::Value* v = e.emit(x, layout.stored({index[0], index[1], e.windowPosition(oy, rows.stride, 0, j[0], 1),
                                              e.windowPosition(ox, cols.stride, 0, j[1], 1)}));
    llvm::Value* at = b.CreateTrunc(b.CreateAdd(b.CreateMul(j[0], e.i64(cols.kernel)), j[1]), b.getInt32Ty());
    return firstMaximumStep(e, b.CreateICmpEQ(at, b.getInt32(0)), c[0], c[1], v, at);
  });
  llvm::Value* chosen = b.CreateAnd(b.CreateAnd(yValid, xValid), b.CreateICmpEQ(scan[1], mine));
  llvm::Value* g = e.emit(dy, layout.stored({index[0], index[1], oy, ox}));
  llvm::Value* zero = llvm::ConstantFP::get(g->getType(), 0.0);
  return b.CreateSelect(chosen, b.CreateFAdd(zero, g), zero);  // 0 + dy, as the sum gives: -0 becomes +0
}

// The kernel offset (ky * kw + kx, i64) of max-pool window (oy,ox)'s first maximal real element.
// A window inside x (most of them) is scanned straight through in x's compute type, where
// comparisons are exact; one reaching into the padding skips its padded positions, in double.
// (A 3x3 stride-2 pool gradient over f32[32,64,56,56], every window scanned the second way:
// 130 ms, jax.jit 90.)
llvm::Value* maxPoolWindowArgmax(ElementEmitter& e, const Op& op, const Index& index, const ActivationLayout& layout,
                                 llvm::Value* oy, llvm::Value* ox) {
  auto& b = e.b;
  const Value* x = op.operand(0);
  auto [kernel, strides, pads, dil] = poolWindow(op);
  Shape xs = layout.channelsFirst(x->type().shape);
  auto at = [&](const Index& j) { return b.CreateAdd(b.CreateMul(j[0], e.i64(kernel[1])), j[1]); };
  auto position = [&](const Index& j) {  // x's channels-first index of window offset j
    return Index{index[0], index[1], e.windowPosition(oy, strides[0], pads[0], j[0], dil[0]),
                 e.windowPosition(ox, strides[1], pads[1], j[1], dil[1])};
  };
  auto inside = [&](llvm::Value* o, int64_t axis) {  // the window's first and last positions inside x
    llvm::Value* first = e.windowPosition(o, strides[axis], pads[axis], e.i64(0), dil[axis]);
    return b.CreateAnd(b.CreateICmpSGE(first, e.i64(0)),
                       b.CreateICmpSLT(b.CreateAdd(first, e.i64((kernel[axis] - 1) * dil[axis])), e.i64(xs[axis + 2])));
  };
  return e.ifElse(b.CreateAnd(inside(oy, 0), inside(ox, 1)), [&] {
    llvm::Type* type = e.computeType(x->type().dtype);
    Values init{llvm::ConstantFP::get(type, -INFINITY), e.i64(0)};
    return e.loopNest({kernel[0], kernel[1]}, init, [&](const Index& j, const Values& c) {
      llvm::Value* v = e.emit(x, layout.stored(position(j)));
      return firstMaximumStep(e, b.CreateICmpEQ(at(j), e.i64(0)), c[0], c[1], v, at(j));
    })[1];
  }, [&] {
    Values init{e.f64(-INFINITY), e.i64(-1)};
    return e.loopNest({kernel[0], kernel[1]}, init, [&](const Index& j, const Values& c) {
      Index p = position(j);
      return e.ifThen(b.CreateAnd(e.inRange(p[2], xs[2]), e.inRange(p[3], xs[3])), [&] {
        llvm::Value* v = e.toDouble(e.emit(x, layout.stored(p)));
        return firstMaximumStep(e, b.CreateICmpSLT(c[1], e.i64(0)), c[0], c[1], v, at(j));
      }, c);
    })[1];
  });
}

// dx[n,c,h,w] = sum over the windows covering (h,w) of their dy, where (h,w) is the window's
// first maximal real element (max) or one of its `count` real elements (avg: dy / count).
// Channels-last: the same at channels-first indices (ActivationLayout).
llvm::Value* pool2dBackward(ElementEmitter& e, const Op& op, const Index& outIndex) {
  auto& b = e.b;
  bool isMax = op.kind() == OpKind::MaxPool2dBackward;
  const Value* dy = op.operand(isMax ? 1 : 0);
  ActivationLayout layout = activationLayout(op);
  Index index = layout.channelsFirst(outIndex);
  Shape xs = layout.channelsFirst(op.result()->type().shape);
  Shape dys = layout.channelsFirst(dy->type().shape);
  auto [kernel, strides, pads, dil] = poolWindow(op);
  PoolAxis rows{kernel[0], strides[0], pads[0], dil[0], dys[2], xs[2]};
  PoolAxis cols{kernel[1], strides[1], pads[1], dil[1], dys[3], xs[3]};
  if (isDisjointMaxPoolBackward(op)) return maxPoolBackwardDisjoint(e, op, index, layout, rows, cols);
  Shape candidates{rows.candidates(), cols.candidates()};
  llvm::Value* acc = e.loopNest(candidates, {e.f64(0.0)}, [&](const Index& c, const Values& sum) {
    auto [oy, ky, yValid] = rows.candidate(e, index[2], c[0]);
    auto [ox, kx, xValid] = cols.candidate(e, index[3], c[1]);
    return e.ifThen(b.CreateAnd(yValid, xValid), [&] {
      if (isMax) {
        llvm::Value* g = e.toDouble(e.emit(dy, layout.stored({index[0], index[1], oy, ox})));
        llvm::Value* mine = b.CreateAdd(b.CreateMul(ky, e.i64(kernel[1])), kx);
        llvm::Value* chosen = maxPoolWindowArgmax(e, op, index, layout, oy, ox);
        return Values{b.CreateSelect(b.CreateICmpEQ(chosen, mine), b.CreateFAdd(sum[0], g), sum[0])};
      }
      // Avg: the window's real elements, counted.
      llvm::Value* count = e.loopNest({kernel[0], kernel[1]}, {e.i64(0)}, [&](const Index& j, const Values& c) {
        llvm::Value* iy = e.windowPosition(oy, strides[0], pads[0], j[0], dil[0]);
        llvm::Value* ix = e.windowPosition(ox, strides[1], pads[1], j[1], dil[1]);
        llvm::Value* real = b.CreateAnd(e.inRange(iy, xs[2]), e.inRange(ix, xs[3]));
        return Values{b.CreateAdd(c[0], b.CreateZExt(real, b.getInt64Ty()))};
      })[0];
      llvm::Value* g = e.toDouble(e.emit(dy, layout.stored({index[0], index[1], oy, ox})));
      return Values{b.CreateFAdd(sum[0], b.CreateFDiv(g, b.CreateSIToFP(count, b.getDoubleTy())))};
    }, sum);
  })[0];
  return e.fromDouble(acc, op.result()->type().dtype);
}

// dx[o.., r, i..] = sum over the index positions j with indices[j] = r (negative ones wrapped) of
// dy[o.., j.., i..]; an index out of range is the same error as gather's.
llvm::Value* gatherBackward(ElementEmitter& e, const Op& op, const Index& index) {
  auto& b = e.b;
  const Value* dy = op.operand(0);
  const Value* indices = op.operand(1);
  const Shape& xs = op.result()->type().shape;
  int axis = *normalizeAxis(op.intAttr("axis"), static_cast<int>(xs.size()));
  const Shape& is = indices->type().shape;
  llvm::Value* acc = e.loopNest(is, {e.f64(0.0)}, [&](const Index& j, const Values& sum) {
    llvm::Value* row = gatherBackwardRow(e, op, e.toI64(e.emit(indices, j), indices->type().dtype), xs[axis]);
    return e.ifThen(b.CreateICmpEQ(row, index[axis]), [&] {
      Index at(index.begin(), index.begin() + axis);
      at.insert(at.end(), j.begin(), j.end());
      at.insert(at.end(), index.begin() + axis + 1, index.end());
      return Values{b.CreateFAdd(sum[0], e.toDouble(e.emit(dy, at)))};
    }, sum);
  })[0];
  return e.fromDouble(acc, op.result()->type().dtype);
}

}  // namespace

llvm::Value* gatherBackwardRow(ElementEmitter& e, const Op& op, llvm::Value* raw, int64_t n) {
  auto& b = e.b;
  int axis = *normalizeAxis(op.intAttr("axis"), op.result()->type().rank());
  int error = e.addError(op, "index out of range [" + std::to_string(-n) + ", " + std::to_string(n) + ") for axis " +
                                 std::to_string(axis));
  e.raiseIf(b.CreateOr(b.CreateICmpSLT(raw, e.i64(-n)), b.CreateICmpSGE(raw, e.i64(n))), error);
  return b.CreateSelect(b.CreateICmpSLT(raw, e.i64(0)), b.CreateAdd(raw, e.i64(n)), raw);
}

bool isDisjointMaxPoolBackward(const Op& op) {
  if (op.kind() != OpKind::MaxPool2dBackward) return false;
  auto [kernel, strides, pads, dil] = poolWindow(op);
  bool padded = std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; });
  return !padded && disjointWindows(kernel[0], strides[0], dil[0]) && disjointWindows(kernel[1], strides[1], dil[1]);
}

llvm::Value* emitBackward(ElementEmitter& e, const Op& op, const Index& index) {
  switch (op.kind()) {
    case OpKind::Conv2dBackwardData: return conv2dBackwardData(e, op, index);
    case OpKind::Conv2dBackwardFilter: return conv2dBackwardFilter(e, op, index);
    case OpKind::MaxPool2dBackward:
    case OpKind::AvgPool2dBackward: return pool2dBackward(e, op, index);
    case OpKind::GatherBackward: return gatherBackward(e, op, index);
    default: break;
  }
  internalError(__FILE__, __LINE__, "not a backward op: " + std::string(op.name()));
}

}  // namespace kiln::codegen
