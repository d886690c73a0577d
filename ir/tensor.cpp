// Element access and conversions for host tensors.
#include "ir/tensor.h"

#include <cmath>
#include <limits>

#include "ir/status.h"

namespace kiln {

int64_t wrapToInt(int64_t v, DType to) {
  switch (to) {
    case DType::I8: return static_cast<int8_t>(static_cast<uint8_t>(static_cast<uint64_t>(v) & 0xffu));
    case DType::I32: return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v) & 0xffffffffu));
    default: return v;
  }
}

int64_t truncateToInt(double v, DType to) {
  if (std::isnan(v)) return 0;
  double lo, hi;
  switch (to) {
    case DType::I8: lo = -128.0, hi = 127.0; break;
    case DType::I32: lo = -2147483648.0, hi = 2147483647.0; break;
    default: lo = -9223372036854775808.0, hi = 9223372036854774784.0; break;  // largest double below 2^63
  }
  if (v <= lo) return static_cast<int64_t>(lo);
  if (v >= hi) return static_cast<int64_t>(hi);
  return static_cast<int64_t>(std::trunc(v));
}

double Tensor::getDouble(int64_t i) const {
  switch (dtype()) {
    case DType::Bool: return load<uint8_t>(i) ? 1.0 : 0.0;
    case DType::I8: return load<int8_t>(i);
    case DType::I32: return load<int32_t>(i);
    case DType::I64: return static_cast<double>(load<int64_t>(i));
    case DType::F16: return halfToFloat(load<uint16_t>(i));
    case DType::BF16: return bfloat16ToFloat(load<uint16_t>(i));
    case DType::F32: return load<float>(i);
    case DType::F64: return load<double>(i);
  }
  internalError(__FILE__, __LINE__, "bad dtype");
}

int64_t Tensor::getInt(int64_t i) const {
  switch (dtype()) {
    case DType::Bool: return load<uint8_t>(i) ? 1 : 0;
    case DType::I8: return load<int8_t>(i);
    case DType::I32: return load<int32_t>(i);
    case DType::I64: return load<int64_t>(i);
    default: return truncateToInt(getDouble(i), DType::I64);
  }
}

void Tensor::setDouble(int64_t i, double v) {
  switch (dtype()) {
    case DType::Bool: store<uint8_t>(i, v != 0.0 ? 1 : 0); return;
    case DType::I8: store<int8_t>(i, static_cast<int8_t>(truncateToInt(v, DType::I8))); return;
    case DType::I32: store<int32_t>(i, static_cast<int32_t>(truncateToInt(v, DType::I32))); return;
    case DType::I64: store<int64_t>(i, truncateToInt(v, DType::I64)); return;
    case DType::F16: store<uint16_t>(i, floatToHalf(static_cast<float>(v))); return;
    case DType::BF16: store<uint16_t>(i, floatToBFloat16(static_cast<float>(v))); return;
    case DType::F32: store<float>(i, static_cast<float>(v)); return;
    case DType::F64: store<double>(i, v); return;
  }
}

void Tensor::setInt(int64_t i, int64_t v) {
  switch (dtype()) {
    case DType::Bool: store<uint8_t>(i, v != 0 ? 1 : 0); return;
    case DType::I8: store<int8_t>(i, static_cast<int8_t>(wrapToInt(v, DType::I8))); return;
    case DType::I32: store<int32_t>(i, static_cast<int32_t>(wrapToInt(v, DType::I32))); return;
    case DType::I64: store<int64_t>(i, v); return;
    default: setDouble(i, static_cast<double>(v)); return;
  }
}

Tensor Tensor::scalar(DType t, double v) {
  Tensor out(TensorType{t, {}});
  out.setDouble(0, v);
  return out;
}

}  // namespace kiln
