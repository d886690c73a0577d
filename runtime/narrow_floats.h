// Conversions between f32 and the 16-bit float types, for the CPU's library calls: oneDNN 2.6 has
// no f16 matmul at all and no bf16 one without AVX-512, so runtime/onednn.cpp runs those as f32
// matmuls between these conversions. Each runs on the OpenMP team where there are enough elements
// to share; f16 with the CPU's F16C instructions where it has them (oneDNN's own f16 reorder is its
// reference loop: 5 ms for 2^18 values on the 2-core sandbox).
#pragma once

#include <cstddef>

namespace kiln {

// `elements` values at `from` into `to`: bf16 or f16 to f32 exactly, f32 to bf16 or f16 rounded to
// nearest even (as kiln rounds: include/kiln/types.h).
void widenBFloat16(const void* from, void* to, size_t elements);
void roundToBFloat16(const void* from, void* to, size_t elements);
void widenHalf(const void* from, void* to, size_t elements);
void roundToHalf(const void* from, void* to, size_t elements);

}  // namespace kiln
