// `kiln bench --devices N`: a function placed across devices, timed stage by stage: when each
// stage starts, how long its transfers in and its compute take, how busy each device is over the
// step, against the same function on one device (all cores) in the same run.
#pragma once

#include <vector>

#include "codegen/compile_options.h"
#include "ir/ir.h"
#include "ir/tensor.h"

namespace kiln::cli {

struct PlacedBenchSetup {
  int devices = 2;
  bool split = false;  // place the function across the devices by compute first
  int warmup = 5, reps = 50;
  bool json = false;
};

// Compiles `f` placed and unplaced, runs both alternately, prints the report; returns the exit code.
int benchPlaced(const Function& f, const std::vector<Tensor>& inputs, const codegen::CompileOptions& options,
                const PlacedBenchSetup& setup);

}  // namespace kiln::cli
