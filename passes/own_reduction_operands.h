// own-reduction-operands: a reduction over leading or middle axes recomputes an
// elementwise operand that elementwise ops share with it. A softmax down axis 0 is
// e = exp(x - max), sum(e), e / sum: fusion puts each op in one kernel, so e, read by both the
// column sum and the division, was stored and read back twice (4 reads and 2 writes of x's size,
// where reading x three times and writing once suffices). With its own copy of e the sum reads x,
// and the division, e's one user left, computes e itself. Rows (reductions over trailing dims)
// need none of this: a row kernel computes what its reductions and their consumers share once.
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

// For each reduce_sum/mean/max/min/prod over axes that are not the trailing dims, whose operand's
// elementwise producers (reshapes and broadcasts between them too, at most 16 ops) are also read
// outside that chain, and only by elementwise ops: the reduction reads a copy of the chain; what
// the copy leaves unused is erased. On the CPU a chain with a transcendental op (isExpensive) is
// copied only where what it shares is 8 MiB or more (below, the caches hold it: computing it twice
// costs more); on the GPU (PassContext::target) always.
PassResult ownReductionOperands(Module& module, PassContext& context);

}  // namespace kiln::passes
