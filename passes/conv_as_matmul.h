// conv-as-matmul (CPU pipeline): a 1x1 convolution over a 1x1 image is a matrix product. Such
// convolutions are a network's fully connected layers written as convs: the squeeze-and-excite
// blocks of EfficientNet and MobileNetV3, classifier heads after a global pool. oneDNN's
// convolution takes 40-60 us to set up and run one of them, its matmul of the same numbers 7-9 us
// ([1,1152] x [1152,48] with bias on the 2-core sandbox), as XLA's algebraic simplifier and
// onnxruntime rewrite such convs into dots too.
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

// Rewrites each f32/f64 conv2d with one group, a [O,C,1,1] weight, no padding and a 1x1 input
// image as `reshape(matmul(reshape(x, [N,C]), wT), [N,O,1,1])`, or channels-last as
// `matmul(x, wT)` ([N,1,1,C] x [C,O], batch dims broadcast: [N,1,1,O] as it is). wT is the
// weight as [C,O]: a constant weight is transposed here, once, so the library reads it as a plain
// right operand; any other is reshaped and transposed in the program.
PassResult rewriteConvAsMatmul(Module& module, PassContext& context);

}  // namespace kiln::passes
