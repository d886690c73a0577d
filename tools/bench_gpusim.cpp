// kiln bench on the GPU simulator: the counters it records per launch, per kernel, as a table or
// JSON lines marked "simulated": true, and the simulator's own speed on the host's clock.
#include "tools/bench_gpusim.h"

#if KILN_HAVE_CUDA
#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <map>

#include "runtime/cuda/driver.h"
#include "runtime/gpu_perf_model.h"
#include "tools/bench_report.h"

namespace kiln::cli {

namespace {

// What the simulator counted for one kernel, summed over its launches in one step (a kernel in a
// map or while body launches once per iteration).
struct SimulatedCounters {
  uint64_t launches = 0;
  uint64_t blocks = 0, threadsPerBlock = 0;  // of one launch (the last)
  uint32_t registersPerThread = 0, sharedBytesPerBlock = 0, blocksPerSm = 0;
  uint64_t warpInstructions = 0, threadInstructions = 0;
  uint64_t loadRequests = 0, loadSectors = 0, loadBytes = 0;
  uint64_t storeRequests = 0, storeSectors = 0, storeBytes = 0;
  uint64_t atomicRequests = 0, sharedRequests = 0, sharedWavefronts = 0;
  // Summed over launches; averaged() divides them by `launches`.
  double theoreticalOccupancy = 0, achievedOccupancy = 0, smCoverage = 0;

