// Sliding windows of ONNX's convolution and pooling ops (kernel_shape, strides, pads, dilations,
// auto_pad), and the reshapes that run their 1-D forms as 2-D. Internal to frontend/onnx.
#pragma once

#include "frontend/onnx/onnx_context.h"

namespace kiln::onnx_import {

// ONNX pads are [x1_begin, x2_begin, .., x1_end, x2_end, ..]; kiln's conv2d and pools take
// [top, left, bottom, right]: the same order.
struct Window {
  std::vector<int64_t> kernel, strides, pads, dilations;

  size_t rank() const { return kernel.size(); }
  int64_t extent(size_t i) const { return (kernel[i] - 1) * dilations[i] + 1; }
};

// Kernel, strides, pads (auto_pad resolved) and dilations of a window over `spatial`.
Expected<Window> window(NodeContext& c, const Shape& spatial, std::vector<int64_t> kernel);

// The window's number of outputs along spatial axis i, with ONNX's ceil_mode rule: a last window
// that would start inside the end padding is dropped.
int64_t windowOutputs(const Window& w, const Shape& spatial, size_t i, bool ceilMode);

// The spatial axes 2..rank-1 of an [N,C,spatial..] tensor.
std::vector<int64_t> spatialAxes(int rank);

// A new size-1 axis 2 ([N,C,W] -> [N,C,1,W]) and the window lists grown to match; `drop` undoes it.
void lift1d(Window& w);
Value* lift(NodeContext& c, Value* x);
Value* drop(NodeContext& c, Value* y);

}  // namespace kiln::onnx_import
