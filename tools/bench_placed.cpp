// benchPlaced: alternate runs of the placed and the single-device executable (the machine is
// noisy: the comparison is within one run), medians per stage, then busy time per device.
#include "tools/bench_placed.h"

#include <fmt/format.h>

#include <chrono>
#include <map>
#include <thread>

#include "runtime/executable.h"
#include "runtime/placed_executable.h"
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
  const std::vector<passes::Stage>& stages = (*placed)->partition().stages;
  std::vector<std::vector<double>> start(stages.size()), transfer(stages.size()), compute(stages.size());
  std::vector<std::vector<double>> busy(static_cast<size_t>(setup.devices));
  std::vector<double> wall, oneDevice;
  std::vector<int64_t> bytes(stages.size());
  for (int r = 0; r < setup.warmup + setup.reps; ++r) {
    PlacedRunStats stats;
    if (auto out = (*placed)->run(inputs, &stats); !out) {
      reportError(out.error());
      return kExitError;
    }
    auto began = std::chrono::steady_clock::now();
    if (auto out = (*one)->run(inputs); !out) {
      reportError(out.error());
      return kExitError;
    }
    double oneMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began).count();
    if (r < setup.warmup) continue;
    wall.push_back(stats.wallMs);
    oneDevice.push_back(oneMs);
    std::vector<double> deviceBusy(static_cast<size_t>(setup.devices));
    for (size_t s = 0; s < stages.size(); ++s) {
      const PlacedRunStats::StageTime& t = stats.stages[s];
      start[s].push_back(t.startMs);
      transfer[s].push_back(t.transferMs);
      compute[s].push_back(t.computeMs);
      bytes[s] = t.transferBytes;
      deviceBusy[static_cast<size_t>(t.device)] += t.transferMs + t.computeMs;
    }
    for (size_t d = 0; d < deviceBusy.size(); ++d) busy[d].push_back(deviceBusy[d]);
  }
  double step = median(wall), single = median(oneDevice);
  unsigned threads = std::max(1u, std::thread::hardware_concurrency() / static_cast<unsigned>(setup.devices));
  if (setup.json) {
    for (size_t s = 0; s < stages.size(); ++s)
      fmt::print("{{\"stage\":\"{}\",\"device\":{},\"start_ms\":{:.4f},\"transfer_ms\":{:.4f},\"transfer_bytes\":{},"
                 "\"compute_ms\":{:.4f}}}\n",
                 stages[s].function->name(), stages[s].device, median(start[s]), median(transfer[s]), bytes[s],
                 median(compute[s]));
    for (size_t d = 0; d < busy.size(); ++d)
      fmt::print("{{\"device\":{},\"busy_ms\":{:.4f},\"step_ms\":{:.4f}}}\n", d, median(busy[d]), step);
    fmt::print("{{\"step_ms\":{:.4f},\"one_device_ms\":{:.4f},\"devices\":{}}}\n", step, single, setup.devices);
    return kExitOk;
  }
  fmt::print("@{} on {} devices (cpu, {} thread{} each): {} stages\n", f.name(), setup.devices, threads,
             threads == 1 ? "" : "s", stages.size());
  fmt::print("{:<28} {:>6} {:>10} {:>12} {:>12} {:>12}\n", "stage", "device", "start ms", "transfer ms", "bytes in",
             "compute ms");
  for (size_t s = 0; s < stages.size(); ++s)
    fmt::print("{:<28} {:>6} {:>10.4f} {:>12.4f} {:>12} {:>12.4f}\n", stages[s].function->name(), stages[s].device,
               median(start[s]), median(transfer[s]), bytes[s], median(compute[s]));
  for (size_t d = 0; d < busy.size(); ++d) {
    double b = median(busy[d]);
    fmt::print("device {}: busy {:.4f} ms of the {:.4f} ms step ({:.0f}%)\n", d, b, step, step > 0 ? 100 * b / step : 0);
  }
  fmt::print("step {:.4f} ms on {} devices; {:.4f} ms on one device with all {} threads (same run, alternating)\n",
             step, setup.devices, single, std::max(1u, std::thread::hardware_concurrency()));
  fmt::print("median of {} runs after {} warm-up\n", setup.reps, setup.warmup);
  return kExitOk;
}

}  // namespace kiln::cli
