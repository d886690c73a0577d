// The importer's API where kiln was configured without libonnx-dev and protobuf: every call is an
// error that says how to get ONNX support (frontend/onnx/CMakeLists.txt picks this file then).
#include "frontend/onnx/onnx_import.h"

namespace kiln {

namespace {
Error notBuilt() {
  return Error("this kiln was built without ONNX support: install libonnx-dev, libprotobuf-dev and protobuf-compiler "
               "(.ci/setup.sh does) and configure the build again");
}
}  // namespace

bool onnxImportAvailable() { return false; }
bool isOnnxPath(std::string_view path) { return path.size() >= 5 && path.substr(path.size() - 5) == ".onnx"; }

Expected<OnnxModel> importOnnxModel(std::string_view, const std::string&, const OnnxImportOptions&, std::vector<OnnxUnsupported>*) {
  return notBuilt();
}
Expected<OnnxModel> importOnnxFile(const std::string&, const OnnxImportOptions&, std::vector<OnnxUnsupported>*) {
  return notBuilt();
}
Expected<std::vector<std::string>> onnxGraphInputNames(const std::string&) { return notBuilt(); }
Expected<OnnxNamedTensor> readOnnxTensorFile(const std::string&, std::vector<OnnxUnsupported>*) { return notBuilt(); }

}  // namespace kiln
