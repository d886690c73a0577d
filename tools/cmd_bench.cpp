// `kiln bench`: times a compiled step (each kernel and the whole step) and quotes its bandwidth as
// a fraction of the copy bandwidth measured in the same run; a data-parallel step also gets its
// reductions and their overlap with computation measured (bench_data_parallel.h). On the GPU
// simulator it reports the simulator's counters per kernel instead of times (bench_gpusim.h).
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>

#include "codegen/kernel_report.h"
#include "runtime/collectives/communicator.h"
#include "runtime/copy_bandwidth.h"
#include "runtime/executable.h"
#include "runtime/memory_check.h"
#include "runtime/thread_pool.h"
#include "tools/bench_data_parallel.h"
#include "tools/bench_input.h"
#include "tools/bench_placed.h"
#include "tools/bench_gpusim.h"
#include "tools/bench_report.h"
#include "tools/cli.h"
#include "tools/inputs.h"
#if KILN_HAVE_CUDA
#include "runtime/cuda/context.h"
#include "runtime/cuda/driver.h"
#include "runtime/cuda/program.h"
#endif

namespace kiln::cli {

namespace {

struct Row {
  std::string kernel, layout;
  double ms = 0, gbps = 0, tflops = 0;
  bool perIteration = false;  // inside a map/while body: time summed over iterations, no bandwidth
};

std::string device(Backend backend) {
#if KILN_HAVE_CUDA
  if (backend == Backend::Cuda) {
    auto d = cuda::Device::get();
    if (d) return (*d)->describe();
  }
#endif
  (void)backend;
  const char* isa = std::getenv("KILN_CPU_ISA");  // the cap kiln's CPU code keeps to (codegen/host_isa.h)
  std::string capped = isa && *isa && std::string_view(isa) != "native" ? fmt::format(", KILN_CPU_ISA={}", isa) : "";
  return fmt::format("host CPU ({} threads{})", ThreadPool::defaultSize(), capped);
}

int run(const Command& c, const Args& args) {
  if (args.positional.size() != 1)
    return usageError(c, args.positional.empty() ? "missing FILE" : "expected one FILE, got " + std::to_string(args.positional.size()));
  Backend requested = Backend::Auto;
  if (auto name = args.get("--backend")) {
    auto b = parseBackend(*name);
    if (!b || *b == Backend::Interp) return usageError(c, "unknown backend '" + *name + "' (expected cpu, cuda or auto)");
    requested = *b;
  }
  int warmup = 5, reps = 50;
  uint64_t seed = 0;
  if (auto s = args.get("--reps")) {
    auto v = parseInteger<int>(*s);
    if (!v || *v == 0) return usageError(c, "--reps takes a positive integer, got '" + *s + "'");
    reps = *v;
  }
  if (auto s = args.get("--warmup")) {
    auto v = parseInteger<int>(*s);
    if (!v) return usageError(c, "--warmup takes a non-negative integer, got '" + *s + "'");
    warmup = *v;
  }
  if (auto s = args.get("--seed")) {
    auto v = parseInteger<uint64_t>(*s);
    if (!v) return usageError(c, "--seed takes a non-negative integer, got '" + *s + "'");
    seed = *v;
  }
  codegen::CompileOptions compileOptions;
  if (!parseDisabledPasses(c, args, compileOptions.disabledPasses)) return kExitUsage;
  compileOptions.fastMath = args.has("--fast-math");
  DeviceFlags devices;
  if (!parseDevices(c, args, devices)) return kExitUsage;
  int microBatches = 1;
  if (auto s = args.get("--micro-batches")) {
    auto v = parseInteger<int>(*s);
    if (!v || *v < 1) return usageError(c, "--micro-batches takes a positive integer, got '" + *s + "'");
    if (devices.devices == 0) return usageError(c, "--micro-batches pipelines a function placed across --devices N");
    microBatches = *v;
  }
  PipelineSchedule schedule = PipelineSchedule::FillDrain;
  if (!parseSchedule(c, args, schedule)) return kExitUsage;
  if (devices.devices > 0 && args.has("--data")) return usageError(c, "--devices and --data do not go together yet");
  bool json = args.has("--json");
  std::optional<GpuSpec> model;
  if (auto s = args.get("--model")) {
    model = gpuSpecNamed(*s);
    if (!model) return usageError(c, "--model takes one of " + gpuSpecNames() + ", got '" + *s + "'");
  }
  auto backend = resolveBackend(requested);
  if (!backend) {
    reportError(backend.error());
    return kExitError;
  }
  bool simulated = false;
#if KILN_HAVE_CUDA
  simulated = *backend == Backend::Cuda && cuda::api().simulated;
#endif
  if (model && !simulated)
    return usageError(c, "--model names the GPU whose model the simulator's counters go through, so it needs "
                         "--backend cuda on the GPU simulator (KILN_CUDA_DRIVER=.../libkiln_gpusim.so); on a "
                         "real GPU or the CPU, kiln bench measures times");
  auto loaded = loadEntry(args);
  if (!loaded) {
    reportError(loaded.error());
    return kExitError;
  }
  const Function& f = *loaded->entry;
  if (Status s = checkTensorsFit(f, hostMemoryBytes()); !s) {
    reportError(s.error());
    return kExitError;
  }
  std::vector<std::string> sources;
  auto inputs = programInputs(c, args, f, seed, sources);
  if (!inputs) return kExitError;
  // --data: the data parameters stream through the input pipeline, a new batch for every run.
  std::unique_ptr<BenchInput> streamed;
  if (auto data = args.get("--data")) {
    auto prefetch = parseInteger<int64_t>(args.get("--prefetch").value_or("2"));
    if (!prefetch || *prefetch < 1) return usageError(c, "--prefetch takes a positive number of batches");
    auto opened = BenchInput::open(f, *data, seed, *prefetch);
    if (!opened) {
      reportError(opened.error());
      return kExitError;
    }
    streamed = std::move(*opened);
  }

  compileOptions.target = *backend == Backend::Cuda ? codegen::Target::Cuda : codegen::Target::Cpu;
  if (devices.devices > 0)
    return benchPlaced(f, *inputs, compileOptions,
                       {devices.devices, devices.split, microBatches, schedule, warmup, reps, json});
  auto exe = Executable::compile(f, compileOptions);
  if (!exe) {
    reportError(exe.error());
    return kExitError;
  }

  // The step as a whole: CUDA keeps inputs on the device and replays its graph; the CPU runs on
  // host tensors. Either way the time excludes copying inputs in and results out.
  std::vector<double> stepMs;
  std::map<std::string, std::vector<double>> kernelMs;
  std::function<Status(ExecuteOptions)> timeStep = [&](ExecuteOptions options) -> Status {
    auto result = (*exe)->run(*inputs, options);
    if (!result) return result.error();
    return {};
  };
#if KILN_HAVE_CUDA
  std::vector<DeviceTensor> deviceInputs;
  if (*backend == Backend::Cuda) {
    for (const Tensor& t : *inputs) {
      auto d = DeviceTensor::upload(t);
      if (!d) {
        reportError(d.error());
        return kExitError;
      }
      deviceInputs.push_back(std::move(*d));
    }
    timeStep = [&](ExecuteOptions options) -> Status {
      auto result = (*exe)->runOnDevice(deviceInputs, options);
      if (!result) return result.error();
      return {};
    };
  }
#endif
  // Each run takes the next batch first (outside the step's time); on CUDA it is uploaded too.
  if (streamed) {
    timeStep = [&, step = timeStep](ExecuteOptions options) -> Status {
      auto slots = streamed->feed(*inputs);
      if (!slots) return slots.error();
#if KILN_HAVE_CUDA
      for (size_t slot : *slots) {
        if (deviceInputs.empty()) break;
        auto d = DeviceTensor::upload((*inputs)[slot]);
        if (!d) return d.error();
        deviceInputs[slot] = std::move(*d);
      }
#endif
      return step(options);
    };
  }
#if KILN_HAVE_CUDA
  // On the GPU simulator the kernels get its counters, not times (bench_gpusim.h).
  if (simulated) {
    SimulatedBenchSetup setup{std::filesystem::path(args.positional[0]).stem().string(), f.name(), device(*backend),
                              args.has("--reps") ? reps : 1, json, hasAllReduce((*exe)->plan())};
    if (model) setup.gpu = *model;
    auto kernels = codegen::reportKernels((*exe)->plan(), compileOptions.target);
    if (Status s = benchOnSimulator(kernels, setup, timeStep); !s) {
      reportError(s.error());
      return kExitError;
    }
    if (cuda::Program* p = (*exe)->cudaProgram(); p && !json && !p->libraryNote().empty())
      fmt::print("note: {}", p->libraryNote());
    if (streamed && !json) fmt::print("{}", streamed->summary());
    return kExitOk;
  }
#endif
  // A data-parallel step (all_reduce ops, under mpirun) is timed three ways (bench_data_parallel.h);
  // its total is the overlapped step, as kiln train runs it.
  std::optional<DataParallelFigures> dataParallel;
  if (hasAllReduce((*exe)->plan())) {
    auto figures = measureDataParallel((*exe)->plan(), timeStep, warmup, reps, *backend == Backend::Cpu);
    if (!figures) {
      reportError(figures.error());
      return kExitError;
    }
    dataParallel = *figures;
    stepMs = {dataParallel->stepMs};
  }
  // Each kernel on its own: events (or the wall clock) around every launch. Reductions across
  // replicas are skipped: these are the computation's kernels (an all_reduce's row is its copy).
  // The step's runs and the kernels' alternate, so that neither finds the caches warmer than the
  // other: run one after the other, the step's runs came first, and a kernel whose 16 MiB input
  // the L3 keeps from run to run took 0.57 ms as the step and 0.39 ms on its own.
  auto ran = [&](const ExecuteOptions& options) {
    Status s = timeStep(options);
    if (!s) reportError(s.error());
    return s.ok();
  };
  for (int r = 0; r < warmup + reps; ++r) {
    if (!dataParallel) {
      double ms = 0;
      ExecuteOptions options;
      options.stepMilliseconds = &ms;
      if (!ran(options)) return kExitError;
      if (r >= warmup) stepMs.push_back(ms);
    }
    std::map<std::string, double> times;
    ExecuteOptions options;
    options.kernelMilliseconds = &times;
    options.collectives = CollectiveMode::Skipped;
    if (!ran(options)) return kExitError;
    if (r >= warmup)
      for (auto& [name, ms] : times) kernelMs[name].push_back(ms);
  }
  // Under mpirun every rank measures (the ranks' figures are averaged) and rank 0 alone reports.
  if (collectives::replicaFromEnvironment().rank != 0) return kExitOk;

  // The baseline: a copy at least as big as the step's largest kernel moves, and 256 MiB at least,
  // repeated as often as the step but at most 50 times (a median of 50 such copies is steady, and
  // --reps 2000 of a small kernel would otherwise spend a minute copying).
  std::vector<codegen::KernelReport> kernels = codegen::reportKernels((*exe)->plan(), compileOptions.target);
  uint64_t stepBytes = 0, largest = 0;
  for (const codegen::KernelReport& k : kernels) {
    if (!k.region.empty()) continue;
    stepBytes += k.bytesRead + k.bytesWritten;
    largest = std::max(largest, (k.bytesRead + k.bytesWritten) / 2);
  }
  auto copy = measureCopyBandwidth(*backend, std::max<uint64_t>(largest, 256u << 20), std::clamp(reps, 10, 50));
  if (!copy) {
    reportError(copy.error());
    return kExitError;
  }

  std::vector<Row> rows;
  double stepFlops = 0;
  for (const codegen::KernelReport& k : kernels) {
    Row row{k.name, k.layout};
    row.perIteration = !k.region.empty();
    row.ms = median(kernelMs[k.name]);
    if (!row.perIteration && row.ms > 0) {
      row.gbps = static_cast<double>(k.bytesRead + k.bytesWritten) / (row.ms * 1e6);
      row.tflops = k.flops / (row.ms * 1e9);
      stepFlops += k.flops;
    }
    rows.push_back(row);
  }
  double step = median(stepMs);
  Row total{"total", fmt::format("{} kernel{}", kernels.size(), kernels.size() == 1 ? "" : "s")};
  total.ms = step;
  total.gbps = step > 0 ? static_cast<double>(stepBytes) / (step * 1e6) : 0;
  total.tflops = step > 0 ? stepFlops / (step * 1e9) : 0;

  std::string caseName = std::filesystem::path(args.positional[0]).stem().string();
  std::string deviceName = device(*backend);
  auto percent = [&](double gbps) { return copy->gbps > 0 ? 100 * gbps / copy->gbps : 0; };
  if (json) {
    for (const Row* r : [&] {
           std::vector<const Row*> all;
           for (const Row& row : rows) all.push_back(&row);
           all.push_back(&total);
           return all;
         }()) {
      fmt::print(
          "{{\"case\": \"{}\", \"kernel\": \"{}\", \"layout\": \"{}\", \"median_ms\": {:.6f}, \"gbps\": {:.2f}, "
          "\"tflops\": {:.3f}, \"copy_gbps\": {:.2f}, \"pct_of_copy\": {:.1f}, \"per_iteration\": {}, "
          "\"backend\": \"{}\", \"device\": \"{}\"}}\n",
          jsonEscape(caseName), jsonEscape(r->kernel), jsonEscape(r->layout), r->ms, r->gbps, r->tflops, copy->gbps,
          percent(r->gbps), r->perIteration ? "true" : "false", backendName(*backend), jsonEscape(deviceName));
    }
    if (dataParallel)
      printDataParallelJson(*dataParallel, fmt::format("\"case\": \"{}\", \"backend\": \"{}\", \"device\": \"{}\", ",
                                                       jsonEscape(caseName), backendName(*backend), jsonEscape(deviceName)));
    return kExitOk;
  }
  fmt::print("@{} on {}: {}\n", f.name(), backendName(*backend), deviceName);
  fmt::print("copy bandwidth: {:.1f} GB/s ({}, {} MiB, median of {})\n", copy->gbps, copy->how, copy->bytes >> 20,
             std::max(reps, 10));
  fmt::print("{:<28} {:<36} {:>11} {:>9} {:>7} {:>8}\n", "kernel", "layout", "median", "GB/s", "% copy", "TFLOP/s");
  auto printRow = [&](const Row& r) {
    std::string gbps = r.perIteration ? "-" : fmt::format("{:.1f}", r.gbps);
    std::string pct = r.perIteration ? "-" : fmt::format("{:.1f}%", percent(r.gbps));
    std::string tflops = r.tflops > 0 ? fmt::format("{:.2f}", r.tflops) : "-";
    fmt::print("{:<28} {:<36} {:>8.4f} ms {:>9} {:>7} {:>8}\n", r.kernel, r.layout, r.ms, gbps, pct, tflops);
  };
  for (const Row& r : rows) printRow(r);
  printRow(total);
  if (dataParallel) printDataParallel(*dataParallel);
  bool graph = false;
#if KILN_HAVE_CUDA
  if (cuda::Program* p = (*exe)->cudaProgram()) {
    graph = p->capturable();
    if (!p->libraryNote().empty()) fmt::print("note: {}", p->libraryNote());
  }
#endif
  fmt::print("median of {} runs after {} warm-up{}; kernels in a map/while body: time summed over iterations\n", reps,
             warmup, graph ? "; the step replays a CUDA graph, the kernels are timed without it" : "");
  if (streamed) fmt::print("{}", streamed->summary());
  return kExitOk;
}

}  // namespace

Command benchCommand() {
  Command c{"bench", "time a compiled step and its kernels against the copy bandwidth",
            "kiln bench FILE [--entry NAME] [--backend cpu|cuda|auto] [--reps N] [--warmup N] [--input NAME=PATH]...\n"
            "                [--seed N] [--json] [--fast-math] [--disable-passes LIST] [--model h100|h200] [--data NAME=PATH,... [--prefetch N]]\n"
            "                [--devices N [--split] [--micro-batches M [--schedule gpipe|1f1b]]]",
            "Compiles the entry function of FILE for the backend (auto: cuda where there is a GPU, else\n"
            "cpu), runs it on the given or random inputs --warmup times, then --reps times, and prints\n"
            "the median time of the whole step and of each kernel, the bytes each moves per second\n"
            "(inputs read once, outputs written once) as GB/s and as a percentage of the copy bandwidth\n"
            "measured in the same run (CUDA: a device-to-device copy; CPU: memcpy on all cores), and\n"
            "TFLOP/s for matmul and convolution. On CUDA the step is timed with events, with its inputs\n"
            "already on the GPU and as a replayed CUDA graph where it has no host-driven loop; each\n"
            "kernel is timed with events around its launch. --json prints one JSON object per kernel\n"
            "and one for the step (\"kernel\": \"total\"), the format bench/compare.py reads.\n"
            "A step with all_reduce ops (kiln grad --data-parallel, kiln train --print-step --replicas N),\n"
            "run under mpirun -np N, is also timed with its reductions synchronous and skipped: rank 0\n"
            "prints the compute time, each bucket's all-reduce time and bytes, and the fraction of the\n"
            "all-reduce time the overlap hides (JSON lines with \"section\": \"data_parallel\").\n"
            "On the GPU simulator (KILN_CUDA_DRIVER=libkiln_gpusim.so) no time is a GPU time: --backend\n"
            "cuda prints the simulator's counters for each kernel of one run (bytes, sectors per request,\n"
            "sector efficiency, bank conflicts, blocks, occupancy, SM coverage, warp instructions), JSON\n"
            "lines marked \"simulated\": true, and the simulator's own wall clock per step over --reps\n"
            "runs (default 1; --warmup is not used: the counted run comes first). --model picks the GPU\n"
            "whose published figures the counters are modelled with (h100, the default, or h200).\n"
            "--devices N times a function placed across devices (cpu): each stage's start, transfer and\n"
            "compute time, how busy each device is over the step, and the same function on one device,\n"
            "run alternately with it; --micro-batches M pipelines M calls through the stages (--schedule\n"
            "gpipe or 1f1b) and reports the bubble against the fill-drain model (docs/parallelism.md).",
            {{"--entry", "NAME", "function to run (default @main, else the first)"},
             {"--backend", "NAME", "cpu, cuda or auto (default auto)"},
             {"--reps", "N", "timed runs (default 50)"},
             {"--warmup", "N", "untimed runs first (default 5)"},
             {"--input", "NAME=PATH", "take parameter %NAME from a NumPy .npy or an ONNX TensorProto .pb file", true},
             {"--seed", "N", "seed for the random inputs (default 0)"},
             {"--data", "LIST", "stream data parameters through the input pipeline, NAME=PATH.npy (or a glob of shards), a new batch each run; prints the input wait"},
             {"--prefetch", "N", "with --data: batches read ahead (default 2)"},
             {"--json", "", "one JSON line per kernel and for the step"},
             {"--model", "GPU", "simulator only: model the counters for h100 (default) or h200"},
             devicesFlag(),
             splitFlag(),
             {"--micro-batches", "M", "with --devices: pipeline M calls of the function through its stages"},
             {"--schedule", "NAME", "with --micro-batches: gpipe (fill-drain, the default) or 1f1b"},
             fastMathFlag(),
             disablePassesFlag()},
            nullptr};
  c.run = [c](const Args& args) { return run(c, args); };
  return c;
}

}  // namespace kiln::cli
