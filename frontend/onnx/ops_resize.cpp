// Resize (opsets 10-18) and Upsample (opset 7-9). Shapes are static, so along each axis the source
// coordinate of every output position is known at compile time: the interpolation (nearest,
// linear or cubic, ONNX's reference formulas) becomes a constant [in, out] weight matrix applied
// to that axis with a matmul (transpose the axis last, multiply, transpose back). Axes are
// interpolated one after the other, as ONNX's reference does.
#include <cmath>
#include <algorithm>
#include <numeric>

#include "frontend/onnx/onnx_converters.h"

namespace kiln::onnx_import {

namespace {

struct ResizeMode {
  std::string mode = "nearest";                      // nearest, linear, cubic
  std::string coordinates = "half_pixel";            // coordinate_transformation_mode
  std::string nearest = "round_prefer_floor";        // nearest_mode
  double cubicA = -0.75;
  bool excludeOutside = false;
};

std::vector<double> coefficients(const ResizeMode& m, double ratio, bool integral) {
  if (m.mode == "nearest") {
    if (integral) return {0, 1};
    if (m.nearest == "round_prefer_ceil") return {ratio < 0.5 ? 1.0 : 0.0, ratio >= 0.5 ? 1.0 : 0.0};
    if (m.nearest == "floor") return {1, 0};
    if (m.nearest == "ceil") return {0, 1};
    return {ratio <= 0.5 ? 1.0 : 0.0, ratio > 0.5 ? 1.0 : 0.0};
  }
  if (m.mode == "linear") return {1 - ratio, ratio};
  double a = m.cubicA, r = ratio, s = 1 - ratio;
  return {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a, ((a + 2) * r - (a + 3)) * r * r + 1,
          ((a + 2) * s - (a + 3)) * s * s + 1, ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a};
}

// The weights W[o][i] of one axis (in -> out at `scale`), and which outputs lie outside the
// region of interest (tf_crop_and_resize: they take extrapolation_value).
struct AxisWeights {
  std::vector<std::vector<double>> w;
  std::vector<bool> outside;
};

AxisWeights axisWeights(const ResizeMode& m, int64_t in, int64_t out, double scale, double roiStart, double roiEnd) {
  AxisWeights aw;
  aw.w.assign(static_cast<size_t>(out), std::vector<double>(static_cast<size_t>(in), 0.0));
  aw.outside.assign(static_cast<size_t>(out), false);
  double outWidth = scale * static_cast<double>(in);  // ONNX's reference uses the unrounded width
  for (int64_t o = 0; o < out; ++o) {
    double x = static_cast<double>(o), xo;
    const std::string& ct = m.coordinates;
    if (ct == "align_corners") xo = outWidth == 1 ? 0 : x * static_cast<double>(in - 1) / (outWidth - 1);
    else if (ct == "asymmetric") xo = x / scale;
    else if (ct == "pytorch_half_pixel") xo = outWidth == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
    else if (ct == "tf_half_pixel_for_nn") xo = (x + 0.5) / scale;
    else if (ct == "tf_crop_and_resize") {
      xo = outWidth == 1 ? (roiEnd - roiStart) * static_cast<double>(in - 1) / 2
                         : x * (roiEnd - roiStart) * static_cast<double>(in - 1) / (outWidth - 1);
      xo += roiStart * static_cast<double>(in - 1);
      if (xo < 0 || xo > static_cast<double>(in - 1)) {
        aw.outside[static_cast<size_t>(o)] = true;
        continue;
      }
    } else xo = (x + 0.5) / scale - 0.5;  // half_pixel
    double base = std::floor(xo);
    bool integral = xo == base;
    std::vector<double> coeffs = coefficients(m, integral ? 1.0 : xo - base, integral);
    int64_t n = static_cast<int64_t>(coeffs.size());
    // The n input positions nearest to xo (ties to the lower index), as the reference picks them
    // from the edge-padded input: positions past the ends read the edge element.
    int64_t first = static_cast<int64_t>(base) - n / 2 + 1;
    if (integral) first = static_cast<int64_t>(base) - n / 2;  // xo itself is a neighbour; ties go to the lower side
    if (m.excludeOutside) {
      double kept = 0;
      for (int64_t k = 0; k < n; ++k)
        if (first + k < 0 || first + k >= in) coeffs[static_cast<size_t>(k)] = 0;
      for (double cf : coeffs) kept += cf;
      for (double& cf : coeffs) cf /= kept;
    }
    for (int64_t k = 0; k < n; ++k) {
      int64_t i = std::clamp<int64_t>(first + k, 0, in - 1);
      aw.w[static_cast<size_t>(o)][static_cast<size_t>(i)] += coeffs[static_cast<size_t>(k)];
    }
  }
  return aw;
}

// y = x with `axis` replaced by W applied to it.
Value* applyAlongAxis(NodeContext& c, Value* x, int axis, const AxisWeights& aw) {
  int rank = x->type().rank();
  int64_t in = x->type().shape[static_cast<size_t>(axis)], out = static_cast<int64_t>(aw.w.size());
  Tensor wt(TensorType{x->type().dtype, {in, out}});
  for (int64_t o = 0; o < out; ++o)
    for (int64_t i = 0; i < in; ++i) wt.setDouble(i * out + o, aw.w[static_cast<size_t>(o)][static_cast<size_t>(i)]);
  std::vector<int64_t> perm, inverse(static_cast<size_t>(rank));
  for (int j = 0; j < rank; ++j)
    if (j != axis) perm.push_back(j);
  perm.push_back(axis);
  for (int j = 0; j < rank; ++j) inverse[static_cast<size_t>(perm[static_cast<size_t>(j)])] = j;
  Value* moved = c.op(OpKind::Transpose, {x}, {{"perm", Attr::ints(perm)}});
  Value* y = c.op(OpKind::Matmul, {moved, c.b().constant(std::move(wt))});
  return c.op(OpKind::Transpose, {y}, {{"perm", Attr::ints(inverse)}});
}

Status resizeWith(NodeContext& c, Value* x, const ResizeMode& m, std::vector<double> scales, Shape outShape,
                  const std::vector<double>& roi, double extrapolation) {
  const TensorType& t = x->type();
  if (!isFloat(t.dtype)) return c.unsupported("resizing " + std::string(dtypeName(t.dtype)) + " tensors");
  if (m.mode != "nearest" && m.mode != "linear" && m.mode != "cubic") return c.error("unknown mode '" + m.mode + "'");
  int rank = t.rank();
  Value* y = x;
  std::vector<Value*> outsideMasks;
  for (int a = 0; a < rank; ++a) {
    int64_t in = t.shape[static_cast<size_t>(a)], out = outShape[static_cast<size_t>(a)];
    double lo = roi.empty() ? 0 : roi[static_cast<size_t>(a)], hi = roi.empty() ? 1 : roi[static_cast<size_t>(rank + a)];
    if (in == out && scales[static_cast<size_t>(a)] == 1.0 && m.coordinates != "tf_crop_and_resize") continue;
    AxisWeights aw = axisWeights(m, in, out, scales[static_cast<size_t>(a)], lo, hi);
    y = applyAlongAxis(c, y, a, aw);
    if (std::none_of(aw.outside.begin(), aw.outside.end(), [](bool b) { return b; })) continue;
    Tensor mask(TensorType{DType::Bool, {out}});
    for (int64_t o = 0; o < out; ++o) mask.setInt(o, aw.outside[static_cast<size_t>(o)]);
    Shape ms(static_cast<size_t>(rank), 1);
    ms[static_cast<size_t>(a)] = out;
    outsideMasks.push_back(c.reshape(c.b().constant(std::move(mask)), ms));
  }
  if (!outsideMasks.empty()) {
    Value* outside = outsideMasks[0];
    for (size_t i = 1; i < outsideMasks.size(); ++i) outside = c.op(OpKind::Or, {outside, outsideMasks[i]});
    y = c.op(OpKind::Select, {outside, c.scalarLike(x, extrapolation), y});
  }
  return c.result(y);
}

Status resize(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  const Shape& in = (*x)->type().shape;
  ResizeMode m;
  m.mode = c.stringAttr("mode", "nearest");
  m.coordinates = c.stringAttr("coordinate_transformation_mode", c.opset() < 11 ? "asymmetric" : "half_pixel");
  m.nearest = c.stringAttr("nearest_mode", c.opset() < 11 ? "floor" : "round_prefer_floor");
  m.cubicA = c.floatAttr("cubic_coeff_a", -0.75f);
  m.excludeOutside = c.intAttr("exclude_outside", 0) != 0;
  if (c.hasAttr("antialias") && c.intAttr("antialias", 0)) return c.unsupported("antialias");
  if (c.hasAttr("axes")) return c.unsupported("the axes attribute");
  std::vector<double> roi, scales;
  Shape outShape;
  size_t scalesAt = c.opset() < 11 ? 1 : 2;
  if (c.opset() >= 11 && c.hasInput(1) && m.coordinates == "tf_crop_and_resize") {
    auto r = c.staticInput(1, "roi");
    if (!r) return r.error();
    for (int64_t i = 0; i < r->numElements(); ++i) roi.push_back(r->getDouble(i));
  }
  if (c.opset() >= 11 && c.hasInput(3)) {
    auto sizes = c.staticInts(3, "sizes");
    if (!sizes) return sizes.error();
    outShape = *sizes;
    if (outShape.size() != in.size()) return c.error("sizes must have one entry per dim");
    for (size_t i = 0; i < in.size(); ++i) scales.push_back(static_cast<double>(outShape[i]) / static_cast<double>(in[i]));
  } else {
    auto s = c.staticInput(scalesAt, "scales");
    if (!s) return s.error();
    if (static_cast<size_t>(s->numElements()) != in.size()) return c.error("scales must have one entry per dim");
    for (size_t i = 0; i < in.size(); ++i) {
      scales.push_back(s->getDouble(static_cast<int64_t>(i)));
      outShape.push_back(static_cast<int64_t>(std::floor(static_cast<double>(in[i]) * scales.back())));
    }
  }
  if (!roi.empty() && roi.size() != 2 * in.size()) return c.error("roi must have two entries per dim");
  return resizeWith(c, *x, m, scales, outShape, roi, c.floatAttr("extrapolation_value", 0.0f));
}

// Upsample (deprecated in opset 10): scales from an attribute (7-8) or input 1 (9); asymmetric
// coordinates, nearest takes the floor.
Status upsample(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  const Shape& in = (*x)->type().shape;
  std::vector<double> scales;
  if (auto attr = c.floatsAttr("scales")) {
    scales.assign(attr->begin(), attr->end());
  } else {
    auto s = c.staticInput(1, "scales");
    if (!s) return s.error();
    for (int64_t i = 0; i < s->numElements(); ++i) scales.push_back(s->getDouble(i));
  }
  if (scales.size() != in.size()) return c.error("scales must have one entry per dim");
  ResizeMode m;
  m.mode = c.stringAttr("mode", "nearest");
  m.coordinates = "asymmetric";
  m.nearest = "floor";
  Shape outShape;
  for (size_t i = 0; i < in.size(); ++i) outShape.push_back(static_cast<int64_t>(std::floor(static_cast<double>(in[i]) * scales[i])));
  return resizeWith(c, *x, m, scales, outShape, {}, 0.0);
}

}  // namespace

void addResizeConverters(ConverterTable& t) {
  t["Resize"] = resize;
  t["Upsample"] = upsample;
}

}  // namespace kiln::onnx_import
