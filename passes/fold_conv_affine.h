// Folds a per-channel scale and shift after a convolution with constant weights into the weights
// and one bias add: inference batch normalization (which decompose has made `(y - mean) / std *
// scale + bias`) and any mul/div/add/sub by per-channel constants, as onnxruntime's Conv+BN fusion
// and TensorRT do. The convolution then runs as one library call with a bias (and relu) epilogue
// instead of a call followed by a loop kernel re-reading its whole output.
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

// For each f32/f64 conv2d whose weights are computed from constants alone, follows its result
// through single-use add/sub/mul/div ops whose other operand is a per-channel constant expression
// (every dim 1 but the output channel's) and replaces the last of them by
// `conv2d(x, w * a) + b` with a and b (one per output channel) computed in double. Left alone when
// a scale is zero or not finite (it would change what inf and NaN outputs become) or when the
// chain is a lone bias add (the libraries apply that already).
PassResult foldConvAffine(Module& module, PassContext& context);

}  // namespace kiln::passes
