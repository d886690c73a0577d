// Comparing a backend's results with the reference's, with tolerances per dtype: the runtime
// tests' differential check.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>

#include "ir/tensor.h"

namespace kiln {

// |got - want| <= atol + rtol * |want| per element. Decomposition and reordering change f32
// rounding by about an ulp per op, hence f32's 1e-5; ints and bools must be exact. atol is scaled
// by the largest |want| (at least 1): a long f32 dot product's rounding error follows the size of
// its terms, not of a result that cancels to near zero (oneDNN's matmuls on the CPU accumulate
// in f32: 1e-5 of the scale, as the codegen tests' accumulateTolerance).
inline std::string compare(const Tensor& want, const Tensor& got) {
  if (want.type() != got.type()) return "type " + got.type().str() + ", expected " + want.type().str();
  if (!isFloat(want.dtype())) return want == got ? "" : "integer results differ";
  double rtol = 1e-5, atol = 1e-5;
  if (want.dtype() == DType::F64) rtol = 1e-12, atol = 1e-14;
  if (want.dtype() == DType::F16 || want.dtype() == DType::BF16) rtol = 4e-3, atol = 1e-3;
  double scale = 1;
  for (int64_t i = 0; i < want.numElements(); ++i)
    if (std::isfinite(want.getDouble(i))) scale = std::max(scale, std::fabs(want.getDouble(i)));
  for (int64_t i = 0; i < want.numElements(); ++i) {
    double w = want.getDouble(i), g = got.getDouble(i);
    if (std::isnan(w) && std::isnan(g)) continue;
    if (std::isinf(w) && w == g) continue;
    if (std::fabs(g - w) <= atol * scale + rtol * std::fabs(w)) continue;
    return "element " + std::to_string(i) + ": " + std::to_string(g) + ", expected " + std::to_string(w);
  }
  return "";
}

}  // namespace kiln
