// Formatting of run results for people (the .npy files under --out are for programs).
#include "tools/result_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace kiln::cli {

namespace {
std::string element(const Tensor& t, int64_t i) {
  if (t.dtype() == DType::Bool) return t.getBool(i) ? "true" : "false";
  if (isInt(t.dtype())) return formatInt(t.getInt(i), t.dtype());
  return fmt::format("{:.6g}", t.getDouble(i));
}

uint64_t fnv1a64(const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}
}  // namespace

std::string leadingValues(const Tensor& t, int64_t count) {
  int64_t n = t.numElements();
  std::string out = "[";
  for (int64_t i = 0; i < std::min(n, count); ++i) out += (i ? ", " : "") + element(t, i);
  if (n > count) out += ", ...";
  out += "]";
  if (n > count) out += fmt::format("  ({} of {})", count, n);
  return out;
}

std::string checksum(const Tensor& t) {
  double sum = 0, lo = INFINITY, hi = -INFINITY;
  for (int64_t i = 0; i < t.numElements(); ++i) {
    double v = t.getDouble(i);
    sum += v;
    lo = std::fmin(lo, v);
    hi = std::fmax(hi, v);
  }
  if (t.numElements() == 0) return fmt::format("empty  fnv1a64={:016x}", fnv1a64(t.data(), t.byteSize()));
  return fmt::format("sum={:.9g} min={:.6g} max={:.6g} fnv1a64={:016x}", sum, lo, hi, fnv1a64(t.data(), t.byteSize()));
}

}  // namespace kiln::cli
