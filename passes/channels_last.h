// channels-last (CPU pipeline): runs a CNN's convolutions on channels-last activations from one
// convolution to the next, as onnxruntime's NCHWc transformer and XLA's layout assignment do.
// oneDNN's convolutions work in NHWC (its brgemm kernels on AVX-512); given kiln's NCHW they
// reorder the input in and the output back on every call, a quarter of ResNet-50's time.
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

// In each function with two or more f32 conv2d ops with symmetric pads and no backward
// convolution (a training step keeps NCHW: its backward ops read it), rewrites every such conv2d
// as `conv2d {layout = "nhwc"}` of its input transposed to NHWC, and carries the NHWC value on
// through the ops after it that work in any layout: elementwise ops (their small broadcast
// operands, a bias [c,1,1] or a squeeze-and-excite scale [n,c,1,1], transposed alongside),
// reductions with explicit axes (renumbered) and max/avg pools (`layout = "nhwc"` too). The next
// convolution then reads the NHWC value itself; an op that needs NCHW (a reshape, the function's
// results) reads it transposed back, once per value. The program computes the same values; only where the transposes sit moves.
PassResult convertToChannelsLast(Module& module, PassContext& context);

}  // namespace kiln::passes
