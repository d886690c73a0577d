// Host tensors are the public API's (include/kiln/tensor.h); the element conversions the
// interpreter and the backends share are here.
#pragma once

#include <cstdint>
#include <string>

#include "kiln/tensor.h"

namespace kiln {

// The range of an int dtype as doubles: [lo, hi] are exact and every double in it converts
// without overflow (hi of i64/u64 is the largest double below 2^63/2^64).
struct IntRange {
  double lo, hi;
};
IntRange intRange(DType t);
// Converts a double to an integer the way `cast` does: truncation toward zero, 0 for NaN,
// saturating at the type's range (C++ leaves out-of-range conversions undefined; kiln does not).
// For u64 the result is the bits of the unsigned value.
int64_t truncateToInt(double v, DType to);
// Wraps an integer into the range of a narrower int dtype (two's complement for signed types,
// modulo 2^bits, zero-extended, for unsigned ones), as `cast` between ints does.
int64_t wrapToInt(int64_t v, DType to);
// An int element (as getInt returns it) as a double or as decimal text: u64 reads its bits unsigned.
double intAsDouble(int64_t v, DType t);
std::string formatInt(int64_t v, DType t);

}  // namespace kiln
