// How much arithmetic an op does, for reports (kiln bench's TFLOP/s) and for balancing a model's
// ops across devices.
#pragma once

#include "ir/ir.h"

namespace kiln {

// Floating-point operations of an op's dense math: 2 per multiply-add of a matmul, a conv2d or
// either of its gradients; 0 for every other op (their cost is the memory they move).
double denseFlops(const Op& op);

}  // namespace kiln
