// TensorProto -> Tensor: the dtype map and both storage forms (raw little-endian bytes, typed fields).
#include "frontend/onnx/onnx_tensor.h"

#include <algorithm>
#include <cstring>

namespace kiln::onnx_import {

namespace {
using TP = onnx::TensorProto;

bool hasTypedData(const TP& p) {
  return p.float_data_size() || p.int32_data_size() || p.int64_data_size() || p.double_data_size() ||
         p.uint64_data_size() || p.string_data_size();
}

// Copies `count` elements from a typed repeated field, converting each with `store`.
template <class Field, class Store>
Status copyTyped(const Field& field, int64_t count, const std::string& fieldName, const std::string& where, Store store) {
  if (field.size() != count)
    return Error(where + ": " + fieldName + " holds " + std::to_string(field.size()) + " values, the dims say " +
                 std::to_string(count));
  for (int64_t i = 0; i < count; ++i) store(i, field.Get(static_cast<int>(i)));
  return {};
}
}  // namespace

std::optional<DType> dtypeFromOnnx(int32_t elemType) {
  switch (elemType) {
    case TP::FLOAT: return DType::F32;
    case TP::INT8: return DType::I8;
    case TP::INT16: return DType::I16;
    case TP::INT32: return DType::I32;
    case TP::INT64: return DType::I64;
    case TP::UINT8: return DType::U8;
    case TP::UINT16: return DType::U16;
    case TP::UINT32: return DType::U32;
    case TP::UINT64: return DType::U64;
    case TP::BOOL: return DType::Bool;
    case TP::FLOAT16: return DType::F16;
    case TP::DOUBLE: return DType::F64;
    case TP::BFLOAT16: return DType::BF16;
    default: return std::nullopt;
  }
}

std::string onnxDTypeName(int32_t elemType) {
  if (!TP::DataType_IsValid(elemType)) return "unknown element type " + std::to_string(elemType);
  std::string name = TP::DataType_Name(static_cast<TP::DataType>(elemType));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

Error unsupportedDType(int32_t elemType, const std::string& where, std::vector<OnnxUnsupported>* unsupported) {
  std::string what = "dtype " + onnxDTypeName(elemType);
  if (unsupported) unsupported->push_back({what, {where}});
  return Error(where + ": kiln has no " + what + " yet (it has bool, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64)");
}

Expected<Tensor> tensorFromProto(const TP& p, const std::string& where, std::vector<OnnxUnsupported>* unsupported) {
  if (p.data_location() == TP::EXTERNAL || p.external_data_size())
    return Error(where + ": tensor data stored outside the model file (external data) is not supported");
  if (p.has_segment()) return Error(where + ": segmented tensors are not supported");
  auto dtype = dtypeFromOnnx(p.data_type());
  if (!dtype) return unsupportedDType(p.data_type(), where, unsupported);
  Shape shape;
  for (int64_t d : p.dims()) {
    if (d < 0) return Error(where + ": negative dimension " + std::to_string(d));
    shape.push_back(d);
  }
  if (!shapeWithinLimits(shape)) return Error(where + ": shape " + shapeStr(shape) + " is too large");
  TensorType type{*dtype, shape};
  int64_t n = type.numElements();
  // Sizes are checked against the data before anything is allocated: a file whose dims claim
  // more than it holds (or that is not a TensorProto at all) is an error, not an allocation.
  if (p.has_raw_data() && p.raw_data().size() != type.byteSize())
    return Error(where + ": raw_data holds " + std::to_string(p.raw_data().size()) + " bytes, " + type.str() + " needs " +
                 std::to_string(type.byteSize()));
  int64_t typed = std::max({p.float_data_size(), p.int32_data_size(), p.int64_data_size(), p.double_data_size(),
                            p.uint64_data_size(), p.string_data_size()});
  if (!p.has_raw_data() && n != 0 && typed != n)
    return Error(where + ": holds " + std::to_string(typed) + " values, " + type.str() + " needs " + std::to_string(n));
  if (p.has_raw_data()) {
    // ONNX stores raw data little-endian, as kiln's host tensors on the machines it supports. The
    // copy overwrites every byte, so the tensor is not zeroed first (a model's weights: BERT's
    // 440 MB took a pass of memset and its page faults before).
    Tensor t = Tensor::uninitialized(type);
    if (n) std::memcpy(t.data(), p.raw_data().data(), t.byteSize());
    return t;
  }
  Tensor t(type);
  if (n == 0) return t;
  if (!hasTypedData(p)) return Error(where + ": tensor of type " + t.type().str() + " has no data");
  Status s;
  switch (*dtype) {
    case DType::F32: s = copyTyped(p.float_data(), n, "float_data", where, [&](int64_t i, float v) { t.setDouble(i, v); }); break;
    case DType::F64: s = copyTyped(p.double_data(), n, "double_data", where, [&](int64_t i, double v) { t.setDouble(i, v); }); break;
    case DType::I64: s = copyTyped(p.int64_data(), n, "int64_data", where, [&](int64_t i, int64_t v) { t.setInt(i, v); }); break;
    case DType::U32:
    case DType::U64:
      s = copyTyped(p.uint64_data(), n, "uint64_data", where,
                    [&](int64_t i, uint64_t v) { t.setInt(i, static_cast<int64_t>(v)); });
      break;
    case DType::I8:
    case DType::I16:
    case DType::I32:
    case DType::U8:
    case DType::U16:
    case DType::Bool:
      s = copyTyped(p.int32_data(), n, "int32_data", where, [&](int64_t i, int32_t v) { t.setInt(i, v); });
      break;
    case DType::F16:
    case DType::BF16:
      // 16-bit floats travel as their bit patterns in int32_data.
      s = copyTyped(p.int32_data(), n, "int32_data", where, [&](int64_t i, int32_t v) {
        uint16_t bits = static_cast<uint16_t>(v);
        std::memcpy(static_cast<uint8_t*>(t.data()) + i * 2, &bits, 2);
      });
      break;
  }
  if (!s) return s.error();
  return t;
}

}  // namespace kiln::onnx_import
