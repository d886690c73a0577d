// Common-subexpression elimination: merges identical ops.
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

// Replaces an op by an earlier identical one (same kind, operands, attributes and result types)
// that is visible from it: earlier in its block, or earlier in an enclosing block.
PassResult eliminateCommonSubexpressions(Module& module, PassContext& context);

}  // namespace kiln::passes
