// What the elementwise ops after a library op compute, recognised by what they compute rather than
// how they are written: the decompose pass has already expanded gelu into mul/add/tanh (or erf)
// ops, with casts around them for f16/bf16, so the library call's epilogue is found by evaluating
// those ops on sample points and comparing with the activations a library can apply.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace kiln::codegen {

enum class Activation { Relu, GeluTanh, GeluErf, Other };

// `ops` (program order) must compute an elementwise function of `x` alone: each op elementwise,
// reading only `x`, results of earlier ops in `ops`, and scalar constants. Returns which activation
// that function is, or Other (also when the ops read anything else or use an op it cannot
// evaluate). Sample points cover both signs and the range where erf- and tanh-gelu differ.
Activation classifyActivation(const std::vector<const Op*>& ops, const Value* x);

}  // namespace kiln::codegen
