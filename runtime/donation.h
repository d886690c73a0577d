// Donated inputs: a caller that will not use an input again (a parameter being updated, an
// optimizer's state) lets a result be written into its buffer, so a training step updates its
// parameters in place instead of allocating new ones (jax.jit's donate_argnums, XLA's
// input-output aliasing).
#pragma once

#include <vector>

#include "codegen/kernel_plan.h"
#include "ir/ir.h"

namespace kiln {

// For each result of `function`, the index of the donated parameter whose buffer it may be
// computed into, or -1. A result gets a donated parameter p of its own type only when that is
// safe without copies:
//  - the result is computed by a top-level loop kernel of `plan` (not a row kernel, a library
//    call or a map/while), and no later step reads p;
//  - inside that kernel every op that depends on p is elementwise with p's shape, so element j
//    of every output is computed from element j of p alone, and each work item loads all it
//    needs before it stores (codegen's loop emitter does);
//  - p is not itself returned, and each parameter goes to at most one result.
std::vector<int> donatedResultBuffers(const Function& function, const codegen::BlockPlan& plan,
                                      const std::vector<bool>& donated);

}  // namespace kiln
