// Operation fusion: groups ops into `fusion` ops, each of which codegen lowers to one kernel.
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

// Walks each block from its last op to its first; every op not yet in a group starts one, which
// then takes in its producers while passes/fusion_rules.h judges the result a good kernel:
//  - elementwise chains and DAGs with broadcasts, reshapes and transposes (loop fusion),
//  - reductions over trailing dims with their producers and consumers (softmax, layer norm: row),
//  - one other reduction with its producers and an elementwise epilogue,
//  - a matmul, convolution or pooling op with its elementwise epilogue (bias, activation),
//  - producers also used outside the group stay in it as extra outputs (multi-output fusion),
//    as long as no cycle between kernels results.
// Constants and iota are copied into every group that reads them. Independent loop groups of
// one block that only read the function's inputs (optimizer updates of several parameters) are
// merged into one kernel (horizontal fusion). Each producer left out gets a remark saying why.
PassResult fuseOps(Module& module, PassContext& context);

}  // namespace kiln::passes
