// Vectorization: rewrites each `map` into batched ops on its whole operands (like jax.vmap).
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

// Replaces every `map` whose body has a batching rule for each op (ir/op_table.h, BatchRule) by
// batched ops before it, inner maps first; a map that cannot be batched stays a loop, unchanged,
// with a remark saying which op blocks it. Ops of the body that do not depend on the mapped
// element are moved out of the loop as they are. Leaves dead ops for dce.
PassResult vectorizeMaps(Module& module, PassContext& context);

}  // namespace kiln::passes
