// canonicalize: constant folding and exact algebraic identities (x * 1, transpose of transpose, ...).
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

// Folds ops whose operands are all constants (small results only, never one that would raise a
// run-time error) and rewrites bit-exact identities, to a fixed point. Replaced ops are erased;
// operands they leave unused (the `1` of `x * 1`) stay for dce.
PassResult canonicalize(Module& module, PassContext& context);

}  // namespace kiln::passes
