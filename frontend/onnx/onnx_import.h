// ONNX import: an ONNX model file (ModelProto) becomes a kiln Module, and ONNX TensorProto files
// become kiln Tensors. Built on libonnx-dev's generated protobuf classes; where kiln was configured
// without ONNX and protobuf, every call returns an error that says so (see onnxImportAvailable).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/ir.h"
#include "ir/tensor.h"

namespace kiln {

// False when kiln was built without libonnx-dev and protobuf (then every import fails, saying so).
bool onnxImportAvailable();

struct OnnxImportOptions {
  // Initializers become `constant` ops (the default) or trailing parameters of @main. One whose
  // value an op needs at compile time (a Reshape shape, a Slice start) is a constant either way.
  bool initializersAsParameters = false;
  // Values of graph inputs known at compile time, by ONNX name. Only the inputs whose value an op
  // needs at compile time (shapes, axes, repeats, ...) are taken from here and become constants;
  // the others stay parameters.
  std::map<std::string, Tensor> knownInputs;
  // The name of the function made from the graph.
  std::string functionName = "main";
};

// A successful import: the module, and the ONNX names of the entry's parameters and results in order
// (kiln value names are the ONNX names made legal, which may differ).
struct OnnxModel {
  std::unique_ptr<Module> module;
  Function* entry = nullptr;
  std::vector<std::string> parameterNames;
  std::vector<std::string> resultNames;
};

// What kiln cannot import yet: an op type (with the nodes that use it) or a dtype.
struct OnnxUnsupported {
  std::string what;                // "op Atan", "dtype uint8", "Pad mode 'reflect'"
  std::vector<std::string> nodes;  // "node 3 'atan_1'"
};

// Imports the model in `bytes` (`source` names it in errors). When the model fails only because
// it uses what kiln lacks, the error lists all of it at once and `unsupported` (if given) receives
// the same list; a malformed model is a plain error.
Expected<OnnxModel> importOnnxModel(std::string_view bytes, const std::string& source, const OnnxImportOptions& options = {},
                                    std::vector<OnnxUnsupported>* unsupported = nullptr);
Expected<OnnxModel> importOnnxFile(const std::string& path, const OnnxImportOptions& options = {},
                                   std::vector<OnnxUnsupported>* unsupported = nullptr);

// The graph inputs of the model at `path` that are not initializers, in order: what ONNX's test
// runner binds test data to by position when a tensor carries no name.
Expected<std::vector<std::string>> onnxGraphInputNames(const std::string& path);

// A TensorProto file (the input_*.pb / output_*.pb of the ONNX backend tests): its name and value.
struct OnnxNamedTensor {
  std::string name;
  Tensor value;
};
Expected<OnnxNamedTensor> readOnnxTensorFile(const std::string& path, std::vector<OnnxUnsupported>* unsupported = nullptr);

// True for a path that names an ONNX model (ends in .onnx).
bool isOnnxPath(std::string_view path);

}  // namespace kiln
