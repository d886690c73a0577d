// Assembling PTX with the CUDA toolkit's ptxas: the check that generated PTX is valid for an arch
// (no GPU needed), used by the tests and available to tools.
#pragma once

#include <string>

#include "ir/status.h"

namespace kiln::codegen {

// Runs `ptxas -arch=ARCH` on `ptx` in a fresh temporary directory (removed afterwards). Fails with
// ptxas's own diagnostics if it rejects the PTX, or if ptxas cannot be found or run (see
// findPtxas in cuda_toolkit.h).
Status assembleWithPtxas(const std::string& ptx, const std::string& arch);

}  // namespace kiln::codegen
