// ONNX element types and TensorProtos as kiln dtypes and Tensors. Internal to frontend/onnx.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "frontend/onnx/onnx_import.h"
#include "frontend/onnx/onnx_proto.h"

namespace kiln::onnx_import {

// The kiln dtype of an ONNX TensorProto.DataType; nullopt for those kiln lacks (uint8, string, ...).
std::optional<DType> dtypeFromOnnx(int32_t elemType);
// ONNX's lower-case name of an element type ("uint8", "float16"), for messages.
std::string onnxDTypeName(int32_t elemType);
// The error for an ONNX dtype kiln lacks, recorded in `unsupported` when given.
Error unsupportedDType(int32_t elemType, const std::string& where, std::vector<OnnxUnsupported>* unsupported);

// A TensorProto's value (raw_data or the typed fields). `where` names it in errors.
Expected<Tensor> tensorFromProto(const onnx::TensorProto& proto, const std::string& where,
                                 std::vector<OnnxUnsupported>* unsupported = nullptr);

}  // namespace kiln::onnx_import
