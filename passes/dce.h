// Dead-code elimination: drops ops whose results are never used.
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

// Erases every non-terminator op without used results, in nested regions too, to a fixed point.
PassResult eliminateDeadCode(Module& module, PassContext& context);

}  // namespace kiln::passes
