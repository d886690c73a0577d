// Convolution and pooling over [N,C,H,W] (1-D forms run as H = 1), BatchNormalization at
// inference, InstanceNormalization, global pooling, LRN and DepthToSpace/SpaceToDepth (reshape +
// transpose). ONNX pads are [x1_begin, x2_begin, x1_end, x2_end], kiln's [top, left, bottom, right]:
// the same order.
#include <cmath>

#include "frontend/onnx/onnx_converters.h"

namespace kiln::onnx_import {

namespace {

struct Window {
  std::vector<int64_t> kernel, strides, pads, dilations;
};

// Kernel, strides, pads (auto_pad resolved) and dilations of a 2-D window over `spatial`.
Expected<Window> window(NodeContext& c, const Shape& spatial, std::vector<int64_t> kernel) {
  size_t n = spatial.size();
  Window w;
  w.kernel = std::move(kernel);
  w.strides = c.intsAttr("strides").value_or(std::vector<int64_t>(n, 1));
  w.dilations = c.intsAttr("dilations").value_or(std::vector<int64_t>(n, 1));
  w.pads = c.intsAttr("pads").value_or(std::vector<int64_t>(2 * n, 0));
  if (w.kernel.size() != n || w.strides.size() != n || w.dilations.size() != n || w.pads.size() != 2 * n)
    return c.error("kernel_shape, strides, dilations and pads do not match the " + std::to_string(n) + " spatial dims");
  std::string autoPad = c.stringAttr("auto_pad", "NOTSET");
  if (autoPad == "VALID") std::fill(w.pads.begin(), w.pads.end(), 0);
  if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t i = 0; i < n; ++i) {
      int64_t out = (spatial[i] + w.strides[i] - 1) / w.strides[i];
      int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[i] + (w.kernel[i] - 1) * w.dilations[i] + 1 - spatial[i]);
      int64_t small = total / 2, big = total - small;
      w.pads[i] = autoPad == "SAME_UPPER" ? small : big;
      w.pads[i + n] = autoPad == "SAME_UPPER" ? big : small;
    }
  }
  return w;
}

// 1-D inputs [N,C,W] run as [N,C,1,W]; the window lists grow to match.
void lift1d(Window& w) {
  w.kernel.insert(w.kernel.begin(), 1);
  w.strides.insert(w.strides.begin(), 1);
  w.dilations.insert(w.dilations.begin(), 1);
  w.pads = {0, w.pads[0], 0, w.pads[1]};
}

Value* lift(NodeContext& c, Value* x) {
  Shape s = x->type().shape;
  s.insert(s.begin() + 2, 1);
  return c.reshape(x, s);
}

Value* drop(NodeContext& c, Value* y) {
  if (!y) return nullptr;
  Shape s = y->type().shape;
  s.erase(s.begin() + 2);
  return c.reshape(y, s);
}

Status conv(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  auto wt = c.input(1);
  if (!wt) return wt.error();
  int rank = (*x)->type().rank();
  if (rank != 3 && rank != 4) return c.unsupported(std::to_string(rank - 2) + "-D convolution");
  const Shape& ws = (*wt)->type().shape;
  std::vector<int64_t> kernel = c.intsAttr("kernel_shape").value_or(std::vector<int64_t>(ws.begin() + 2, ws.end()));
  auto w = window(c, Shape((*x)->type().shape.begin() + 2, (*x)->type().shape.end()), kernel);
  if (!w) return w.error();
  Value* in = *x;
  Value* filter = *wt;
  if (rank == 3) {
    lift1d(*w);
    in = lift(c, in);
    filter = lift(c, filter);
  }
  Value* y = c.op(OpKind::Conv2d, {in, filter}, {{"strides", Attr::ints(w->strides)}, {"pads", Attr::ints(w->pads)},
                                                 {"dilations", Attr::ints(w->dilations)}, {"groups", Attr(c.intAttr("group", 1))}});
  if (c.hasInput(2)) {
    auto b = c.input(2);
    if (!b) return b.error();
    Shape bs(static_cast<size_t>(y ? y->type().rank() : 4), 1);
    bs[1] = (*b)->type().numElements();
    y = c.op(OpKind::Add, {y, c.reshape(*b, bs)});
  }
  return c.result(rank == 3 ? drop(c, y) : y);
}

