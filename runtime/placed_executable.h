// A function placed across devices (passes/placement.h) run as one: cut into stages
// (passes/partition.h), each compiled to an Executable of its own, run by one thread per device
// (kept from run to run: runtime/device_workers.h).
// A device runs its stages in order, each as soon as its inputs are there; devices run at once.
//
// On the CPU, `devices` splits the machine: each device has its own threads (an equal share of
// the cores, at least one) and each stage run its own memory, and a transfer copies a value into
// memory of the destination device (made by the destination's thread as its stage starts, so the
// source device goes on computing meanwhile). The results equal a single-device run's. On cuda
// each device is a GPU, values stay on their GPU, and a transfer is one peer copy
// (runtime/stage_chain.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "codegen/compile_options.h"
#include "ir/ir.h"
#include "ir/tensor.h"
#include "passes/partition.h"

namespace kiln {

class DeviceWorkers;
class Executable;
class ThreadPool;
struct ChainStats;

class PlacedExecutable {
 public:
  // Places a copy of `function` on `devices` devices (device indices past it are errors at their
  // op; `split`: a function without placement is split across them by compute,
  // passes/split_devices.h), partitions it and compiles every stage for options.target (cuda:
  // each device a GPU of the process, gpu(); more devices than GPUs is an error).
  static Expected<std::unique_ptr<PlacedExecutable>> compile(const Function& function, int devices,
                                                             const codegen::CompileOptions& options, bool split = false);
  ~PlacedExecutable();

  // Runs on `inputs` (one per parameter of the function, exact types); the results are the
  // function's. May be called from several threads at once. `stats`: each stage's timing
  // (runtime/stage_chain.h, which also runs several calls pipelined).
  Expected<std::vector<Tensor>> run(const std::vector<Tensor>& inputs, ChainStats* stats = nullptr) const;

  // The function with every op placed and its transfers, as `kiln opt --devices N` prints it.
  const Function& placedFunction() const { return *placed_; }
  const passes::Partition& partition() const { return partition_; }
  int devices() const { return devices_; }
  // Stage i's executable (null for a stage without results, which never runs).
  const Executable* stageExecutable(size_t i) const { return stages_[i].get(); }
  // The threads device `device`'s stages run on.
  ThreadPool& threads(int device) const { return *threads_[static_cast<size_t>(device)]; }
  // cuda: the GPU ordinal device `device` runs on (device + the rank's first GPU under mpirun).
  int gpu(int device) const { return firstGpu_ + device; }
  // The thread of each device, which runs its tasks (runtime/stage_chain.h).
  DeviceWorkers& workers() const { return *workers_; }

 private:
  PlacedExecutable() = default;
  std::unique_ptr<Module> module_;  // owns placed_
  const Function* placed_ = nullptr;
  passes::Partition partition_;
  int devices_ = 1;
  int firstGpu_ = 0;
  std::vector<std::unique_ptr<Executable>> stages_;
  std::vector<std::unique_ptr<ThreadPool>> threads_;  // one per device
  std::unique_ptr<DeviceWorkers> workers_;
};

}  // namespace kiln
