// What the elementwise ops after a library op compute, recognised by what they compute rather than
// how they are written: the decompose pass has already expanded gelu into mul/add/tanh (or erf)
// ops, with casts around them for f16/bf16, so the library call's epilogue is found by evaluating
// those ops on sample points and comparing with the activations a library can apply.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "passes/pass.h"

namespace kiln::passes {

// Relu6 is min(max(x, 0), 6), MobileNet's clip.
enum class Activation { Relu, Relu6, GeluTanh, GeluErf, Other };

// `ops` (program order) must compute an elementwise function of `x` alone: each op elementwise,
// reading only `x`, results of earlier ops in `ops`, and scalar constants. Returns which activation
// that function is, or Other (also when the ops read anything else or use an op it cannot
// evaluate). Sample points cover both signs and the range where erf- and tanh-gelu differ.
Activation classifyActivation(const std::vector<const Op*>& ops, const Value* x);

// Whether `bias`, added to the result of `hero`, is a bias cuBLASLt, cuDNN and oneDNN add on the
// way out: one value per output column of a matmul (the last dim of its result, every other dim
// 1; a single value where the result has one column), one per output channel of a conv2d
// ([o,1,1] or [1,o,1,1] against [n,o,h,w]; [o] or [1,1,1,o] against a channels-last [n,h,w,o]).
bool isLibraryBias(const Op& hero, const Value& bias);

// Whether `add` adds a residual to `x` (the library op `hero`'s result, or that plus its bias): its
// other operand has the hero result's own type (dtype and shape: one value per output element),
// so the library can start its output from it (oneDNN's sum post-op, cuBLASLt's C with beta = 1,
// cuDNN's z).
bool isLibraryResidual(const Op& hero, const Op& add, const Value* x);

// Why the elementwise ops after a matmul or conv2d (`epilogue`: every op of the group downstream
// of `hero`, in program order; `inGroup` says which ops the group holds) are not an epilogue the
// libraries apply, or "" when they are: a bias add first (a bias read from a buffer, not computed
// in the group but for reshapes), then a residual add (isLibraryResidual; read from a buffer; after
// a conv2d only with a bias add before it, as cuDNN adds one), then an activation (relu or tanh-gelu after a matmul; relu
// after a conv2d's bias, and relu6 too after a channels-last conv2d's: oneDNN is the one library
// that runs those, and it clips), each optional, ending in the hero's own dtype (the library
// writes it);
// f64 takes none (cuBLASLt and cuDNN have no f64 epilogues as kiln calls them), but on the CPU
// (`target`), where no library takes f64 and the generated kernel computes it, any; integers any
// (no library computes them). Anything else would make the whole group a generated kernel, far
// slower than the library call followed by a loop kernel for the rest.
std::string libraryEpilogueProblem(const Op& hero, const std::vector<const Op*>& epilogue,
                                   const std::function<bool(const Op*)>& inGroup, PassTarget target = PassTarget::Any);

}  // namespace kiln::passes
