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

OnnxTestOutcome runOnnxTestCase(const std::string& dir, Backend backend, const OnnxTolerance& tolerance = {});

}  // namespace kiln::cli
