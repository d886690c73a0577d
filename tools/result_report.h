// How `kiln run` shows a tensor: its type, its first values and checksums to compare runs by.
#pragma once

#include <string>

#include "ir/tensor.h"

namespace kiln::cli {

// "[0.1023, -0.5, ...]" with at most `count` values, %.6g for floats.
std::string leadingValues(const Tensor& t, int64_t count = 8);
// "sum=... min=... max=... fnv1a64=..." : the sum to compare backends approximately, the hash of
// the raw bytes to compare runs exactly.
std::string checksum(const Tensor& t);

}  // namespace kiln::cli