  void add(const SimulatedCounters& other);
  // Bytes the lanes asked for / (32 x sectors touched), loads and stores together: 1 when coalesced.
  double sectorEfficiency() const;
  double averaged(double sum) const { return launches ? sum / static_cast<double>(launches) : 0; }
};

void SimulatedCounters::add(const SimulatedCounters& o) {
  launches += o.launches;
  blocks = o.blocks;
  threadsPerBlock = o.threadsPerBlock;
  registersPerThread = o.registersPerThread;
  sharedBytesPerBlock = o.sharedBytesPerBlock;
  blocksPerSm = o.blocksPerSm;
  warpInstructions += o.warpInstructions;
  threadInstructions += o.threadInstructions;
  loadRequests += o.loadRequests;
  loadSectors += o.loadSectors;
  loadBytes += o.loadBytes;
  storeRequests += o.storeRequests;
  storeSectors += o.storeSectors;
  storeBytes += o.storeBytes;
  atomicRequests += o.atomicRequests;
  sharedRequests += o.sharedRequests;
  sharedWavefronts += o.sharedWavefronts;
  theoreticalOccupancy += o.theoreticalOccupancy;
  achievedOccupancy += o.achievedOccupancy;
  smCoverage += o.smCoverage;
}

double SimulatedCounters::sectorEfficiency() const {
  uint64_t sectors = loadSectors + storeSectors;
  return sectors ? static_cast<double>(loadBytes + storeBytes) / (32.0 * static_cast<double>(sectors)) : 1.0;
}

SimulatedCounters countersOf(const cuda::SimulatedKernelStats& s) {
  SimulatedCounters c;
  c.launches = 1;
  c.blocks = uint64_t{s.grid[0]} * s.grid[1] * s.grid[2];
  c.threadsPerBlock = uint64_t{s.block[0]} * s.block[1] * s.block[2];
  c.registersPerThread = s.registers_per_thread;
  c.sharedBytesPerBlock = s.static_shared_bytes + s.dynamic_shared_bytes;
  c.blocksPerSm = s.blocks_per_sm;
  c.warpInstructions = s.warp_instructions;
  c.threadInstructions = s.thread_instructions;
  c.loadRequests = s.global_load_requests;
  c.loadSectors = s.global_load_sectors;
  c.loadBytes = s.global_load_bytes;
  c.storeRequests = s.global_store_requests;
  c.storeSectors = s.global_store_sectors;
  c.storeBytes = s.global_store_bytes;
  c.atomicRequests = s.atomic_requests;
  c.sharedRequests = s.shared_requests;
  c.sharedWavefronts = s.shared_wavefronts;
  c.theoreticalOccupancy = s.theoretical_occupancy;
  c.achievedOccupancy = s.achieved_occupancy;
  c.smCoverage = s.sm_coverage;
  return c;
}

// Clears the simulator's launch log, runs the step once and sums the logged launches by kernel name;
// `schedule` gets what the host queued, in order (ExecuteOptions::schedule).
Expected<std::map<std::string, SimulatedCounters>> countLaunches(const std::function<Status(ExecuteOptions)>& step,
                                                                 std::vector<std::string>& schedule) {
  const cuda::DriverApi& api = cuda::api();
  if (!api.gpusimKernelStatsCount || !api.gpusimKernelStatsGet || !api.gpusimKernelStatsReset)
    return Error("the GPU simulator kiln loaded lacks gpusimKernelStatsCount/Get/Reset, which kiln bench reads; "
                 "build libkiln_gpusim.so from the same source tree as kiln");
  api.gpusimKernelStatsReset();
  ExecuteOptions options;
  options.schedule = &schedule;
  KILN_TRY(step(options));
  std::map<std::string, SimulatedCounters> byName;
  for (size_t i = 0, n = api.gpusimKernelStatsCount(); i < n; ++i) {
    cuda::SimulatedKernelStats s{};
    if (api.gpusimKernelStatsGet(i, &s, sizeof s) != 0) break;
    s.name[sizeof s.name - 1] = '\0';
    byName[s.name].add(countersOf(s));
  }
  return byName;
}

// 1234567 -> "1.23 M"; bytes -> "4.19 MB", "400 B" (decimal units, as GB/s elsewhere in kiln bench).
std::string decimal(double v, const char* unit) {
  const char* prefixes[] = {"", "K", "M", "G", "T"};
  int p = 0;
  while (v >= 999.5 && p < 4) v /= 1000, ++p;
  std::string suffix = std::string(prefixes[p]) + unit;
  std::string number = p == 0 ? fmt::format("{:.0f}", v) : fmt::format("{:.3g}", v);
  return suffix.empty() ? number : number + " " + suffix;
}

double perRequest(uint64_t sectors, uint64_t requests) {
  return requests ? static_cast<double>(sectors) / static_cast<double>(requests) : 0;
}

struct SimulatedRow {
  std::string kernel, layout;
  bool perIteration = false;
  SimulatedCounters counters;  // launches == 0: not launched on the simulator
  uint64_t footprintBytes = 0;  // per launch: inputs read once, outputs written once (KernelReport)
  double flops = 0;             // per launch
};

// The performance model's view of a row on `gpu` (runtime/gpu_perf_model.h).
ModelledKernel modelled(const SimulatedRow& r, const GpuSpec& gpu) {
  const SimulatedCounters& c = r.counters;
  KernelCounters k;
  k.launches = c.launches;
  k.blocks = c.blocks;
  k.threadsPerBlock = c.threadsPerBlock;
  k.warpInstructions = c.warpInstructions;
  k.loadRequests = c.loadRequests;
  k.loadSectors = c.loadSectors;
  k.loadBytes = c.loadBytes;
  k.storeRequests = c.storeRequests;
  k.storeSectors = c.storeSectors;
  k.storeBytes = c.storeBytes;
  k.sharedRequests = c.sharedRequests;
  k.sharedWavefronts = c.sharedWavefronts;
  k.achievedOccupancy = c.averaged(c.achievedOccupancy);
  k.smCoverage = c.averaged(c.smCoverage);
  k.footprintBytes = r.footprintBytes * c.launches;
  k.flops = r.flops * static_cast<double>(c.launches);
  return modelKernel(k, gpu);
}

// The figures of the step as a whole: sums of bytes, blocks and times; the ratios over the sums.
struct StepFigures {
  SimulatedCounters counters;
  double modelledSeconds = 0, rooflineSeconds = 0, smCoverage = 0, achievedOccupancy = 0;
};

StepFigures stepFigures(const std::vector<SimulatedRow>& rows, const GpuSpec& gpu) {
  StepFigures step;
  uint64_t blocks = 0;
  double occupancyByBlocks = 0;
  for (const SimulatedRow& r : rows) {
    const SimulatedCounters& c = r.counters;
    step.counters.add(c);
    if (c.launches == 0) continue;
    ModelledKernel m = modelled(r, gpu);
    step.modelledSeconds += m.modelledSeconds;
    step.rooflineSeconds += m.rooflineSeconds;
    blocks += c.blocks * c.launches;
    occupancyByBlocks += c.averaged(c.achievedOccupancy) * static_cast<double>(c.blocks * c.launches);
    step.smCoverage = std::max(step.smCoverage, c.averaged(c.smCoverage));
  }
  step.counters.blocks = blocks;  // every launch's, not the last one's
  step.achievedOccupancy = blocks ? occupancyByBlocks / static_cast<double>(blocks) : 0;
  return step;
}

// One object per kernel with exactly the keys docs/gpu-performance.md lists, and one for the step
// ("name": "total"): the simulator's counters and the model's times, never a measured time.
void printJsonObject(const std::string& name, const SimulatedCounters& c, uint64_t blocks, double smCoverage,
                     double achievedOccupancy, double modelledSeconds, double rooflineSeconds) {
  double wavefrontsPerRequest =
      c.sharedRequests ? static_cast<double>(c.sharedWavefronts) / static_cast<double>(c.sharedRequests) : 1.0;
  fmt::print("{{\"name\": \"{}\", \"bytes_read\": {}, \"bytes_written\": {}, \"sector_efficiency\": {:.4f}, "
             "\"bank_conflicts_per_request\": {:.4f}, \"blocks\": {}, \"sm_coverage\": {:.4f}, "
             "\"achieved_occupancy\": {:.4f}, \"modelled_us\": {:.3f}, \"roofline_us\": {:.3f}, \"simulated\": true}}\n",
             jsonEscape(name), c.loadBytes, c.storeBytes, c.sectorEfficiency(), wavefrontsPerRequest, blocks, smCoverage,
             achievedOccupancy, modelledSeconds * 1e6, rooflineSeconds * 1e6);
}

void printJson(const std::vector<SimulatedRow>& rows, const StepFigures& step, const GpuSpec& gpu) {
  for (const SimulatedRow& r : rows) {
    const SimulatedCounters& c = r.counters;
    ModelledKernel m = modelled(r, gpu);
    printJsonObject(r.kernel, c, c.blocks, c.averaged(c.smCoverage), c.averaged(c.achievedOccupancy),
                    c.launches ? m.modelledSeconds : 0, c.launches ? m.rooflineSeconds : 0);
  }
  printJsonObject("total", step.counters, step.counters.blocks, step.smCoverage, step.achievedOccupancy,
                  step.modelledSeconds, step.rooflineSeconds);
}

// How each all-reduce across replicas overlapped the rest of the step, from the order the host
// queued work (no times on the simulator): the kernels queued on the compute stream between the
// reduction's start (on its own stream) and the first wait for it, and their simulated warp
// instructions, the work it could hide behind.
void printOverlap(const std::vector<SimulatedRow>& rows, const std::vector<std::string>& schedule) {
  std::map<std::string, uint64_t> instructions;
  for (const SimulatedRow& r : rows) instructions[r.kernel] = r.counters.warpInstructions;
  bool any = false;
  for (size_t i = 0; i < schedule.size(); ++i) {
    if (schedule[i].rfind("start ", 0) != 0) continue;
    std::string group = schedule[i].substr(6);
    int kernels = 0;
    uint64_t hidden = 0;
    std::string waitedBefore = "the step's end";
    for (size_t j = i + 1; j < schedule.size(); ++j) {
      if (schedule[j] == "wait " + group) {
        for (size_t k = j + 1; k < schedule.size(); ++k)
          if (schedule[k].rfind("kernel ", 0) == 0) {
            waitedBefore = schedule[k].substr(7);
            break;
          }
        break;
      }
      if (schedule[j].rfind("kernel ", 0) != 0) continue;
      ++kernels;
      hidden += instructions[schedule[j].substr(7)];
    }
    if (!any) fmt::print("data parallel (simulated: the order work was queued, not times): each all-reduce's overlap\n");
    any = true;
    fmt::print("  {:<26} on the NCCL stream while {} kernel(s) ({} warp inst) ran on the compute stream; waited for "
               "before {}\n",
               group, kernels, decimal(static_cast<double>(hidden), ""), waitedBefore);
  }
  if (!any) fmt::print("data parallel: one replica, no all-reduce across processes (run it under mpirun)\n");
}

void printTable(const std::vector<SimulatedRow>& rows, const StepFigures& step, double wallMs,
                const SimulatedBenchSetup& setup, const std::vector<std::string>& schedule) {
  const SimulatedCounters& total = step.counters;
  fmt::print("@{} on cuda: {}\n", setup.function, setup.device);
  fmt::print("simulated: the GPU simulator's counters for one run of the step, and times modelled from them for an "
             "{} (docs/gpu-performance.md); nothing here is measured\n",
             setup.gpu.name);
  const char* format = "{:<28} {:<36} {:>7} {:>9} {:>6} {:>10} {:>9} {:>9} {:>10} {:>7} {:>7} {:>10} {:>11} {:>11} {:>8}\n";
  fmt::print(fmt::runtime(format), "kernel", "layout", "blocks", "occupancy", "SMs", "warp inst", "read", "written",
             "sector eff", "sect/ld", "sect/st", "wavefr/req", "modelled us", "roofline us", "bound");
  auto print = [&](const std::string& kernel, const std::string& layout, const SimulatedCounters& c,
                   const std::string& blocks, const std::string& occupancy, const std::string& sms, double modelledUs,
                   double rooflineUs, const std::string& bound) {
    auto sectors = [](uint64_t s, uint64_t r) { return r ? fmt::format("{:.1f}", perRequest(s, r)) : "-"; };
    fmt::print(fmt::runtime(format), kernel, layout, blocks, occupancy, sms,
               decimal(static_cast<double>(c.warpInstructions), ""), decimal(static_cast<double>(c.loadBytes), "B"),
               decimal(static_cast<double>(c.storeBytes), "B"), fmt::format("{:.1f}%", 100 * c.sectorEfficiency()),
               sectors(c.loadSectors, c.loadRequests), sectors(c.storeSectors, c.storeRequests),
               c.sharedRequests ? fmt::format("{:.2f}", perRequest(c.sharedWavefronts, c.sharedRequests)) : "-",
               fmt::format("{:.2f}", modelledUs), fmt::format("{:.2f}", rooflineUs), bound);
  };
  auto percent = [](double v) { return fmt::format("{:.1f}%", 100 * v); };
  for (const SimulatedRow& r : rows) {
    const SimulatedCounters& c = r.counters;
    if (c.launches == 0) {
      // A library call (its stand-in runs on the host, uncounted), or a kernel whose code is
      // identical to an earlier one's: it launches under that one's symbol, whose row counts both.
      fmt::print("{:<28} {:<36} no launch under this name (a library call, uncounted; or identical code launched "
                 "as an earlier kernel, counted there)\n",
                 r.kernel, r.layout);
      continue;
    }
    ModelledKernel m = modelled(r, setup.gpu);
    print(r.kernel, r.layout, c, std::to_string(c.blocks), percent(c.averaged(c.achievedOccupancy)),
          percent(c.averaged(c.smCoverage)), m.modelledSeconds * 1e6, m.rooflineSeconds * 1e6, m.bound);
  }
  print("total", fmt::format("{} kernel{}", rows.size(), rows.size() == 1 ? "" : "s"), total,
        std::to_string(total.blocks), "-", "-", step.modelledSeconds * 1e6, step.rooflineSeconds * 1e6, "");
  double perSecond = wallMs > 0 ? static_cast<double>(total.warpInstructions) / (wallMs / 1e3) : 0;
  fmt::print("simulator: {:.3f} ms of host wall clock per step (median of {} run{}), {} warp inst/s: the simulator's "
             "speed, not the GPU's\n",
             wallMs, setup.reps, setup.reps == 1 ? "" : "s", decimal(perSecond, ""));
  fmt::print("occupancy: achieved warps / 64 on the SMs given blocks; SMs: share of the SMs given a block; sector eff: "
             "bytes asked for / (32 x sectors touched); sect/ld, sect/st: sectors per warp-level global load and store "
             "(4 for 32-bit lanes, 16 for 128-bit); wavefr/req: shared-memory wavefronts per request (1.00: no bank "
             "conflict); modelled us: the model's time, roofline us: the kernel's bytes at the HBM peak or its FLOPs "
             "at the FP32 peak, whichever is longer; bound: what sets the modelled time (dram, latency, l2, issue, "
             "compute)\n");
  if (setup.dataParallel) printOverlap(rows, schedule);
  for (const SimulatedRow& r : rows)
    if (r.perIteration) {
      fmt::print("kernels in a map/while body: counters summed over their launches (iterations)\n");
      break;
    }
}

}  // namespace

Status benchOnSimulator(const std::vector<codegen::KernelReport>& kernels, const SimulatedBenchSetup& setup,
                        const std::function<Status(ExecuteOptions)>& step) {
  std::vector<std::string> schedule;
  auto launches = countLaunches(step, schedule);
  if (!launches) return launches.error();
  std::vector<SimulatedRow> rows;
  for (const codegen::KernelReport& k : kernels) {
    SimulatedRow row{k.name, k.layout, !k.region.empty(), {}, k.bytesRead + k.bytesWritten, k.flops};
    if (auto it = launches->find(k.name); it != launches->end()) {
      row.counters = it->second;
      launches->erase(it);
    }
    rows.push_back(row);
  }
  // Launches of kernels the plan does not report (none expected): still counted, not hidden.
  for (const auto& [name, counters] : *launches) rows.push_back({name, "(not in the plan)", false, counters, 0, 0});
  StepFigures total = stepFigures(rows, setup.gpu);
  std::vector<double> wallMs;
  for (int r = 0; r < setup.reps; ++r) {
    auto start = std::chrono::steady_clock::now();
    KILN_TRY(step(ExecuteOptions{}));
    wallMs.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  if (setup.json) printJson(rows, total, setup.gpu);
  else printTable(rows, total, median(wallMs), setup, schedule);
  return {};
}

}  // namespace kiln::cli

#endif  // KILN_HAVE_CUDA
