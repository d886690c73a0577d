// `kiln bench --backend cuda` on the GPU simulator (gpusim/): the simulator's exact counters for
// each kernel (bytes, sectors, shared-memory wavefronts, occupancy, instructions) in place of
// times, which a simulator cannot give: it interprets the PTX on the host and models no clock.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "codegen/kernel_report.h"
#include "ir/status.h"
#include "runtime/executable.h"
#include "runtime/gpu_perf_model.h"

namespace kiln::cli {

struct SimulatedBenchSetup {
  std::string caseName, function, device;
  int reps = 1;  // timed runs of the step (simulator wall clock)
  bool json = false;
  bool dataParallel = false;  // the step has all_reduce ops: the table shows how they overlapped
  GpuSpec gpu = h100Sxm();    // the GPU the counters are modelled for (--model)
};

// Runs the step once with the simulator's launch log cleared and reads its counters per kernel,
// then runs it `setup.reps` more times on the host's clock (the simulator's speed), and prints the
// table or the JSON lines. `step` runs the step once and waits for it. For the simulated driver only.
Status benchOnSimulator(const std::vector<codegen::KernelReport>& kernels, const SimulatedBenchSetup& setup,
                        const std::function<Status(ExecuteOptions)>& step);

}  // namespace kiln::cli