// ConvTranspose as a convolution: zeros between input elements (stride - 1 of them, by a reshape,
// an end pad and a reshape), padding of (kernel extent - 1 - pad) on each side (negative pads crop),
// and the kernel flipped with its in/out channels swapped per group.
Status convTranspose(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  auto wt = c.input(1);
  if (!wt) return wt.error();
  int rank = (*x)->type().rank();
  if (rank != 3 && rank != 4) return c.unsupported(std::to_string(rank - 2) + "-D transposed convolution");
  Value* in = *x;
  Value* filter = *wt;
  const Shape& ws = (*wt)->type().shape;
  Shape spatial((*x)->type().shape.begin() + 2, (*x)->type().shape.end());
  size_t n = spatial.size();
  std::vector<int64_t> kernel = c.intsAttr("kernel_shape").value_or(std::vector<int64_t>(ws.begin() + 2, ws.end()));
  std::vector<int64_t> strides = c.intsAttr("strides").value_or(std::vector<int64_t>(n, 1));
  std::vector<int64_t> dil = c.intsAttr("dilations").value_or(std::vector<int64_t>(n, 1));
  std::vector<int64_t> outPad = c.intsAttr("output_padding").value_or(std::vector<int64_t>(n, 0));
  std::vector<int64_t> pads = c.intsAttr("pads").value_or(std::vector<int64_t>(2 * n, 0));
  if (kernel.size() != n || strides.size() != n || dil.size() != n || outPad.size() != n || pads.size() != 2 * n)
    return c.error("kernel_shape, strides, dilations, output_padding and pads do not match the spatial dims");
  std::string autoPad = c.stringAttr("auto_pad", "NOTSET");
  auto outShape = c.intsAttr("output_shape");
  if (outShape || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t i = 0; i < n; ++i) {
      int64_t extent = (kernel[i] - 1) * dil[i] + 1;
      int64_t want = outShape ? (*outShape)[outShape->size() - n + i] : spatial[i] * strides[i];
      int64_t total = strides[i] * (spatial[i] - 1) + outPad[i] + extent - want;
      // ONNX's reference divides with floor (Python's //): a negative total grows the end.
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      bool upper = autoPad == "SAME_UPPER";
      pads[i] = upper ? half : total - half;
      pads[i + n] = total - pads[i];
    }
  }
  int64_t group = c.intAttr("group", 1);
  int64_t cin = ws[0], coutPerGroup = ws[1];
  if (rank == 3) {
    in = lift(c, in);
    filter = lift(c, filter);
    spatial.insert(spatial.begin(), 1);
    kernel.insert(kernel.begin(), 1);
    strides.insert(strides.begin(), 1);
    dil.insert(dil.begin(), 1);
    outPad.insert(outPad.begin(), 0);
    pads = {0, pads[0], 0, pads[1]};
  }
  const Shape& xs = in->type().shape;
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  // Zeros between elements: [N,C,H,1,W,1] padded to [N,C,H,sh,W,sw], flattened, trailing zeros cut.
  Value* up = c.reshape(in, {N, C, H, 1, W, 1});
  up = c.op(OpKind::Pad, {up}, {{"pads", Attr::ints({0, 0, 0, 0, 0, 0, 0, 0, 0, strides[0] - 1, 0, strides[1] - 1})}});
  up = c.reshape(up, {N, C, H * strides[0], W * strides[1]});
  std::vector<int64_t> convPads(8, 0);
  for (size_t i = 0; i < 2; ++i) {
    int64_t extent = (kernel[i] - 1) * dil[i] + 1;
    convPads[2 + i] = extent - 1 - pads[i];
    // The flattening left stride - 1 zeros after the last element: take them off the end pad.
    convPads[6 + i] = extent - 1 - pads[i + 2] + outPad[i] - (strides[i] - 1);
  }
  up = c.op(OpKind::Pad, {up}, {{"pads", Attr::ints(convPads)}});
  // Kernel [Cin, Cout/g, kh, kw] -> [Cout, Cin/g, kh, kw], flipped in both spatial dims.
  Value* k = c.reshape(filter, {group, cin / group, coutPerGroup, kernel[0], kernel[1]});
  k = c.op(OpKind::Transpose, {k}, {{"perm", Attr::ints({0, 2, 1, 3, 4})}});
  k = c.reshape(k, {group * coutPerGroup, cin / group, kernel[0], kernel[1]});
  k = c.op(OpKind::Slice, {k}, {{"starts", Attr::ints({-1, -1})}, {"ends", Attr::ints({INT64_MIN, INT64_MIN})},
                                {"axes", Attr::ints({2, 3})}, {"steps", Attr::ints({-1, -1})}});
  Value* y = c.op(OpKind::Conv2d, {up, k}, {{"dilations", Attr::ints(dil)}, {"groups", Attr(group)}});
  if (c.hasInput(2)) {
    auto b = c.input(2);
    if (!b) return b.error();
    y = c.op(OpKind::Add, {y, c.reshape(*b, {1, (*b)->type().numElements(), 1, 1})});
  }
  return c.result(rank == 3 ? drop(c, y) : y);
}

