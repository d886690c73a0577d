// One ONNX backend node test (a folder with model.onnx and test_data_set_*/input_*.pb, output_*.pb):
// import, run on a backend, compare with the expected outputs as ONNX's own runner does.
#pragma once

#include <string>

#include "runtime/backend.h"

namespace kiln::cli {

struct OnnxTestOutcome {
  enum Kind { Pass, Fail, Unsupported } kind = Fail;
  std::string detail;  // the first mismatch or error (Fail), what kiln lacks (Unsupported)
};

// ONNX's backend-test tolerances: |got - want| <= atol + rtol |want|.
struct OnnxTolerance {
  double rtol = 1e-3;
  double atol = 1e-7;
};

// A test folder as ONNX's loader (onnx/backend/test/loader) reads it. A folder with model.onnx is
// a node test: the model and its test_data_set_* lie in it, compared with the default tolerances.
// A folder with only a data.json describes a downloadable model test ({"model_name", "url",
// "rtol", "atol"}): its tolerances come from there, and the model and data sets from where ONNX's
// runner unpacks the download, $ONNX_MODELS/<model_name>, else $ONNX_HOME/models/<model_name>
// (ONNX_HOME defaults to ~/.onnx).
struct OnnxTestFolder {
  std::string modelDir;  // holds model.onnx and test_data_set_*
  OnnxTolerance tolerance;
  std::string url;  // where a downloadable model comes from ("" for node tests)
};

// True for a folder that is a test (model.onnx or data.json in it).
bool isOnnxTestFolder(const std::string& dir);
Expected<OnnxTestFolder> locateOnnxTest(const std::string& dir);

OnnxTestOutcome runOnnxTestCase(const std::string& dir, Backend backend);

}  // namespace kiln::cli
