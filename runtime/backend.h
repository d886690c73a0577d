// Backends that run a function: the reference interpreter, the CPU backend (kernels compiled by
// LLVM and run through ORC's JIT on all cores) and the CUDA backend (PTX loaded by the driver,
// runtime/cuda/). `auto` picks the best one usable here (cuda > cpu > interp).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/ir.h"
#include "ir/tensor.h"
#include "kiln/backend.h"

namespace kiln {

class CompileProfile;

// Resolves `requested` to a backend that can run here: Auto becomes the best one available; a
// backend that is not built, or whose device is missing, is an error that says so and what to use.
Expected<Backend> resolveBackend(Backend requested);

// True when the CUDA driver kiln loaded is the GPU simulator (KILN_CUDA_DRIVER names
// libkiln_gpusim.so): its timings are the host's, never a GPU's.
bool runsOnGpuSimulator();

struct RunOptions {
  Backend backend = Backend::Auto;
  // A `while` that runs longer than this stops with an error instead of hanging.
  int64_t maxWhileIterations = 10'000'000;
  // Compiled backends: write every compilation stage here (see codegen::CompileOptions::dumpDir).
  std::string dumpDir;
  // Compiled backends: passes to skip (see codegen::CompileOptions::disabledPasses; "all" for none).
  std::vector<std::string> disabledPasses;
  // Compiled backends: codegen::CompileOptions::fastMath (approximate math, subnormals flushed).
  bool fastMath = false;
  // Compiled backends: each compile stage's time and peak memory land here (ir/compile_profile.h).
  CompileProfile* profile = nullptr;
  // Run the function placed across this many devices (runtime/placed_executable.h; the cpu
  // backend, and the interpreter, which checks the placement and runs it as one). 0: on one
  // device, where `device` attributes and transfers change nothing.
  int devices = 0;
  bool split = false;  // with devices: place a function without placement across them by compute
};

// Runs `function` on `inputs` (one per parameter, exact types) on the resolved backend.
Expected<std::vector<Tensor>> runFunction(const Function& function, const std::vector<Tensor>& inputs,
                                          const RunOptions& options = {});

}  // namespace kiln
