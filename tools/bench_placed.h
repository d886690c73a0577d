// `kiln bench --devices N [--micro-batches M]`: a function placed across devices, timed stage by
// stage: when each stage starts, how long its transfers in and its compute take, how busy each
// device is over the step and the bubble (against the fill-drain model with M micro-batches, M
// calls pipelined through the stages), against the same calls on one device (all cores) in the
// same run.
#pragma once

#include <vector>

#include "codegen/compile_options.h"
#include "ir/ir.h"
#include "ir/tensor.h"
#include "runtime/stage_chain.h"

namespace kiln::cli {

struct PlacedBenchSetup {
  int devices = 2;
  bool split = false;  // place the function across the devices by compute first
  int microBatches = 1;  // calls pipelined through the stages
  PipelineSchedule schedule = PipelineSchedule::FillDrain;
  int warmup = 5, reps = 50;
  bool json = false;
};

// Compiles `f` placed and unplaced, runs both alternately, prints the report; returns the exit code.
int benchPlaced(const Function& f, const std::vector<Tensor>& inputs, const codegen::CompileOptions& options,
                const PlacedBenchSetup& setup);

}  // namespace kiln::cli
