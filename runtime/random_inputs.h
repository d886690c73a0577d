// Deterministic pseudo-random inputs, for running a graph before real data exists.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/ir.h"
#include "ir/tensor.h"

namespace kiln {

// A tensor of the given type from `seed`: floats uniform in [-1, 1), integers uniform in
// [0, intBound), bools 0 or 1. The same seed gives the same bytes on every machine.
Tensor randomTensor(const TensorType& type, uint64_t seed, int64_t intBound = 10);

// An exclusive upper bound for random values of an integer parameter that keeps the graph valid:
// the axis size where it indexes a gather, the class count where it labels a cross entropy,
// else 10.
int64_t integerInputBound(const Value& param);

// One random tensor per parameter of `function`; parameter i uses seed mix(seed, i).
std::vector<Tensor> randomInputs(const Function& function, uint64_t seed);

}  // namespace kiln
