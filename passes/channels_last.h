// channels-last (CPU pipeline): runs a CNN's convolutions on channels-last activations from one
// convolution to the next, as onnxruntime's NCHWc transformer and XLA's layout assignment do.
// oneDNN's convolutions work in NHWC (its brgemm kernels on AVX-512); given kiln's NCHW they
// reorder the input in and the output back on every call, a quarter of ResNet-50's time.
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

// In each function with two or more f32 convolutions with symmetric pads (conv2d and, in a
// training step, conv2d_backward_data and _filter), rewrites each as the same op with
// `layout = "nhwc"` on its activations transposed to NHWC, and carries NHWC values on through the
// ops after them that work in any layout: elementwise ops (their small broadcast operands, a bias
// [c,1,1] or a squeeze-and-excite scale [n,c,1,1], transposed alongside), reductions with explicit
// axes (renumbered), max/avg pools and their gradients (`layout = "nhwc"` too). The next
// convolution then reads the NHWC value itself; an op that needs NCHW (a reshape, the function's
// results) reads it transposed back, once per value. The program computes the same values; only
// where the transposes sit moves.
PassResult convertToChannelsLast(Module& module, PassContext& context);

}  // namespace kiln::passes
