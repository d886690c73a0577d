// PlacedExecutable: place, partition, compile each stage; run with a thread per device that
// waits for each of its stages' inputs, copies what crosses devices, and publishes the results.
#include "runtime/placed_executable.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include "ir/clone.h"
#include "passes/placement.h"
#include "passes/split_devices.h"
#include "runtime/executable.h"
#include "runtime/thread_pool.h"

namespace kiln {

PlacedExecutable::~PlacedExecutable() = default;

Expected<std::unique_ptr<PlacedExecutable>> PlacedExecutable::compile(const Function& function, int devices,
                                                                      const codegen::CompileOptions& options, bool split) {
  if (devices < 1) return Error("--devices must be at least 1, not " + std::to_string(devices));
  if (options.target != codegen::Target::Cpu)
    return Error("a function placed across devices runs on the cpu backend so far (--backend cpu): the cuda "
                 "backend drives one GPU per process (data parallelism: one process per GPU under mpirun)");
  std::unique_ptr<PlacedExecutable> exe(new PlacedExecutable());
  exe->devices_ = devices;
  exe->module_ = cloneFunction(function);
  Function& placed = *exe->module_->functions().front();
  KILN_TRY(split ? passes::splitAcrossDevices(placed, devices) : passes::placeDevices(placed, devices));
  exe->placed_ = &placed;
  auto partition = passes::partitionByDevice(placed);
  if (!partition) return partition.error();
  exe->partition_ = std::move(*partition);
  for (const passes::Stage& stage : exe->partition_.stages) {
    if (stage.function->resultTypes().empty()) {
      exe->stages_.push_back(nullptr);
      continue;
    }
    auto compiled = Executable::compile(*stage.function, options);
    if (!compiled) return compiled.error();
    exe->stages_.push_back(std::move(*compiled));
  }
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  for (int d = 0; d < devices; ++d)
    exe->threads_.push_back(std::make_unique<ThreadPool>(std::max(1u, cores / static_cast<unsigned>(devices))));
  return exe;
}

namespace {

double millisecondsBetween(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

Expected<std::vector<Tensor>> PlacedExecutable::run(const std::vector<Tensor>& inputs, PlacedRunStats* stats) const {
  std::vector<TensorType> given;
  for (const Tensor& t : inputs) given.push_back(t.type());
  KILN_TRY(checkInputTypes(*placed_, given));
  const std::vector<passes::Stage>& stages = partition_.stages;
  std::mutex mutex;
  std::condition_variable published;
  std::vector<std::optional<std::vector<Tensor>>> results(stages.size());
  std::optional<Error> failure;
  size_t failedStage = stages.size();
  std::vector<PlacedRunStats::StageTime> times(stages.size());
  auto start = std::chrono::steady_clock::now();

  auto ready = [&](const passes::Stage& stage) {
    return std::all_of(stage.inputs.begin(), stage.inputs.end(),
                       [&](const passes::StageSource& s) { return s.stage < 0 || results[s.stage].has_value(); });
  };
  auto value = [&](const passes::StageSource& s) -> const Tensor& {
    return s.stage < 0 ? inputs[s.index] : (*results[s.stage])[s.index];
  };
  auto runDevice = [&](int device) {
    for (size_t s = 0; s < stages.size(); ++s) {
      const passes::Stage& stage = stages[s];
      if (stage.device != device) continue;
      {
        std::unique_lock<std::mutex> lock(mutex);
        published.wait(lock, [&] { return failure.has_value() || ready(stage); });
        if (failure) return;
      }
      PlacedRunStats::StageTime& time = times[s];
      auto began = std::chrono::steady_clock::now();
      time.startMs = millisecondsBetween(start, began);
      // Transfers: a copy of its own for every input living on another device.
      std::vector<Tensor> copies;
      copies.reserve(stage.inputs.size());
      std::vector<TensorView> views;
      for (const passes::StageSource& source : stage.inputs) {
        const Tensor& v = value(source);
        if (!source.transfer) {
          views.emplace_back(v);
          continue;
        }
        copies.emplace_back(v.type());
        std::memcpy(copies.back().data(), v.data(), v.byteSize());
        time.transferBytes += static_cast<int64_t>(v.byteSize());
        views.emplace_back(copies.back());
      }
      auto computing = std::chrono::steady_clock::now();
      time.transferMs = millisecondsBetween(began, computing);
      Expected<std::vector<Tensor>> out = std::vector<Tensor>{};
      if (stages_[s]) {
        ExecuteOptions options;
        options.threads = threads_[device].get();
        out = stages_[s]->run(std::span<const TensorView>(views), options);
      }
      time.computeMs = millisecondsBetween(computing, std::chrono::steady_clock::now());
      std::lock_guard<std::mutex> lock(mutex);
      if (!out) {
        // The earliest failing stage's error, so the message does not depend on timing.
        if (!failure || s < failedStage) failure = out.error(), failedStage = s;
        published.notify_all();
        return;
      }
      results[s] = std::move(*out);
      published.notify_all();
    }
  };
  std::vector<std::thread> workers;
  for (int d = 1; d < devices_; ++d) workers.emplace_back(runDevice, d);
  runDevice(0);
  for (std::thread& w : workers) w.join();
  if (failure) return *failure;

  std::vector<Tensor> out;
  for (const passes::StageSource& source : partition_.results) out.push_back(value(source));
  if (stats) {
    stats->wallMs = millisecondsBetween(start, std::chrono::steady_clock::now());
    stats->stages = times;
    for (size_t s = 0; s < stages.size(); ++s) {
      stats->stages[s].device = stages[s].device;
      stats->stages[s].name = stages[s].function->name();
    }
  }
  return out;
}

}  // namespace kiln
