// The conversions: plain loops for bf16 (its bits are f32's upper half), F16C's vcvtph2ps and
// vcvtps2ph for f16 where the CPU has them (every x86-64 CPU since 2012), kiln's scalar
// conversions elsewhere.
#include "runtime/narrow_floats.h"

#include <algorithm>
#include <cstdint>

#include "codegen/host_isa.h"
#include "kiln/types.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace kiln {

namespace {

// Shared on the OpenMP team from this many elements (the three conversions of a 512^3 bf16
// product took 0.6 ms on one thread of the 2-core sandbox), in chunks of whole vectors.
constexpr int64_t kShared = int64_t{1} << 16;
constexpr int64_t kChunk = int64_t{1} << 14;

// body(first, count) over [0, n) in chunks, on the team where n is large enough.
template <class Body>
void inChunks(size_t elements, const Body& body) {
  auto n = static_cast<int64_t>(elements);
  int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (n >= kShared)
  for (int64_t c = 0; c < chunks; ++c) body(c * kChunk, std::min(kChunk, n - c * kChunk));
}

#if defined(__x86_64__)
bool hasF16c() {
  static const bool f16c = codegen::hostHas("f16c") && codegen::hostHas("avx");  // under KILN_CPU_ISA
  return f16c;
}

__attribute__((target("avx,f16c"))) void widenHalfF16c(const uint16_t* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  for (; i < n; ++i) out[i] = _cvtsh_ss(in[i]);
}

__attribute__((target("avx,f16c"))) void roundToHalfF16c(const float* in, uint16_t* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i) out[i] = static_cast<uint16_t>(_cvtss_sh(in[i], _MM_FROUND_TO_NEAREST_INT));
}
#else
bool hasF16c() { return false; }
void widenHalfF16c(const uint16_t*, float*, int64_t) {}
void roundToHalfF16c(const float*, uint16_t*, int64_t) {}
#endif

}  // namespace

void widenBFloat16(const void* from, void* to, size_t elements) {
  const auto* in = static_cast<const uint16_t*>(from);
  auto* out = static_cast<uint32_t*>(to);
  inChunks(elements, [&](int64_t first, int64_t count) {
    for (int64_t i = first; i < first + count; ++i) out[i] = static_cast<uint32_t>(in[i]) << 16;
  });
}

void roundToBFloat16(const void* from, void* to, size_t elements) {
  const auto* in = static_cast<const float*>(from);
  auto* out = static_cast<uint16_t*>(to);
  inChunks(elements, [&](int64_t first, int64_t count) {
    for (int64_t i = first; i < first + count; ++i) out[i] = floatToBFloat16(in[i]);
  });
}

void widenHalf(const void* from, void* to, size_t elements) {
  const auto* in = static_cast<const uint16_t*>(from);
  auto* out = static_cast<float*>(to);
  bool f16c = hasF16c();
  inChunks(elements, [&](int64_t first, int64_t count) {
    if (f16c) return widenHalfF16c(in + first, out + first, count);
    for (int64_t i = first; i < first + count; ++i) out[i] = halfToFloat(in[i]);
  });
}

void roundToHalf(const void* from, void* to, size_t elements) {
  const auto* in = static_cast<const float*>(from);
  auto* out = static_cast<uint16_t*>(to);
  bool f16c = hasF16c();
  inChunks(elements, [&](int64_t first, int64_t count) {
    if (f16c) return roundToHalfF16c(in + first, out + first, count);
    for (int64_t i = first; i < first + count; ++i) out[i] = floatToHalf(in[i]);
  });
}

}  // namespace kiln
