// Pooling: MaxPool and AveragePool over any number of spatial dims, GlobalMaxPool and
// GlobalAveragePool, and MaxUnpool.
//
// kiln's max_pool2d and avg_pool2d (strides, pads, dilations) leave padding out of the max and
// the count. Other ranks pool separably, the last two spatial axes first and then each earlier
// axis alone (as [.., 1, D, rest] with a [k, 1] window): exact, since a window's taps are a box
// (dilated or not), the max of maxes is the max, and the count of real elements in a box is the
// product of the counts along its axes. LpPool is an average pool of |x|^p over zero padding,
// times the window's size, to the power 1/p. Only MaxPool over ints or with its Indices output
// reduces over the window's taps (strided slices of the input): one op per tap.
#include <algorithm>

#include "frontend/onnx/onnx_converters.h"
#include "frontend/onnx/onnx_window.h"

namespace kiln::onnx_import {

namespace {

Value* pool2d(NodeContext& c, OpKind kind, Value* x, const Window& w) {
  AttrList attrs = {{"kernel", Attr::ints(w.kernel)}, {"strides", Attr::ints(w.strides)}, {"pads", Attr::ints(w.pads)}};
  if (w.dilations != std::vector<int64_t>{1, 1}) attrs.push_back({"dilations", Attr::ints(w.dilations)});
  return c.op(kind, {x}, std::move(attrs));
}

// The window along spatial axis i alone, as the first axis of a 2-D window whose second axis is 1.
Window axisWindow(const Window& w, size_t i) {
  size_t n = w.rank();
  return {{w.kernel[i], 1}, {w.strides[i], 1}, {w.pads[i], 0, w.pads[i + n], 0}, {w.dilations[i], 1}};
}

// Pools x [N,C,S1..Sn] with kiln's 2-D pools, separably for n > 2.
Value* poolSeparable(NodeContext& c, OpKind kind, Value* x, const Window& w) {
  size_t n = w.rank();
  if (n == 2) return pool2d(c, kind, x, w);
  if (n == 1) {
    Window lifted = w;
    lift1d(lifted);
    return drop(c, pool2d(c, kind, lift(c, x), lifted));
  }
  Shape s = x->type().shape;
  int64_t outer = numElements(Shape(s.begin(), s.end() - 2));
  Window last = {{w.kernel[n - 2], w.kernel[n - 1]}, {w.strides[n - 2], w.strides[n - 1]},
                 {w.pads[n - 2], w.pads[n - 1], w.pads[2 * n - 2], w.pads[2 * n - 1]},
                 {w.dilations[n - 2], w.dilations[n - 1]}};
  Value* y = pool2d(c, kind, c.reshape(x, {outer, 1, s[s.size() - 2], s.back()}), last);
  if (!y) return nullptr;
  Shape out = s;  // the output shape so far: pooled axes at the end
  out[s.size() - 2] = y->type().shape[2];
  out.back() = y->type().shape[3];
  for (size_t i = n - 2; i-- > 0;) {
    size_t axis = 2 + i;
    int64_t before = numElements(Shape(out.begin(), out.begin() + static_cast<int64_t>(axis)));
    int64_t after = numElements(Shape(out.begin() + static_cast<int64_t>(axis) + 1, out.end()));
    y = pool2d(c, kind, c.reshape(y, {before, 1, out[axis], after}), axisWindow(w, i));
    if (!y) return nullptr;
    out[axis] = y->type().shape[2];
  }
  return c.reshape(y, out);
}

// Steps `t` through the window's taps in row-major order; false after the last.
bool nextTap(std::vector<int64_t>& t, const std::vector<int64_t>& kernel) {
  for (size_t a = t.size(); a-- > 0;) {
    if (++t[a] < kernel[a]) return true;
    t[a] = 0;
  }
  return false;
}

// MaxPool over ints or with the Indices output, as ONNX's reference defines it: each window's
// real elements (padding never takes part), the max over them (a NaN wins, as in kiln's max), and
// the index of the first tap in row-major window order that holds it. Each tap is a strided slice
// of the input; the slices are stacked on a new last axis and reduced, and which output positions
// a tap reads a real element for is known at compile time. The index is flat over [N,C,S1..Sn],
// its spatial part row-major (storage_order 0) or column-major (1).
Status maxPoolTaps(NodeContext& c, Value* x, const Window& w, const Shape& out) {
  const Shape& s = x->type().shape;
  DType dtype = x->type().dtype;
  size_t n = w.rank();
  Shape spatial(s.begin() + 2, s.end());
  bool columnMajor = c.intAttr("storage_order", 0) != 0;
  std::vector<int64_t> coordStride(n, 1);  // spatial flat index = sum of coordinate * coordStride
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j)
      if (columnMajor ? j < i : j > i) coordStride[i] *= spatial[j];
  // Pad so that every tap's strided slice is in bounds; padded elements never take part.
  std::vector<int64_t> pads(2 * s.size(), 0);
  for (size_t i = 0; i < n; ++i) {
    pads[2 + i] = w.pads[i];
    pads[s.size() + 2 + i] = std::max<int64_t>(0, (out[i] - 1) * w.strides[i] + w.extent(i) - w.pads[i] - spatial[i]);
  }
  Value* padded = c.op(OpKind::Pad, {x}, {{"pads", Attr::ints(pads)}});
  int64_t outputs = numElements(out);
  std::vector<Value*> slices;
  std::vector<std::vector<char>> real;  // per tap taken, per output position
  std::vector<std::vector<int64_t>> flat;
  std::vector<char> covered(static_cast<size_t>(outputs), 0);
  std::vector<int64_t> t(n, 0);
  do {
    std::vector<char> r(static_cast<size_t>(outputs));
    std::vector<int64_t> f(static_cast<size_t>(outputs), 0);
    bool any = false;
    std::vector<int64_t> o(n, 0);
    for (int64_t e = 0; e < outputs; ++e, nextTap(o, out)) {
      bool inside = true;
      for (size_t i = 0; i < n; ++i) {
        int64_t at = o[i] * w.strides[i] - w.pads[i] + t[i] * w.dilations[i];
        inside = inside && at >= 0 && at < spatial[i];
        f[static_cast<size_t>(e)] += at * coordStride[i];
      }
      r[static_cast<size_t>(e)] = inside;
      covered[static_cast<size_t>(e)] |= inside;
      any = any || inside;
    }
    if (!any) continue;
    std::vector<int64_t> starts, ends, axes, steps;
    for (size_t i = 0; i < n; ++i) {
      starts.push_back(t[i] * w.dilations[i]);
      ends.push_back(t[i] * w.dilations[i] + (out[i] - 1) * w.strides[i] + 1);
      axes.push_back(static_cast<int64_t>(2 + i));
      steps.push_back(w.strides[i]);
    }
    Value* v = c.op(OpKind::Slice, {padded}, {{"starts", Attr::ints(starts)}, {"ends", Attr::ints(ends)},
                                              {"axes", Attr::ints(axes)}, {"steps", Attr::ints(steps)}});
    Shape one = v ? v->type().shape : s;
    one.push_back(1);
    slices.push_back(c.reshape(v, one));
    real.push_back(std::move(r));
    flat.push_back(std::move(f));
  } while (nextTap(t, w.kernel));
  if (std::find(covered.begin(), covered.end(), 0) != covered.end()) return c.unsupported("windows that lie entirely in the padding");
  // Constants over [out.., taps]: which taps are real, and the flat spatial index each reads.
  int64_t taps = static_cast<int64_t>(slices.size());
  Shape table = out;
  table.push_back(taps);
  Tensor isReal(TensorType{DType::Bool, table}), isFirst(TensorType{DType::Bool, table}), position(TensorType{DType::I64, table});
  for (int64_t e = 0; e < outputs; ++e) {
    bool seen = false;
    for (int64_t k = 0; k < taps; ++k) {
      bool r = real[static_cast<size_t>(k)][static_cast<size_t>(e)];
      isReal.setDouble(e * taps + k, r);
      isFirst.setDouble(e * taps + k, r && !seen);
      seen = seen || r;
      position.setInt(e * taps + k, flat[static_cast<size_t>(k)][static_cast<size_t>(e)]);
    }
  }
  int64_t last = static_cast<int64_t>(s.size());
  Value* stack = taps == 1 ? slices[0] : c.op(OpKind::Concat, slices, {{"axis", Attr(last)}});
  Value* realMask = c.b().constant(std::move(isReal));
  // Padding taps repeat the window's first real element, so they never change its max (whatever
  // the dtype). That element is the one-hot sum of the window's taps: exact, the rest are zeros.
  Value* zero = c.scalar(dtype, 0);
  Value* firstReal = c.op(OpKind::ReduceSum, {c.op(OpKind::Select, {c.b().constant(std::move(isFirst)), stack, zero})},
                          {{"axes", Attr::ints({static_cast<int64_t>(s.size())})}, {"keepdims", Attr(true)}});
  Value* values = c.op(OpKind::Select, {realMask, stack, firstReal});
  Value* best = c.op(OpKind::ReduceMax, {values}, {{"axes", Attr::ints({last})}, {"keepdims", Attr(true)}});
  if (c.wantsOutput(1)) {
    // The first real tap holding the max (a NaN, when the max is one).
    Value* holds = c.op(OpKind::Eq, {stack, best});
    if (isFloat(dtype)) holds = c.op(OpKind::Or, {holds, c.op(OpKind::Ne, {stack, stack})});
    Value* tap = c.b().iota({DType::I64, values ? values->type().shape : s}, last);
    Value* first = c.op(OpKind::ReduceMin, {c.op(OpKind::Select, {c.op(OpKind::And, {realMask, holds}), tap, c.scalar(DType::I64, static_cast<double>(taps))})},
                        {{"axes", Attr::ints({last})}, {"keepdims", Attr(true)}});
    Value* index = c.op(OpKind::ReduceSum, {c.op(OpKind::Select, {c.op(OpKind::Eq, {tap, first}), c.b().constant(std::move(position)), c.scalar(DType::I64, 0)})},
                        {{"axes", Attr::ints({last})}});
    // Each (n, c) plane's indices start at its flat offset (n * C + c) * plane.
    Shape planes(s.size(), 1);
    planes[0] = s[0];
    planes[1] = s[1];
    Value* channel = c.op(OpKind::Add, {c.op(OpKind::Mul, {c.b().iota({DType::I64, planes}, 0), c.scalar(DType::I64, static_cast<double>(s[1]))}),
                                        c.b().iota({DType::I64, planes}, 1)});
    Value* offset = c.op(OpKind::Mul, {channel, c.scalar(DType::I64, static_cast<double>(numElements(spatial)))});
    c.setOutput(1, c.op(OpKind::Add, {index, offset}));
  }
  Shape yShape = {s[0], s[1]};
  yShape.insert(yShape.end(), out.begin(), out.end());
  return c.result(c.reshape(best, yShape));
}

// Pads x's spatial axes with zeros as the window says and leaves the window unpadded.
Value* padWithZeros(NodeContext& c, Value* x, Window& w) {
  size_t rank = static_cast<size_t>(x->type().rank()), n = w.rank();
  std::vector<int64_t> pads(2 * rank, 0);
  for (size_t i = 0; i < n; ++i) {
    pads[2 + i] = w.pads[i];
    pads[rank + 2 + i] = w.pads[i + n];
  }
  std::fill(w.pads.begin(), w.pads.end(), 0);
  return c.op(OpKind::Pad, {x}, {{"pads", Attr::ints(pads)}});
}

// MaxPool, AveragePool and LpPool. ceil_mode adds end padding so the last partial window counts
// (kiln's pooling leaves padding out of max and average alike); count_include_pad, and LpPool
// always, pad with zeros first.
template <OpKind K, bool Lp = false>
Status pool(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  int rank = (*x)->type().rank();
  if (rank < 3) return c.error("needs an input [N,C,spatial..], got " + (*x)->type().str());
  auto kernel = c.intsAttr("kernel_shape");
  if (!kernel) return c.error("needs kernel_shape");
  Shape spatial((*x)->type().shape.begin() + 2, (*x)->type().shape.end());
  auto w = window(c, spatial, *kernel);
  if (!w) return w.error();
  size_t n = spatial.size();
  bool ceilMode = c.intAttr("ceil_mode", 0) != 0;
  Shape out;
  for (size_t i = 0; i < n; ++i) out.push_back(windowOutputs(*w, spatial, i, ceilMode));
  bool dilated = std::any_of(w->dilations.begin(), w->dilations.end(), [](int64_t d) { return d != 1; });
  // kiln's pools take floats; the taps' max serves every dtype (ONNX MaxPool takes ints since opset 12).
  bool intMax = K == OpKind::MaxPool2d && !isFloat((*x)->type().dtype);
  if (K == OpKind::MaxPool2d && (intMax || c.wantsOutput(1))) return maxPoolTaps(c, *x, *w, out);
  for (size_t i = 0; i < n; ++i)  // the ceil_mode window past the end reads padding
    w->pads[i + n] += std::max<int64_t>(0, (out[i] - 1) * w->strides[i] + w->extent(i) - (spatial[i] + w->pads[i] + w->pads[i + n]));
  Value* in = *x;
  if (Lp) {
    // sum |x|^p over the window = mean over the zero-padded window x its size.
    Value* p = c.scalarLike(in, static_cast<double>(c.intAttr("p", 2)));
    in = padWithZeros(c, c.op(OpKind::Pow, {c.op(OpKind::Abs, {in}), p}), *w);
    Value* sum = c.op(OpKind::Mul, {poolSeparable(c, OpKind::AvgPool2d, in, *w),
                                    c.scalarLike(in, static_cast<double>(numElements(w->kernel)))});
    return c.result(c.op(OpKind::Pow, {sum, c.op(OpKind::Div, {c.scalarLike(in, 1), p})}));
  }
  if (K == OpKind::AvgPool2d && c.intAttr("count_include_pad", 0)) in = padWithZeros(c, in, *w);
  if (!dilated)
    for (size_t i = 0; i < n; ++i)
      if (w->pads[i] >= w->kernel[i] || w->pads[i + n] >= w->kernel[i]) return c.unsupported("padding as large as the window");
  return c.result(poolSeparable(c, K, in, *w));
}

template <OpKind K>
Status globalPool(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  return c.result(c.op(K, {*x}, {{"axes", Attr::ints(spatialAxes((*x)->type().rank()))}, {"keepdims", Attr(true)}}));
}

// Past this many (input, output) pairs MaxUnpool's mask would not fit in memory.
constexpr int64_t kMaxUnpoolPairs = int64_t{1} << 26;

// MaxUnpool, as ONNX's reference: zeros of the inferred shape ((in - 1) * stride - pads + kernel
// per axis), each X element stored at its flat index (a gather checks and wraps the indices as
// NumPy's indexing does; the last of several elements with one index wins), then padded with
// zeros up to output_shape when that is given. The scatter is a mask [inputs, outputs]: for every
// output position, the last input whose index is it.
Status maxUnpool(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  auto idx = c.input(1);
  if (!idx) return idx.error();
  const Shape& s = (*x)->type().shape;
  if (s.size() < 3 || (*idx)->type().shape != s) return c.error("needs X [N,C,spatial..] and indices of its shape");
  auto kernel = c.intsAttr("kernel_shape");
  if (!kernel) return c.error("needs kernel_shape");
  size_t n = s.size() - 2;
  std::vector<int64_t> strides = c.intsAttr("strides").value_or(std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = c.intsAttr("pads").value_or(std::vector<int64_t>(2 * n, 0));
  if (kernel->size() != n || strides.size() != n || pads.size() != 2 * n) return c.error("kernel_shape, strides and pads do not match the spatial dims");
  Shape inferred = {s[0], s[1]};
  for (size_t i = 0; i < n; ++i) inferred.push_back((s[2 + i] - 1) * strides[i] - pads[i] - pads[i + n] + (*kernel)[i]);
  Shape outShape = inferred;
  if (c.hasInput(2)) {
    auto given = c.staticInts(2, "output_shape");
    if (!given) return given.error();
    if (given->size() != s.size()) return c.error("output_shape must have " + std::to_string(s.size()) + " values");
    for (size_t i = 0; i < s.size(); ++i)
      if ((*given)[i] < inferred[i]) return c.error("output_shape " + shapeStr(*given) + " is smaller than the unpooled shape " + shapeStr(inferred));
    outShape = *given;
  }
  int64_t q = numElements(s), total = numElements(inferred);
  if (q > 0 && total > kMaxUnpoolPairs / q) return c.unsupported("unpooling of more than 2^26 (input, output) pairs");
  Value* target = c.op(OpKind::Gather, {c.b().iota({DType::I64, {total}}, 0), c.reshape(c.cast(*idx, DType::I64), {q})});
  Value* hit = c.op(OpKind::Eq, {c.reshape(target, {q, 1}), c.b().iota({DType::I64, {q, total}}, 1)});
  Value* writer = c.op(OpKind::Select, {hit, c.b().iota({DType::I64, {q, total}}, 0), c.scalar(DType::I64, -1)});
  Value* last = c.op(OpKind::ReduceMax, {writer}, {{"axes", Attr::ints({0})}});
  Value* picked = c.op(OpKind::Gather, {c.reshape(*x, {q}), c.op(OpKind::Max, {last, c.scalar(DType::I64, 0)})});
  Value* y = c.op(OpKind::Select, {c.op(OpKind::Ge, {last, c.scalar(DType::I64, 0)}), picked, c.scalarLike(*x, 0)});
  y = c.reshape(y, inferred);
  if (outShape != inferred) {
    std::vector<int64_t> grow(2 * s.size(), 0);
    for (size_t i = 0; i < s.size(); ++i) grow[s.size() + i] = outShape[i] - inferred[i];
    y = c.op(OpKind::Pad, {y}, {{"pads", Attr::ints(grow)}});
  }
  return c.result(y);
}

}  // namespace

void addPoolConverters(ConverterTable& t) {
  t["MaxPool"] = pool<OpKind::MaxPool2d>;
  t["AveragePool"] = pool<OpKind::AvgPool2d>;
  t["LpPool"] = pool<OpKind::AvgPool2d, /*Lp=*/true>;
  t["GlobalAveragePool"] = globalPool<OpKind::ReduceMean>;
  t["GlobalMaxPool"] = globalPool<OpKind::ReduceMax>;
  t["MaxUnpool"] = maxUnpool;
}

}  // namespace kiln::onnx_import
