// Kernels that differ only in scalar constants share one compiled kernel: a network whose blocks
// are the same but for a constant (a per-layer epsilon, a clip value, a residual scale) would
// otherwise plan one distinct kernel per block, each compiled by LLVM on its own.
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

// Groups the fusion ops of each block by their body with the values of one-element constants left
// out (ops, attributes, types and the pattern of inputs read). Within a group of two or more, each
// such constant whose value differs between members moves out of every member's body and becomes
// constant data (`constant ... {data = true}`): a buffer the runtime makes once and the kernel
// reads as an input. The members' bodies are then equal, and kernel dedup compiles them once.
// A constant all members agree on stays an immediate, as do constants in library fusions (their
// epilogues are matched by value).
PassResult shareKernels(Module& module, PassContext& context);

}  // namespace kiln::passes