// MaxPool and AveragePool. ceil_mode adds end padding so the last partial window counts (kiln's
// pooling leaves padding out of max and average alike); count_include_pad pads with zeros first.
template <OpKind K>
Status pool(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  int rank = (*x)->type().rank();
  if (rank != 3 && rank != 4) return c.unsupported(std::to_string(rank - 2) + "-D pooling");
  if (c.wantsOutput(1)) return c.unsupported("the Indices output");
  auto kernel = c.intsAttr("kernel_shape");
  if (!kernel) return c.error("needs kernel_shape");
  Shape spatial((*x)->type().shape.begin() + 2, (*x)->type().shape.end());
  auto w = window(c, spatial, *kernel);
  if (!w) return w.error();
  for (int64_t d : w->dilations)
    if (d != 1) return c.unsupported("dilated pooling");
  size_t n = spatial.size();
  if (c.intAttr("ceil_mode", 0)) {
    for (size_t i = 0; i < n; ++i) {
      int64_t span = spatial[i] + w->pads[i] + w->pads[i + n] - w->kernel[i];
      int64_t outCeil = (span + w->strides[i] - 1) / w->strides[i] + 1;
      // ONNX drops a last window that would start inside the end padding.
      if ((outCeil - 1) * w->strides[i] >= spatial[i] + w->pads[i]) --outCeil;
      w->pads[i + n] += std::max<int64_t>(0, (outCeil - 1) * w->strides[i] + w->kernel[i] - (spatial[i] + w->pads[i] + w->pads[i + n]));
    }
  }
  Value* in = *x;
  if (K == OpKind::AvgPool2d && c.intAttr("count_include_pad", 0)) {
    std::vector<int64_t> pads(2 * static_cast<size_t>(rank), 0);
    for (size_t i = 0; i < n; ++i) {
      pads[2 + i] = w->pads[i];
      pads[static_cast<size_t>(rank) + 2 + i] = w->pads[i + n];
    }
    in = c.op(OpKind::Pad, {in}, {{"pads", Attr::ints(pads)}});
    std::fill(w->pads.begin(), w->pads.end(), 0);
  }
  if (rank == 3) {
    lift1d(*w);
    in = lift(c, in);
  }
  for (size_t i = 0; i < w->kernel.size(); ++i)
    if (w->pads[i] >= w->kernel[i] || w->pads[i + w->kernel.size()] >= w->kernel[i]) return c.unsupported("padding as large as the window");
  Value* y = c.op(K, {in}, {{"kernel", Attr::ints(w->kernel)}, {"strides", Attr::ints(w->strides)}, {"pads", Attr::ints(w->pads)}});
  return c.result(rank == 3 ? drop(c, y) : y);
}

std::vector<int64_t> spatialAxes(int rank) {
  std::vector<int64_t> axes;
  for (int64_t i = 2; i < rank; ++i) axes.push_back(i);
  return axes;
}

template <OpKind K>
Status globalPool(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  return c.result(c.op(K, {*x}, {{"axes", Attr::ints(spatialAxes((*x)->type().rank()))}, {"keepdims", Attr(true)}}));
}

