// decompose: composite ops (softmax, layer_norm, gelu, ...) rewritten into primitives fusion can see through.
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

// Rewrites softmax, log_softmax, layer_norm, batch_norm, gelu, silu and softmax_cross_entropy into
// reductions and elementwise ops (f16/bf16 ones computed in f32 and cast back), keeping each
// composite's source location (softmax_cross_entropy's label check becomes a check_range).
PassResult decompose(Module& module, PassContext& context);

}  // namespace kiln::passes
