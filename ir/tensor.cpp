// Element access and conversions for host tensors.
#include "ir/tensor.h"

#include <cmath>
#include <limits>

#include "ir/status.h"

namespace kiln {

int64_t wrapToInt(int64_t v, DType to) {
  uint64_t bits = static_cast<uint64_t>(v);
  switch (to) {
    case DType::I8: return static_cast<int8_t>(static_cast<uint8_t>(bits));
    case DType::I16: return static_cast<int16_t>(static_cast<uint16_t>(bits));
    case DType::I32: return static_cast<int32_t>(static_cast<uint32_t>(bits));
    case DType::U8: return static_cast<uint8_t>(bits);
    case DType::U16: return static_cast<uint16_t>(bits);
    case DType::U32: return static_cast<uint32_t>(bits);
    default: return v;  // i64, u64: the bits as they are
  }
}

IntRange intRange(DType t) {
  switch (t) {
    case DType::I8: return {-128.0, 127.0};
    case DType::I16: return {-32768.0, 32767.0};
    case DType::I32: return {-2147483648.0, 2147483647.0};
    case DType::U8: return {0.0, 255.0};
    case DType::U16: return {0.0, 65535.0};
    case DType::U32: return {0.0, 4294967295.0};
    case DType::U64: return {0.0, 18446744073709549568.0};  // largest double below 2^64
    default: return {-9223372036854775808.0, 9223372036854774784.0};  // largest double below 2^63
  }
}

int64_t truncateToInt(double v, DType to) {
  if (std::isnan(v)) return 0;
  IntRange r = intRange(to);
  double t = v <= r.lo ? r.lo : v >= r.hi ? r.hi : std::trunc(v);
  if (to == DType::U64) return static_cast<int64_t>(static_cast<uint64_t>(t));  // the bits of values >= 2^63
  return static_cast<int64_t>(t);
}

double intAsDouble(int64_t v, DType t) {
  return t == DType::U64 ? static_cast<double>(static_cast<uint64_t>(v)) : static_cast<double>(v);
}

std::string formatInt(int64_t v, DType t) {
  return t == DType::U64 ? std::to_string(static_cast<uint64_t>(v)) : std::to_string(v);
}

double Tensor::getDouble(int64_t i) const {
  switch (dtype()) {
    case DType::F16: return halfToFloat(load<uint16_t>(i));
    case DType::BF16: return bfloat16ToFloat(load<uint16_t>(i));
    case DType::F32: return load<float>(i);
    case DType::F64: return load<double>(i);
    default: return intAsDouble(getInt(i), dtype());
  }
}

int64_t Tensor::getInt(int64_t i) const {
  switch (dtype()) {
    case DType::Bool: return load<uint8_t>(i) ? 1 : 0;
    case DType::I8: return load<int8_t>(i);
    case DType::I16: return load<int16_t>(i);
    case DType::I32: return load<int32_t>(i);
    case DType::I64: return load<int64_t>(i);
    case DType::U8: return load<uint8_t>(i);
    case DType::U16: return load<uint16_t>(i);
    case DType::U32: return load<uint32_t>(i);
    case DType::U64: return static_cast<int64_t>(load<uint64_t>(i));
    default: return truncateToInt(getDouble(i), DType::I64);
  }
}

void Tensor::setDouble(int64_t i, double v) {
  switch (dtype()) {
    case DType::Bool: store<uint8_t>(i, v != 0.0 ? 1 : 0); return;
    case DType::F16: store<uint16_t>(i, floatToHalf(static_cast<float>(v))); return;
    case DType::BF16: store<uint16_t>(i, floatToBFloat16(static_cast<float>(v))); return;
    case DType::F32: store<float>(i, static_cast<float>(v)); return;
    case DType::F64: store<double>(i, v); return;
    default: setInt(i, truncateToInt(v, dtype())); return;
  }
}

void Tensor::setInt(int64_t i, int64_t v) {
  switch (dtype()) {
    case DType::Bool: store<uint8_t>(i, v != 0 ? 1 : 0); return;
    case DType::I8: store<int8_t>(i, static_cast<int8_t>(wrapToInt(v, DType::I8))); return;
    case DType::I16: store<int16_t>(i, static_cast<int16_t>(wrapToInt(v, DType::I16))); return;
    case DType::I32: store<int32_t>(i, static_cast<int32_t>(wrapToInt(v, DType::I32))); return;
    case DType::I64: store<int64_t>(i, v); return;
    case DType::U8: store<uint8_t>(i, static_cast<uint8_t>(v)); return;
    case DType::U16: store<uint16_t>(i, static_cast<uint16_t>(v)); return;
    case DType::U32: store<uint32_t>(i, static_cast<uint32_t>(v)); return;
    case DType::U64: store<uint64_t>(i, static_cast<uint64_t>(v)); return;
    default: setDouble(i, intAsDouble(v, DType::I64)); return;
  }
}

Tensor Tensor::scalar(DType t, double v) {
  Tensor out(TensorType{t, {}});
  out.setDouble(0, v);
  return out;
}

Tensor Tensor::copyOf(const TensorView& view) {
  Tensor out = uninitialized(view.type);
  if (out.byteSize() > 0) std::memcpy(out.data(), view.data, out.byteSize());
  return out;
}

}  // namespace kiln
