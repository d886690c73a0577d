// Ops that read an image at computed, fractional positions: GridSample and RoiAlign, as ONNX's
// reference computes them. Positions and weights are elementwise arithmetic in f64 on the run-time
// grid or boxes; each interpolation tap is a gather of whole pixels (all channels) from the input
// laid out as [N * H * W, C], weighted and summed.
#include <algorithm>
#include <cmath>
#include <functional>

#include "frontend/onnx/onnx_converters.h"

namespace kiln::onnx_import {

namespace {

Value* f64(NodeContext& c, double v) { return c.scalar(DType::F64, v); }
Value* add(NodeContext& c, Value* a, Value* b) { return c.op(OpKind::Add, {a, b}); }
Value* sub(NodeContext& c, Value* a, Value* b) { return c.op(OpKind::Sub, {a, b}); }
Value* mul(NodeContext& c, Value* a, Value* b) { return c.op(OpKind::Mul, {a, b}); }
Value* clamp(NodeContext& c, Value* x, double lo, double hi) {
  return c.op(OpKind::Min, {c.op(OpKind::Max, {x, f64(c, lo)}), f64(c, hi)});
}

// [N, C, S..] -> [N * prod(S), C]: a gather of row n * prod(S) + flat spatial index reads a pixel.
Value* pixelRows(NodeContext& c, Value* x) {
  const Shape& s = x->type().shape;
  std::vector<int64_t> perm = {0};
  for (size_t i = 2; i < s.size(); ++i) perm.push_back(static_cast<int64_t>(i));
  perm.push_back(1);
  return c.reshape(c.op(OpKind::Transpose, {x}, {{"perm", Attr::ints(perm)}}), {numElements(s) / s[1], s[1]});
}

// [N, o.., C] -> [N, C, o..].
Value* channelsSecond(NodeContext& c, Value* y) {
  int rank = y->type().rank();
  std::vector<int64_t> perm = {0, rank - 1};
  for (int i = 1; i < rank - 1; ++i) perm.push_back(i);
  return c.op(OpKind::Transpose, {y}, {{"perm", Attr::ints(perm)}});
}

// x with a trailing size-1 axis, to weight [.., C] pixels.
Value* perPixel(NodeContext& c, Value* x) {
  Shape s = x->type().shape;
  s.push_back(1);
  return c.reshape(x, s);
}

// Round half away from zero (std::round); half to even is roundHalfToEven (onnx_converters.h).
Value* roundHalfAway(NodeContext& c, Value* x) {
  Value* half = f64(c, 0.5);
  return c.op(OpKind::Select, {c.op(OpKind::Lt, {x, f64(c, 0)}), c.op(OpKind::Ceil, {sub(c, x, half)}), c.op(OpKind::Floor, {add(c, x, half)})});
}

// GridSample's reflection: reflected at lo and hi until inside (x = -3.5 in [-1, 1] -> 0.5). That
// is x - lo folded into [0, hi - lo] by a triangle wave of period 2 (hi - lo): no loop, no branch.
Value* reflect(NodeContext& c, Value* x, double lo, double hi) {
  double range = hi - lo;
  if (range <= 0) return c.op(OpKind::BroadcastTo, {f64(c, lo)}, {{"shape", Attr::ints(x->type().shape)}});
  Value* u = sub(c, x, f64(c, lo));
  Value* m = sub(c, u, mul(c, c.op(OpKind::Floor, {mul(c, u, f64(c, 1 / (2 * range)))}), f64(c, 2 * range)));  // in [0, 2 range)
  return add(c, f64(c, lo), sub(c, f64(c, range), c.op(OpKind::Abs, {sub(c, m, f64(c, range))})));
}

// Truncation toward zero of x >= -1 (a reflected position, >= -0.5): floor(max(x, 0)).
Value* truncateReflected(NodeContext& c, Value* x) { return c.op(OpKind::Floor, {c.op(OpKind::Max, {x, f64(c, 0)})}); }

// Keys' cubic convolution weights (A = -0.75) of the taps at floor(x) - 1 .. floor(x) + 2.
std::vector<Value*> cubicWeights(NodeContext& c, Value* t) {
  const double a = -0.75;
  auto outer = [&](Value* s) {  // ((a s - 5a) s + 8a) s - 4a, for s in [1, 2]
    Value* v = sub(c, mul(c, f64(c, a), s), f64(c, 5 * a));
    v = add(c, mul(c, v, s), f64(c, 8 * a));
    return sub(c, mul(c, v, s), f64(c, 4 * a));
  };
  auto inner = [&](Value* s) {  // ((a + 2) s - (a + 3)) s s + 1, for s in [0, 1]
    Value* v = sub(c, mul(c, f64(c, a + 2), s), f64(c, a + 3));
    return add(c, mul(c, mul(c, v, s), s), f64(c, 1));
  };
  Value* one = f64(c, 1);
  return {outer(add(c, t, one)), inner(t), inner(sub(c, one, t)), outer(sub(c, f64(c, 2), t))};
}

// One interpolation tap along an axis: an in-range index, its weight (null: 1) and, for zeros
// padding, whether the unclamped index was inside (null: always).
struct Tap {
  Value* index;
  Value* weight;
  Value* inside;
};

struct GridAxis {
  int64_t size;
  double lo, hi;  // the borders: [-0.5, size - 0.5], or [0, size - 1] with align_corners
};

// An integral tap position as GridSample reads it under `padding`.
Tap padTap(NodeContext& c, Value* i, Value* weight, const GridAxis& axis, const std::string& padding) {
  double last = static_cast<double>(axis.size - 1);
  if (padding == "reflection") return {c.cast(truncateReflected(c, reflect(c, i, axis.lo, axis.hi)), DType::I64), weight, nullptr};
  Value* inside = padding == "zeros" ? c.op(OpKind::And, {c.op(OpKind::Ge, {i, f64(c, 0)}), c.op(OpKind::Le, {i, f64(c, last)})}) : nullptr;
  return {c.cast(clamp(c, i, 0, last), DType::I64), weight, inside};
}

// GridSample (opset 16 and the N-D form of opset 20): Y[n, c, o..] interpolates X[n, c] at the
// grid's normalized position (x, y, .. for the last, second-last, .. axis), denormalized per
// align_corners. Positions beyond the borders are first clamped (border) or reflected
// (reflection); taps beyond the image read 0 (zeros), the edge (border) or their reflection.
Status gridSample(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  auto grid = c.input(1);
  if (!grid) return grid.error();
  const Shape& xs = (*x)->type().shape;
  const Shape& gs = (*grid)->type().shape;
  size_t n = xs.size() < 3 ? 0 : xs.size() - 2;
  if (n == 0 || gs.size() != n + 2 || gs[0] != xs[0] || gs.back() != static_cast<int64_t>(n) || !isFloat((*x)->type().dtype))
    return c.error("needs float X [N,C,spatial..] and a grid [N,out..,spatial rank], got " + (*x)->type().str() + " and " + (*grid)->type().str());
  std::string mode = c.stringAttr("mode", "bilinear"), padding = c.stringAttr("padding_mode", "zeros");
  if (mode == "linear") mode = "bilinear";
  if (mode == "cubic") mode = "bicubic";
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic") return c.unsupported("mode '" + mode + "'");
  if (padding != "zeros" && padding != "border" && padding != "reflection") return c.unsupported("padding_mode '" + padding + "'");
  bool align = c.intAttr("align_corners", 0) != 0;
  Shape outShape(gs.begin(), gs.end() - 1);  // [N, o..]
  Value* g = c.cast(*grid, DType::F64);
  std::vector<std::vector<Tap>> taps(n);
  std::vector<int64_t> strides(n, 1);
  for (size_t i = n; i-- > 0;) {
    GridAxis axis = {xs[2 + i], align ? 0.0 : -0.5, align ? static_cast<double>(xs[2 + i] - 1) : static_cast<double>(xs[2 + i]) - 0.5};
    if (i + 1 < n) strides[i] = strides[i + 1] * xs[3 + i];
    // The grid's last axis lists coordinates from the last spatial axis to the first.
    int64_t k = static_cast<int64_t>(n - 1 - i);
    Value* gi = c.reshape(c.op(OpKind::Slice, {g}, {{"starts", Attr::ints({k})}, {"ends", Attr::ints({k + 1})}, {"axes", Attr::ints({-1})}}), outShape);
    double d = static_cast<double>(axis.size);
    Value* pos = align ? mul(c, add(c, gi, f64(c, 1)), f64(c, (d - 1) / 2)) : mul(c, sub(c, mul(c, add(c, gi, f64(c, 1)), f64(c, d)), f64(c, 1)), f64(c, 0.5));
    if (mode == "nearest") pos = n == 3 ? roundHalfAway(c, pos) : roundHalfToEven(c, pos);  // as PyTorch's 3-D and 2-D kernels
    if (padding == "reflection") pos = reflect(c, pos, axis.lo, axis.hi);  // the identity inside
    if (padding == "border") {
      Value* outside = c.op(OpKind::Or, {c.op(OpKind::Lt, {pos, f64(c, axis.lo)}), c.op(OpKind::Gt, {pos, f64(c, axis.hi)})});
      pos = c.op(OpKind::Select, {outside, clamp(c, pos, 0, d - 1), pos});
    }
    if (mode == "nearest") {
      // The rounded position is whole, and stays so when clamped; a reflected one is >= lo.
      taps[i].push_back(padTap(c, padding == "reflection" ? truncateReflected(c, pos) : pos, nullptr, axis, padding));
      continue;
    }
    Value* base = c.op(OpKind::Floor, {pos});
    Value* t = sub(c, pos, base);
    std::vector<Value*> weights = mode == "bilinear" ? std::vector<Value*>{sub(c, f64(c, 1), t), t} : cubicWeights(c, t);
    int64_t first = mode == "bilinear" ? 0 : -1;
    for (size_t j = 0; j < weights.size(); ++j)
      taps[i].push_back(padTap(c, add(c, base, f64(c, static_cast<double>(first + static_cast<int64_t>(j)))), weights[j], axis, padding));
  }
  Value* rows = pixelRows(c, c.cast(*x, DType::F64));
  Value* batchRow = mul(c, c.b().iota({DType::I64, outShape}, 0), c.scalar(DType::I64, static_cast<double>(numElements(Shape(xs.begin() + 2, xs.end())))));
  // The reference interpolates the last axis first: sum over axis 0's taps of w * (sum over axis 1's ..).
  std::function<Value*(size_t, Value*, Value*)> interpolate = [&](size_t i, Value* flat, Value* inside) -> Value* {
    if (i == n) {
      Value* v = c.op(OpKind::Gather, {rows, flat});
      return inside ? c.op(OpKind::Select, {perPixel(c, inside), v, f64(c, 0)}) : v;
    }
    Value* sum = nullptr;
    for (const Tap& tap : taps[i]) {
      Value* at = add(c, flat, mul(c, tap.index, c.scalar(DType::I64, static_cast<double>(strides[i]))));
      Value* in = tap.inside && inside ? c.op(OpKind::And, {inside, tap.inside}) : tap.inside ? tap.inside : inside;
      Value* v = interpolate(i + 1, at, in);
      if (tap.weight) v = mul(c, perPixel(c, tap.weight), v);
      sum = sum ? add(c, sum, v) : v;
    }
    return sum;
  };
  Value* y = interpolate(0, batchRow, nullptr);
  if (!y) return c.result(nullptr);
  return c.result(c.cast(channelsSecond(c, y), (*x)->type().dtype));
}

// RoiAlign's bilinear sample positions along one axis of the feature map (size `size`): per
// sample coordinate, the two taps and their weights, 0 for a sample off the map (< -1 or > size).
struct RoiTaps {
  Value* low;
  Value* high;
  Value* lowWeight;
  Value* highWeight;
};

RoiTaps roiTaps(NodeContext& c, Value* at, int64_t size) {
  double last = static_cast<double>(size - 1);
  Value* off = c.op(OpKind::Or, {c.op(OpKind::Lt, {at, f64(c, -1)}), c.op(OpKind::Gt, {at, f64(c, static_cast<double>(size))})});
  Value* p = c.op(OpKind::Max, {at, f64(c, 0)});
  Value* low = c.op(OpKind::Floor, {p});
  Value* atEnd = c.op(OpKind::Ge, {low, f64(c, last)});
  Value* lastV = f64(c, last);
  low = c.op(OpKind::Select, {atEnd, lastV, low});
  Value* high = c.op(OpKind::Select, {atEnd, lastV, add(c, low, f64(c, 1))});
  p = c.op(OpKind::Select, {atEnd, lastV, p});
  Value* l = sub(c, p, low);
  Value* zero = f64(c, 0);
  return {c.cast(low, DType::I64), c.cast(high, DType::I64), c.op(OpKind::Select, {off, zero, sub(c, f64(c, 1), l)}),
          c.op(OpKind::Select, {off, zero, l})};
}

// RoiAlign's bins: an average of each bin's samples, or (mode max) the largest weighted tap.
// Both give [R, C, bins_h, bins_w] in f64; ty and tx hold the taps of [R, bins, samples]
// coordinates, grid the samples each box takes (boxes with fewer than the most leave the rest out).

// Average: separable, so per axis a weight matrix W[r, bin, pixel] (each taken sample's two taps
// summed into it) and out = Wy X Wx^T / samples, with the box's image picked by a one-hot over the
// batch folded into Wy: two matmuls instead of a gather per sample. As in Resize, an inf or NaN in
// X then spreads (times a zero weight) into every bin of its rows and columns.
Value* roiAxisWeights(NodeContext& c, const RoiTaps& t, Value* grid, int64_t size) {
  const Shape& s = t.low->type().shape;  // [R, bins, samples]
  Shape s4 = {s[0], s[1], s[2], 1};
  Value* pixel = c.b().iota({DType::I64, {s[0], s[1], s[2], size}}, 3);
  Value* taken = c.op(OpKind::Lt, {c.cast(c.b().iota({DType::I64, {s[0], 1, s[2], 1}}, 2), DType::F64), c.reshape(grid, {s[0], 1, 1, 1})});
  auto tap = [&](Value* at, Value* weight) {
    Value* hit = c.op(OpKind::And, {taken, c.op(OpKind::Eq, {pixel, c.reshape(at, s4)})});
    return c.op(OpKind::Select, {hit, c.reshape(weight, s4), f64(c, 0)});
  };
  return c.op(OpKind::ReduceSum, {add(c, tap(t.low, t.lowWeight), tap(t.high, t.highWeight))}, {{"axes", Attr::ints({2})}});
}

Value* roiAverage(NodeContext& c, Value* x, Value* batch, const RoiTaps& ty, const RoiTaps& tx, Value* gridH, Value* gridW) {
  const Shape& xs = x->type().shape;
  int64_t n = xs[0], ch = xs[1], h = xs[2], w = xs[3];
  const Shape& sy = ty.low->type().shape;
  int64_t r = sy[0], outH = sy[1], outW = tx.low->type().shape[1];
  Value* wy = roiAxisWeights(c, ty, gridH, h);  // [R, outH, H]
  Value* wx = roiAxisWeights(c, tx, gridW, w);  // [R, outW, W]
  Value* ofBox = c.op(OpKind::Eq, {c.b().iota({DType::I64, {r, 1, n, 1}}, 2), c.reshape(batch, {r, 1, 1, 1})});
  Value* wyb = c.reshape(c.op(OpKind::Select, {ofBox, c.reshape(wy, {r, outH, 1, h}), f64(c, 0)}), {r * outH, n * h});
  Value* image = c.reshape(c.op(OpKind::Transpose, {c.cast(x, DType::F64)}, {{"perm", Attr::ints({0, 2, 1, 3})}}), {n * h, ch * w});
  Value* rows = c.reshape(c.op(OpKind::Matmul, {wyb, image}), {r, outH * ch, w});
  Value* bins = c.op(OpKind::Matmul, {rows, c.op(OpKind::Transpose, {wx}, {{"perm", Attr::ints({0, 2, 1})}})});  // [R, outH*C, outW]
  bins = c.op(OpKind::Transpose, {c.reshape(bins, {r, outH, ch, outW})}, {{"perm", Attr::ints({0, 2, 1, 3})}});
  Value* count = c.op(OpKind::Max, {mul(c, gridH, gridW), f64(c, 1)});
  return c.op(OpKind::Div, {bins, c.reshape(count, {r, 1, 1, 1})});
}

// Max: every (y tap, x tap) pair of every sample as [R, outH, maxH, 2, outW, maxW, 2], its pixel
// gathered and weighted, the largest over the samples a box takes.
Value* roiMax(NodeContext& c, Value* x, Value* batch, const RoiTaps& ty, const RoiTaps& tx, Value* gridH, Value* gridW,
              int64_t maxH, int64_t maxW) {
  const Shape& xs = x->type().shape;
  int64_t h = xs[2], w = xs[3];
  int64_t r = ty.low->type().shape[0], outH = ty.low->type().shape[1], outW = tx.low->type().shape[1];
  auto alongY = [&](Value* lo, Value* hi) {
    Value* both = c.op(OpKind::Concat, {c.reshape(lo, {r, outH, maxH, 1}), c.reshape(hi, {r, outH, maxH, 1})}, {{"axis", Attr(int64_t{3})}});
    return c.reshape(both, {r, outH, maxH, 2, 1, 1, 1});
  };
  auto alongX = [&](Value* lo, Value* hi) {
    Value* both = c.op(OpKind::Concat, {c.reshape(lo, {r, outW, maxW, 1}), c.reshape(hi, {r, outW, maxW, 1})}, {{"axis", Attr(int64_t{3})}});
    return c.reshape(both, {r, 1, 1, 1, outW, maxW, 2});
  };
  Value* row = add(c, mul(c, c.reshape(batch, {r, 1, 1, 1, 1, 1, 1}), c.scalar(DType::I64, static_cast<double>(h))), alongY(ty.low, ty.high));
  Value* flat = add(c, mul(c, row, c.scalar(DType::I64, static_cast<double>(w))), alongX(tx.low, tx.high));
  Value* weight = mul(c, alongY(ty.lowWeight, ty.highWeight), alongX(tx.lowWeight, tx.highWeight));
  Value* values = mul(c, perPixel(c, weight), c.op(OpKind::Gather, {pixelRows(c, c.cast(x, DType::F64)), flat}));  // [.., C]
  Value* sampleH = c.op(OpKind::Lt, {c.cast(c.b().iota({DType::I64, {r, 1, maxH, 1, 1, 1, 1, 1}}, 2), DType::F64), c.reshape(gridH, {r, 1, 1, 1, 1, 1, 1, 1})});
  Value* sampleW = c.op(OpKind::Lt, {c.cast(c.b().iota({DType::I64, {r, 1, 1, 1, 1, maxW, 1, 1}}, 5), DType::F64), c.reshape(gridW, {r, 1, 1, 1, 1, 1, 1, 1})});
  Value* taken = c.op(OpKind::And, {sampleH, sampleW});
  Value* most = c.op(OpKind::ReduceMax, {c.op(OpKind::Select, {taken, values, f64(c, -HUGE_VAL)})}, {{"axes", Attr::ints({2, 3, 5, 6})}});
  return channelsSecond(c, most);
}

// RoiAlign (opsets 10 and 16): for each box (x1, y1, x2, y2) * spatial_scale (minus 0.5 with
// half_pixel), each of the output_height x output_width bins averages (or, mode max, takes the
// largest of) sampling_ratio^2 bilinear samples at evenly spaced points, each sample's four taps
// weighted as the reference does (max takes the largest weighted tap). With sampling_ratio 0 the
// samples per bin are ceil(box size / bins), which depends on the boxes: then they must be known
// at compile time.
Status roiAlign(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  auto rois = c.input(1);
  if (!rois) return rois.error();
  auto batchIn = c.input(2);
  if (!batchIn) return batchIn.error();
  const Shape& xs = (*x)->type().shape;
  const Shape& rs = (*rois)->type().shape;
  if (xs.size() != 4 || rs.size() != 2 || rs[1] != 4 || (*batchIn)->type().shape != Shape{rs[0]} || !isFloat((*x)->type().dtype))
    return c.error("needs float X [N,C,H,W], rois [R,4] and batch_indices [R], got " + (*x)->type().str() + ", " + (*rois)->type().str() + " and " +
                   (*batchIn)->type().str());
  std::string mode = c.stringAttr("mode", "avg");
  if (mode != "avg" && mode != "max") return c.error("mode must be avg or max, got '" + mode + "'");
  std::string coordinates = c.stringAttr("coordinate_transformation_mode", c.opset() >= 16 ? "half_pixel" : "output_half_pixel");
  if (coordinates != "half_pixel" && coordinates != "output_half_pixel") return c.unsupported("coordinate_transformation_mode '" + coordinates + "'");
  bool halfPixel = coordinates == "half_pixel";
  int64_t outH = c.intAttr("output_height", 1), outW = c.intAttr("output_width", 1), ratio = c.intAttr("sampling_ratio", 0);
  double scale = c.floatAttr("spatial_scale", 1.0f);
  if (outH < 1 || outW < 1 || ratio < 0) return c.error("output_height and output_width must be positive and sampling_ratio not negative");
  int64_t r = rs[0], h = xs[2], w = xs[3];
  Value* box = c.cast(*rois, DType::F64);
  auto corner = [&](int64_t k) {
    Value* v = c.reshape(c.op(OpKind::Slice, {box}, {{"starts", Attr::ints({k})}, {"ends", Attr::ints({k + 1})}, {"axes", Attr::ints({1})}}), {r});
    return sub(c, mul(c, v, f64(c, scale)), f64(c, halfPixel ? 0.5 : 0.0));
  };
  Value* x1 = corner(0);
  Value* y1 = corner(1);
  Value* boxW = sub(c, corner(2), x1);
  Value* boxH = sub(c, corner(3), y1);
  if (!halfPixel) {  // malformed boxes count as 1 x 1
    boxW = c.op(OpKind::Max, {boxW, f64(c, 1)});
    boxH = c.op(OpKind::Max, {boxH, f64(c, 1)});
  }
  Value* binH = c.op(OpKind::Div, {boxH, f64(c, static_cast<double>(outH))});
  Value* binW = c.op(OpKind::Div, {boxW, f64(c, static_cast<double>(outW))});
  // Samples per bin along each axis, per box, and the most any box takes.
  Value* gridH = ratio > 0 ? c.op(OpKind::BroadcastTo, {f64(c, static_cast<double>(ratio))}, {{"shape", Attr::ints({r})}}) : c.op(OpKind::Ceil, {binH});
  Value* gridW = ratio > 0 ? c.op(OpKind::BroadcastTo, {f64(c, static_cast<double>(ratio))}, {{"shape", Attr::ints({r})}}) : c.op(OpKind::Ceil, {binW});
  int64_t maxH = ratio, maxW = ratio;
  if (ratio == 0) {
    auto knownH = c.knownValue(gridH);
    auto knownW = c.knownValue(gridW);
    if (!knownH || !knownW)
      return c.error("with sampling_ratio 0 the samples per bin depend on the boxes, so rois (input 1) must be known at compile time");
    maxH = maxW = 0;
    for (int64_t k = 0; k < r; ++k) {
      maxH = std::max(maxH, knownH->getInt(k));
      maxW = std::max(maxW, knownW->getInt(k));
    }
    gridH = c.b().constant(std::move(*knownH));
    gridW = c.b().constant(std::move(*knownW));
  }
  if (maxH <= 0 || maxW <= 0) return c.result(c.op(OpKind::BroadcastTo, {c.scalarLike(*x, 0)}, {{"shape", Attr::ints({r, xs[1], outH, outW})}}));
  // Sample coordinates: start + bin * p + (i + 0.5) * bin / grid, [R, bins, samples].
  auto samples = [&](Value* start, Value* bin, Value* grid, int64_t bins, int64_t most) {
    Shape s = {r, bins, most};
    Value* p = c.cast(c.b().iota({DType::I64, s}, 1), DType::F64);
    Value* i = add(c, c.cast(c.b().iota({DType::I64, s}, 2), DType::F64), f64(c, 0.5));
    Value* b3 = c.reshape(bin, {r, 1, 1});
    return add(c, add(c, c.reshape(start, {r, 1, 1}), mul(c, p, b3)), c.op(OpKind::Div, {mul(c, i, b3), c.reshape(grid, {r, 1, 1})}));
  };
  RoiTaps ty = roiTaps(c, samples(y1, binH, gridH, outH, maxH), h);
  RoiTaps tx = roiTaps(c, samples(x1, binW, gridW, outW, maxW), w);
  Value* batch = c.op(OpKind::Gather, {c.b().iota({DType::I64, {xs[0]}}, 0), c.cast(*batchIn, DType::I64)});  // checks the indices
  Value* any = c.op(OpKind::And, {c.op(OpKind::Gt, {gridH, f64(c, 0)}), c.op(OpKind::Gt, {gridW, f64(c, 0)})});  // [R]
  Value* y = mode == "avg" ? roiAverage(c, *x, batch, ty, tx, gridH, gridW)
                           : roiMax(c, *x, batch, ty, tx, gridH, gridW, maxH, maxW);
  y = c.op(OpKind::Select, {c.reshape(any, {r, 1, 1, 1}), y, f64(c, 0)});  // a box with no samples gives 0
  return c.result(c.cast(y, (*x)->type().dtype));
}

}  // namespace

void addSamplingConverters(ConverterTable& t) {
  t["GridSample"] = gridSample;
  t["RoiAlign"] = roiAlign;
}

}  // namespace kiln::onnx_import
