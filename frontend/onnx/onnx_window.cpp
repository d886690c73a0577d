// Window attributes shared by Conv, ConvTranspose and the pools (onnx_window.h).
#include "frontend/onnx/onnx_window.h"

#include <algorithm>

namespace kiln::onnx_import {

Expected<Window> window(NodeContext& c, const Shape& spatial, std::vector<int64_t> kernel) {
  size_t n = spatial.size();
  Window w;
  w.kernel = std::move(kernel);
  w.strides = c.intsAttr("strides").value_or(std::vector<int64_t>(n, 1));
  w.dilations = c.intsAttr("dilations").value_or(std::vector<int64_t>(n, 1));
  w.pads = c.intsAttr("pads").value_or(std::vector<int64_t>(2 * n, 0));
  if (w.kernel.size() != n || w.strides.size() != n || w.dilations.size() != n || w.pads.size() != 2 * n)
    return c.error("kernel_shape, strides, dilations and pads do not match the " + std::to_string(n) + " spatial dims");
  for (size_t i = 0; i < n; ++i)
    if (w.kernel[i] < 1 || w.strides[i] < 1 || w.dilations[i] < 1 || w.pads[i] < 0 || w.pads[i + n] < 0)
      return c.error("kernel_shape, strides and dilations must be positive and pads not negative");
  std::string autoPad = c.stringAttr("auto_pad", "NOTSET");
  if (autoPad == "VALID") std::fill(w.pads.begin(), w.pads.end(), 0);
  if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t i = 0; i < n; ++i) {
      int64_t out = (spatial[i] + w.strides[i] - 1) / w.strides[i];
      int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[i] + w.extent(i) - spatial[i]);
      int64_t small = total / 2, big = total - small;
      w.pads[i] = autoPad == "SAME_UPPER" ? small : big;
      w.pads[i + n] = autoPad == "SAME_UPPER" ? big : small;
    }
  }
  return w;
}

int64_t windowOutputs(const Window& w, const Shape& spatial, size_t i, bool ceilMode) {
  size_t n = w.rank();
  int64_t span = spatial[i] + w.pads[i] + w.pads[i + n] - w.extent(i);
  if (span < 0) return 0;
  if (!ceilMode) return span / w.strides[i] + 1;
  int64_t out = (span + w.strides[i] - 1) / w.strides[i] + 1;
  if ((out - 1) * w.strides[i] >= spatial[i] + w.pads[i]) --out;
  return out;
}

std::vector<int64_t> spatialAxes(int rank) {
  std::vector<int64_t> axes;
  for (int64_t i = 2; i < rank; ++i) axes.push_back(i);
  return axes;
}

void lift1d(Window& w) {
  w.kernel.insert(w.kernel.begin(), 1);
  w.strides.insert(w.strides.begin(), 1);
  w.dilations.insert(w.dilations.begin(), 1);
  w.pads = {0, w.pads[0], 0, w.pads[1]};
}

Value* lift(NodeContext& c, Value* x) {
  if (!x) return nullptr;
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

}  // namespace kiln::onnx_import
