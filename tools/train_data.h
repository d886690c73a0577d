// `kiln train`'s seeded initialisation of parameters given without a file. (Its data streams through
// runtime/input_pipeline.h.)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/status.h"
#include "ir/tensor.h"

namespace kiln::cli {

// A parameter's starting value: rank >= 2 (matrices [in,out], conv filters [O,I,kh,kw]) Glorot
// uniform, U(-a, a) with a = sqrt(6 / (fan_in + fan_out)); rank 0 and 1 (biases) zeros. `index`
// (the parameter's position) makes each parameter's stream different for one seed.
Tensor initialParam(const TensorType& type, uint64_t seed, int index);

}  // namespace kiln::cli