// Training mode (opset 14): normalise with the batch's own mean and (population) variance over
// every axis but 1; also output running_mean/var = old * momentum + batch * (1 - momentum).
Status batchNormTraining(NodeContext& c, const std::vector<Value*>& in) {
  int rank = in[0]->type().rank();
  std::vector<int64_t> axes = {0};
  for (int64_t i = 2; i < rank; ++i) axes.push_back(i);
  Shape bs(static_cast<size_t>(rank), 1);
  bs[1] = in[0]->type().shape[1];
  AttrList keep = {{"axes", Attr::ints(axes)}, {"keepdims", Attr(true)}};
  Value* mean = c.op(OpKind::ReduceMean, {in[0]}, keep);
  Value* d = c.op(OpKind::Sub, {in[0], mean});
  Value* var = c.op(OpKind::ReduceMean, {c.op(OpKind::Mul, {d, d})}, keep);
  Value* inv = c.op(OpKind::Rsqrt, {c.op(OpKind::Add, {var, c.scalarLike(in[0], c.floatAttr("epsilon", 1e-5f))})});
  Value* y = c.op(OpKind::Add, {c.op(OpKind::Mul, {c.op(OpKind::Mul, {d, inv}), c.reshape(in[1], bs)}), c.reshape(in[2], bs)});
  double momentum = c.floatAttr("momentum", 0.9f);
  Shape channels = {bs[1]};
  auto running = [&](Value* old, Value* batch) {
    return c.op(OpKind::Add, {c.op(OpKind::Mul, {old, c.scalarLike(old, momentum)}),
                              c.op(OpKind::Mul, {c.reshape(batch, channels), c.scalarLike(old, 1 - momentum)})});
  };
  c.setOutput(1, running(in[3], mean));
  c.setOutput(2, running(in[4], var));
  return c.result(y);
}

Status batchNorm(NodeContext& c) {
  std::vector<Value*> in;
  for (size_t i = 0; i < 5; ++i) {
    auto v = c.input(i);
    if (!v) return v.error();
    in.push_back(*v);
  }
  int rank = in[0]->type().rank();
  if (c.intAttr("training_mode", 0) || c.wantsOutput(1) || c.wantsOutput(2)) return batchNormTraining(c, in);
  if (rank == 4) return c.result(c.op(OpKind::BatchNorm, in, {{"epsilon", Attr(static_cast<double>(c.floatAttr("epsilon", 1e-5f)))}}));
  // Other ranks: (x - mean) / sqrt(var + eps) * scale + bias with [C] lined up on axis 1.
  Shape bs(static_cast<size_t>(rank), 1);
  bs[1] = in[0]->type().shape[1];
  Value* eps = c.scalarLike(in[0], c.floatAttr("epsilon", 1e-5f));
  Value* inv = c.op(OpKind::Rsqrt, {c.op(OpKind::Add, {c.reshape(in[4], bs), eps})});
  Value* y = c.op(OpKind::Mul, {c.op(OpKind::Sub, {in[0], c.reshape(in[3], bs)}), c.op(OpKind::Mul, {inv, c.reshape(in[1], bs)})});
  return c.result(c.op(OpKind::Add, {y, c.reshape(in[2], bs)}));
}

Status instanceNorm(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  auto scale = c.input(1);
  if (!scale) return scale.error();
  auto bias = c.input(2);
  if (!bias) return bias.error();
  int rank = (*x)->type().rank();
  AttrList keep = {{"axes", Attr::ints(spatialAxes(rank))}, {"keepdims", Attr(true)}};
  Shape bs(static_cast<size_t>(rank), 1);
  bs[1] = (*x)->type().shape[1];
  Value* mean = c.op(OpKind::ReduceMean, {*x}, keep);
  Value* d = c.op(OpKind::Sub, {*x, mean});
  Value* var = c.op(OpKind::ReduceMean, {c.op(OpKind::Mul, {d, d})}, keep);
  Value* inv = c.op(OpKind::Rsqrt, {c.op(OpKind::Add, {var, c.scalarLike(*x, c.floatAttr("epsilon", 1e-5f))})});
  Value* y = c.op(OpKind::Mul, {c.op(OpKind::Mul, {d, inv}), c.reshape(*scale, bs)});
  return c.result(c.op(OpKind::Add, {y, c.reshape(*bias, bs)}));
}

