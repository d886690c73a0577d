// PlacedExecutable: place, partition, compile each stage; run with a thread per device that
// waits for each of its stages' inputs, copies what crosses devices, and publishes the results.
#include "runtime/placed_executable.h"

#include <algorithm>

#include "passes/split_devices.h"
#include "runtime/collectives/communicator.h"
#include "runtime/device_workers.h"
#include "runtime/executable.h"
#include "runtime/stage_chain.h"
#include "runtime/thread_pool.h"
#if KILN_HAVE_CUDA
#include "runtime/cuda/driver.h"
#endif

namespace kiln {

PlacedExecutable::~PlacedExecutable() = default;

namespace {

// cuda: device k of the placement is GPU first + k of this process, where first is 0, or under
// mpirun the local rank x devices (replicas on one machine take GPUs of their own).
Expected<int> firstGpu(int devices) {
#if KILN_HAVE_CUDA
  auto d = cuda::driver();
  if (!d) return d.error();
  int count = 0;
  KILN_CU(cuDeviceGetCount, "", &count);
  collectives::ReplicaInfo replica = collectives::replicaFromEnvironment();
  int first = replica.launchedByMpi ? replica.localRank * devices : 0;
  if (first + devices > count)
    return Error("--devices " + std::to_string(devices) + " on cuda puts the stages on " + std::to_string(devices) +
                 " GPUs" +
                 (first ? " (GPUs " + std::to_string(first) + " to " + std::to_string(first + devices - 1) +
                              " for local rank " + std::to_string(replica.localRank) + ")"
                        : std::string()) +
                 ", but the driver sees " + std::to_string(count) + " (the GPU simulator presents N with "
                 "KILN_GPUSIM_DEVICES=N)");
  return first;
#else
  (void)devices;
  return Error("this kiln was built without the CUDA toolkit's headers, so it has no cuda backend");
#endif
}

}  // namespace

Expected<std::unique_ptr<PlacedExecutable>> PlacedExecutable::compile(const Function& function, int devices,
                                                                      const codegen::CompileOptions& options, bool split) {
  if (devices < 1) return Error("--devices must be at least 1, not " + std::to_string(devices));
  std::unique_ptr<PlacedExecutable> exe(new PlacedExecutable());
  if (options.target == codegen::Target::Cuda) {
    auto first = firstGpu(devices);
    if (!first) return first.error();
    exe->firstGpu_ = *first;
  }
  exe->devices_ = devices;
  auto copy = passes::placedCopy(function, devices, split);
  if (!copy) return copy.error();
  exe->module_ = std::move(*copy);
  Function& placed = *exe->module_->functions().front();
  exe->placed_ = &placed;
  auto partition = passes::partitionByDevice(placed);
  if (!partition) return partition.error();
  exe->partition_ = std::move(*partition);
  for (const passes::Stage& stage : exe->partition_.stages) {
    if (stage.function->resultTypes().empty()) {
      exe->stages_.push_back(nullptr);
      continue;
    }
    codegen::CompileOptions stageOptions = options;
    if (options.target == codegen::Target::Cuda) stageOptions.deviceOrdinal = exe->gpu(stage.device);
    // Each stage's dump in a folder of its own, named after the stage ("main.d1.s1").
    if (!options.dumpDir.empty()) stageOptions.dumpDir = options.dumpDir + "/" + stage.function->name();
    auto compiled = Executable::compile(*stage.function, stageOptions);
    if (!compiled) return compiled.error();
    exe->stages_.push_back(std::move(*compiled));
  }
  unsigned cores = ThreadPool::defaultSize();
  for (int d = 0; d < devices; ++d)
    exe->threads_.push_back(std::make_unique<ThreadPool>(std::max(1u, cores / static_cast<unsigned>(devices))));
  exe->workers_ = std::make_unique<DeviceWorkers>(devices);
  return exe;
}

Expected<std::vector<Tensor>> PlacedExecutable::run(const std::vector<Tensor>& inputs, ChainStats* stats) const {
  std::vector<TensorType> given;
  for (const Tensor& t : inputs) given.push_back(t.type());
  KILN_TRY(checkInputTypes(*placed_, given));
  ChainCall call{this, {}};
  for (int i = 0; i < static_cast<int>(inputs.size()); ++i) call.inputs.push_back({-1, i});
  auto out = runChain({call}, inputs, PipelineSchedule::FillDrain, stats);
  if (!out) return out.error();
  return std::move(out->front());
}

}  // namespace kiln
