// Conv and ConvTranspose over any number of spatial dims, on kiln's conv2d. 1-D runs as 2-D with
// a size-1 axis; 3-D and up peel off the first spatial axis: each of its kernel taps is a 2-D (or
// lower) convolution of a strided slice of the input, with that axis folded into the batch, and
// the taps are summed. ConvTranspose is a convolution of the input with zeros inserted.
#include <cstdint>

#include "frontend/onnx/onnx_converters.h"
#include "frontend/onnx/onnx_window.h"

namespace kiln::onnx_import {

namespace {

// Cross-correlation of x [N,C,S1..Sn] with f [O,C/groups,k1..kn] over window `w`.
Value* convNd(NodeContext& c, Value* x, Value* f, const Window& w, int64_t groups) {
  if (!x || !f) return nullptr;
  size_t n = w.rank();
  if (n == 2)
    return c.op(OpKind::Conv2d, {x, f}, {{"strides", Attr::ints(w.strides)}, {"pads", Attr::ints(w.pads)},
                                         {"dilations", Attr::ints(w.dilations)}, {"groups", Attr(groups)}});
  if (n == 1) {
    Window lifted = w;
    lift1d(lifted);
    return drop(c, convNd(c, lift(c, x), lift(c, f), lifted, groups));
  }
  // The first spatial axis D: pad it, then tap k reads D positions k*dilation + o*stride.
  Shape xs = x->type().shape;
  const Shape& fs = f->type().shape;
  std::vector<int64_t> pads(2 * xs.size(), 0);
  pads[2] = w.pads[0];
  pads[xs.size() + 2] = w.pads[n];
  Value* padded = c.op(OpKind::Pad, {x}, {{"pads", Attr::ints(pads)}});
  int64_t depth = xs[2] + w.pads[0] + w.pads[n];
  int64_t outDepth = (depth - w.extent(0)) / w.strides[0] + 1;
  if (outDepth < 1) return nullptr;  // conv() checked every axis
  Window rest = {{w.kernel.begin() + 1, w.kernel.end()}, {w.strides.begin() + 1, w.strides.end()}, {}, {w.dilations.begin() + 1, w.dilations.end()}};
  rest.pads.insert(rest.pads.end(), w.pads.begin() + 1, w.pads.begin() + static_cast<int64_t>(n));
  rest.pads.insert(rest.pads.end(), w.pads.begin() + static_cast<int64_t>(n) + 1, w.pads.end());
  // [N,C,Do,rest..] -> [N,Do,C,rest..] -> [N*Do,C,rest..]
  std::vector<int64_t> toBatch = {0, 2, 1};
  for (size_t i = 3; i < xs.size(); ++i) toBatch.push_back(static_cast<int64_t>(i));
  Shape folded = {xs[0] * outDepth, xs[1]};
  folded.insert(folded.end(), xs.begin() + 3, xs.end());
  Shape filterRest = {fs[0], fs[1]};
  filterRest.insert(filterRest.end(), fs.begin() + 3, fs.end());
  Value* sum = nullptr;
  for (int64_t k = 0; k < w.kernel[0]; ++k) {
    int64_t start = k * w.dilations[0];
    Value* slab = c.op(OpKind::Slice, {padded}, {{"starts", Attr::ints({start})}, {"ends", Attr::ints({start + (outDepth - 1) * w.strides[0] + 1})},
                                                 {"axes", Attr::ints({2})}, {"steps", Attr::ints({w.strides[0]})}});
    slab = c.reshape(c.op(OpKind::Transpose, {slab}, {{"perm", Attr::ints(toBatch)}}), folded);
    Value* tap = c.reshape(c.op(OpKind::Slice, {f}, {{"starts", Attr::ints({k})}, {"ends", Attr::ints({k + 1})}, {"axes", Attr::ints({2})}}), filterRest);
    Value* y = convNd(c, slab, tap, rest, groups);
    sum = sum ? c.op(OpKind::Add, {sum, y}) : y;
  }
  if (!sum) return nullptr;
  // [N*Do,O,rest..] -> [N,Do,O,rest..] -> [N,O,Do,rest..]
  Shape unfolded = {xs[0], outDepth};
  unfolded.insert(unfolded.end(), sum->type().shape.begin() + 1, sum->type().shape.end());
  return c.op(OpKind::Transpose, {c.reshape(sum, unfolded)}, {{"perm", Attr::ints(toBatch)}});
}

Status addBias(NodeContext& c, Value* y) {
  if (!c.hasInput(2) || !y) return c.result(y);
  auto b = c.input(2);
  if (!b) return b.error();
  Shape bs(static_cast<size_t>(y->type().rank()), 1);
  bs[1] = (*b)->type().numElements();
  return c.result(c.op(OpKind::Add, {y, c.reshape(*b, bs)}));
}

Status conv(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  auto f = c.input(1);
  if (!f) return f.error();
  const Shape& xs = (*x)->type().shape;
  const Shape& fs = (*f)->type().shape;
  if (xs.size() < 3 || fs.size() != xs.size()) return c.error("needs X [N,C,spatial..] and W of the same rank, got " + (*x)->type().str() + " and " + (*f)->type().str());
  std::vector<int64_t> kernel = c.intsAttr("kernel_shape").value_or(std::vector<int64_t>(fs.begin() + 2, fs.end()));
  Shape spatial(xs.begin() + 2, xs.end());
  auto w = window(c, spatial, kernel);
  if (!w) return w.error();
  for (size_t i = 0; i < spatial.size(); ++i)
    if (spatial[i] + w->pads[i] + w->pads[i + spatial.size()] < w->extent(i))
      return c.error("the window (" + std::to_string(w->extent(i)) + " wide) is larger than the padded input along spatial axis " + std::to_string(i));
  return addBias(c, convNd(c, *x, *f, *w, c.intAttr("group", 1)));
}

// ConvTranspose as a convolution: zeros between input elements (stride - 1 of them, by a reshape,
// an end pad and a reshape), padding of (kernel extent - 1 - pad) on each side (negative pads crop),
// and the kernel flipped with its in/out channels swapped per group.
Status convTranspose(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  auto wt = c.input(1);
  if (!wt) return wt.error();
  const Shape& xs = (*x)->type().shape;
  const Shape& ws = (*wt)->type().shape;
  if (xs.size() < 3 || ws.size() != xs.size()) return c.error("needs X [N,C,spatial..] and W of the same rank, got " + (*x)->type().str() + " and " + (*wt)->type().str());
  Shape spatial(xs.begin() + 2, xs.end());
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
  // Zeros between elements: [N,C,S1,1,S2,1,..] padded to [N,C,S1,s1,S2,s2,..], flattened pairwise.
  Shape interleaved = {xs[0], xs[1]}, upShape = {xs[0], xs[1]};
  std::vector<int64_t> gaps(2 * (2 + 2 * n), 0);
  for (size_t i = 0; i < n; ++i) {
    interleaved.insert(interleaved.end(), {spatial[i], 1});
    upShape.push_back(spatial[i] * strides[i]);
    gaps[2 + 2 * n + 3 + 2 * i] = strides[i] - 1;
  }
  Value* up = c.reshape(c.op(OpKind::Pad, {c.reshape(*x, interleaved)}, {{"pads", Attr::ints(gaps)}}), upShape);
  std::vector<int64_t> convPads(2 * (2 + n), 0);
  for (size_t i = 0; i < n; ++i) {
    int64_t extent = (kernel[i] - 1) * dil[i] + 1;
    convPads[2 + i] = extent - 1 - pads[i];
    // The flattening left stride - 1 zeros after the last element: take them off the end pad.
    convPads[2 + n + 2 + i] = extent - 1 - pads[i + n] + outPad[i] - (strides[i] - 1);
  }
  up = c.op(OpKind::Pad, {up}, {{"pads", Attr::ints(convPads)}});
  // Kernel [Cin, Cout/g, k..] -> [Cout, Cin/g, k..], flipped along every spatial axis.
  Shape grouped = {group, cin / group, coutPerGroup}, swapped = {group * coutPerGroup, cin / group};
  std::vector<int64_t> perm = {0, 2, 1}, flipAxes, flipStarts(n, -1), flipEnds(n, INT64_MIN), flipSteps(n, -1);
  for (size_t i = 0; i < n; ++i) {
    grouped.push_back(kernel[i]);
    swapped.push_back(kernel[i]);
    perm.push_back(static_cast<int64_t>(3 + i));
    flipAxes.push_back(static_cast<int64_t>(2 + i));
  }
  Value* k = c.reshape(c.op(OpKind::Transpose, {c.reshape(*wt, grouped)}, {{"perm", Attr::ints(perm)}}), swapped);
  k = c.op(OpKind::Slice, {k}, {{"starts", Attr::ints(flipStarts)}, {"ends", Attr::ints(flipEnds)},
                                {"axes", Attr::ints(flipAxes)}, {"steps", Attr::ints(flipSteps)}});
  Window unit = {kernel, std::vector<int64_t>(n, 1), std::vector<int64_t>(2 * n, 0), dil};
  return addBias(c, convNd(c, up, k, unit, group));
}

}  // namespace

void addConvConverters(ConverterTable& t) {
  t["Conv"] = conv;
  t["ConvTranspose"] = convTranspose;
}

}  // namespace kiln::onnx_import
