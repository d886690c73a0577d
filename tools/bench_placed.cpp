// benchPlaced: alternate runs of the placed (and, with micro-batches, pipelined) function and
// the single-device executable (the machine is noisy: the comparison is within one run), medians
// per stage, then busy time per device and the bubble against the schedule's model.
#include "tools/bench_placed.h"

#include <fmt/format.h>

#include <chrono>

#include "runtime/backend.h"
#include "runtime/executable.h"
#include "runtime/placed_executable.h"
#include "runtime/thread_pool.h"
#include "tools/bench_report.h"
#include "tools/cli.h"

namespace kiln::cli {

int benchPlaced(const Function& f, const std::vector<Tensor>& inputs, const codegen::CompileOptions& options,
                const PlacedBenchSetup& setup) {
  auto placed = PlacedExecutable::compile(f, setup.devices, options, setup.split);
  if (!placed) {
    reportError(placed.error());
    return kExitError;
  }
  auto one = Executable::compile(f, options);
  if (!one) {
    reportError(one.error());
    return kExitError;
  }
  // M calls of the function on the same inputs, independent of each other: a forward pass's
  // micro-batches through the stages.
  std::vector<ChainCall> calls(static_cast<size_t>(setup.microBatches), ChainCall{placed->get(), {}});
  for (ChainCall& call : calls)
    for (int i = 0; i < static_cast<int>(inputs.size()); ++i) call.inputs.push_back({-1, i});
  const std::vector<passes::Stage>& stages = (*placed)->partition().stages;
  std::vector<std::vector<double>> start(stages.size()), transfer(stages.size()), compute(stages.size());
  std::vector<std::vector<double>> busy(static_cast<size_t>(setup.devices));
  std::vector<double> wall, oneDevice, bubble;
  std::vector<int64_t> bytes(stages.size());
  for (int r = 0; r < setup.warmup + setup.reps; ++r) {
    ChainStats stats;
    if (auto out = runChain(calls, inputs, setup.schedule, &stats); !out) {
      reportError(out.error());
      return kExitError;
    }
    auto began = std::chrono::steady_clock::now();
    for (int m = 0; m < setup.microBatches; ++m)
      if (auto out = (*one)->run(inputs); !out) {
        reportError(out.error());
        return kExitError;
      }
    double oneMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began).count();
    if (r < setup.warmup) continue;
    wall.push_back(stats.wallMs);
    oneDevice.push_back(oneMs);
    bubble.push_back(stats.bubble());
    for (const StageRun& t : stats.runs) {
      if (t.call == 0) start[static_cast<size_t>(t.stage)].push_back(t.startMs);
      transfer[static_cast<size_t>(t.stage)].push_back(t.transferMs);
      compute[static_cast<size_t>(t.stage)].push_back(t.computeMs);
      bytes[static_cast<size_t>(t.stage)] = t.transferBytes;
    }
    for (size_t d = 0; d < busy.size(); ++d) busy[d].push_back(stats.busyMs[d]);
  }
  double step = median(wall), single = median(oneDevice), idle = median(bubble);
  double model = fillDrainBubble(setup.devices, setup.microBatches);
  unsigned threads = std::max(1u, ThreadPool::defaultSize() / static_cast<unsigned>(setup.devices));
  if (setup.json) {
    for (size_t s = 0; s < stages.size(); ++s)
      fmt::print("{{\"stage\":\"{}\",\"device\":{},\"start_ms\":{:.4f},\"transfer_ms\":{:.4f},\"transfer_bytes\":{},"
                 "\"compute_ms\":{:.4f}}}\n",
                 stages[s].function->name(), stages[s].device, median(start[s]), median(transfer[s]), bytes[s],
                 median(compute[s]));
    for (size_t d = 0; d < busy.size(); ++d)
      fmt::print("{{\"device\":{},\"busy_ms\":{:.4f},\"step_ms\":{:.4f}}}\n", d, median(busy[d]), step);
    fmt::print("{{\"step_ms\":{:.4f},\"one_device_ms\":{:.4f},\"devices\":{},\"micro_batches\":{},\"schedule\":\"{}\","
               "\"bubble\":{:.4f},\"bubble_model\":{:.4f}}}\n",
               step, single, setup.devices, setup.microBatches, pipelineScheduleName(setup.schedule), idle, model);
    return kExitOk;
  }
  bool cuda = options.target == codegen::Target::Cuda;
  std::string each = cuda ? "cuda, a GPU each" : fmt::format("cpu, {} thread{} each", threads, threads == 1 ? "" : "s");
  fmt::print("@{} on {} devices ({}): {} stages, {} micro-batch{} ({})\n", f.name(), setup.devices, each, stages.size(),
             setup.microBatches, setup.microBatches == 1 ? "" : "es", pipelineScheduleName(setup.schedule));
  if (cuda && runsOnGpuSimulator())
    fmt::print("note: on the GPU simulator every time below is the host's time to simulate, not a GPU's\n");
  fmt::print("{:<28} {:>6} {:>10} {:>12} {:>12} {:>12}\n", "stage (per micro-batch)", "device", "start ms", "transfer ms",
             "bytes in", "compute ms");
  for (size_t s = 0; s < stages.size(); ++s)
    fmt::print("{:<28} {:>6} {:>10.4f} {:>12.4f} {:>12} {:>12.4f}\n", stages[s].function->name(), stages[s].device,
               median(start[s]), median(transfer[s]), bytes[s], median(compute[s]));
  for (size_t d = 0; d < busy.size(); ++d) {
    double b = median(busy[d]);
    fmt::print("device {}: busy {:.4f} ms of the {:.4f} ms step ({:.0f}%)\n", d, b, step, step > 0 ? 100 * b / step : 0);
  }
  fmt::print("bubble {:.1f}% of the devices' time; fill-drain model (N-1)/(M+N-1) = {:.1f}% for N = {}, M = {}\n",
             100 * idle, 100 * model, setup.devices, setup.microBatches);
  fmt::print("step {:.4f} ms on {} devices; {:.4f} ms for the same {} run{} one after another on one device{} (same run, "
             "alternating)\n",
             step, setup.devices, single, setup.microBatches, setup.microBatches == 1 ? "" : "s",
             cuda ? "" : fmt::format(" with all {} threads", ThreadPool::defaultSize()));
  fmt::print("median of {} runs after {} warm-up\n", setup.reps, setup.warmup);
  return kExitOk;
}

}  // namespace kiln::cli
