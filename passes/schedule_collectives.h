// Collective scheduling: every all_reduce moves, with the ops it needs, to right after the last of
// them, so that a gradient bucket's reduction starts while the rest of the backward pass is still
// being computed (the overlap PyTorch DDP and Horovod get from their bucket hooks).
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

// In every block (regions too), in program order: each all_reduce and the ops before it that it
// depends on (through operands, or values their regions read from outside) move, keeping their
// order, ahead of the other ops since the previous all_reduce; those other ops (its consumers, the
// rest of the backward pass) follow in their own order. Then the ops after the last all_reduce
// (the optimizer update) are ordered by the latest reduction each waits for, so the first bucket's
// update runs while later buckets are still being reduced. Any topological order computes the same
// values, so results do not change; only when each reduction starts and is waited for does.
PassResult scheduleCollectives(Module& module, PassContext& context);

}  // namespace kiln::passes