// LRN: x / (bias + alpha/size * sum of x^2 over a window of `size` channels)^beta.
Status lrn(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  int64_t size = c.intAttr("size", 0);
  if (size < 1) return c.error("needs size >= 1");
  double alpha = c.floatAttr("alpha", 1e-4f), beta = c.floatAttr("beta", 0.75f), bias = c.floatAttr("bias", 1.0f);
  const Shape& s = (*x)->type().shape;
  int rank = static_cast<int>(s.size());
  std::vector<int64_t> pads(2 * static_cast<size_t>(rank), 0);
  pads[1] = (size - 1) / 2;
  pads[static_cast<size_t>(rank) + 1] = size - 1 - (size - 1) / 2;
  Value* sq = c.op(OpKind::Pad, {c.op(OpKind::Mul, {*x, *x})}, {{"pads", Attr::ints(pads)}});
  Value* sum = nullptr;
  for (int64_t k = 0; k < size; ++k) {
    Value* part = c.op(OpKind::Slice, {sq}, {{"starts", Attr::ints({k})}, {"ends", Attr::ints({k + s[1]})}, {"axes", Attr::ints({1})}});
    sum = sum ? c.op(OpKind::Add, {sum, part}) : part;
  }
  Value* base = c.op(OpKind::Add, {c.op(OpKind::Mul, {sum, c.scalarLike(*x, alpha / static_cast<double>(size))}), c.scalarLike(*x, bias)});
  return c.result(c.op(OpKind::Div, {*x, c.op(OpKind::Pow, {base, c.scalarLike(*x, beta)})}));
}

Status depthToSpace(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  const Shape& s = (*x)->type().shape;
  int64_t b = c.intAttr("blocksize", 0);
  if (s.size() != 4 || b < 1 || s[1] % (b * b)) return c.error("needs [N,C,H,W] with C divisible by blocksize^2");
  int64_t n = s[0], ch = s[1] / (b * b), h = s[2], w = s[3];
  bool crd = c.stringAttr("mode", "DCR") == "CRD";
  Value* r = crd ? c.reshape(*x, {n, ch, b, b, h, w}) : c.reshape(*x, {n, b, b, ch, h, w});
  std::vector<int64_t> perm = crd ? std::vector<int64_t>{0, 1, 4, 2, 5, 3} : std::vector<int64_t>{0, 3, 4, 1, 5, 2};
  return c.result(c.reshape(c.op(OpKind::Transpose, {r}, {{"perm", Attr::ints(perm)}}), {n, ch, h * b, w * b}));
}

Status spaceToDepth(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  const Shape& s = (*x)->type().shape;
  int64_t b = c.intAttr("blocksize", 0);
  if (s.size() != 4 || b < 1 || s[2] % b || s[3] % b) return c.error("needs [N,C,H,W] with H and W divisible by blocksize");
  int64_t n = s[0], ch = s[1], h = s[2] / b, w = s[3] / b;
  Value* r = c.reshape(*x, {n, ch, h, b, w, b});
  Value* t = c.op(OpKind::Transpose, {r}, {{"perm", Attr::ints({0, 3, 5, 1, 2, 4})}});
  return c.result(c.reshape(t, {n, ch * b * b, h, w}));
}

}  // namespace

void addNnConverters(ConverterTable& t) {
  t["Conv"] = conv;
  t["ConvTranspose"] = convTranspose;
  t["MaxPool"] = pool<OpKind::MaxPool2d>;
  t["AveragePool"] = pool<OpKind::AvgPool2d>;
  t["GlobalAveragePool"] = globalPool<OpKind::ReduceMean>;
  t["GlobalMaxPool"] = globalPool<OpKind::ReduceMax>;
  t["BatchNormalization"] = batchNorm;
  t["InstanceNormalization"] = instanceNorm;
  t["LRN"] = lrn;
  t["DepthToSpace"] = depthToSpace;
  t["SpaceToDepth"] = spaceToDepth;
}

}  // namespace kiln::onnx_import
