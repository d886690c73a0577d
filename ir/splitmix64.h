// SplitMix64: a tiny portable random stream, the same on every platform and standard library
// (unlike std:: distributions): random test inputs, parameter initialisation, per-epoch shuffles.
#pragma once

#include <cstdint>

namespace kiln {

struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // [0, 1), with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

}  // namespace kiln
