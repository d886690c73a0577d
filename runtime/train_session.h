// TrainStep: a training step (forward + gradient + optimizer update, passes/train_step.h)
// compiled once and run many times with the parameters and optimizer state resident where the
// step runs: host tensors on the interpreter and CPU backends, DeviceTensors donated to each
// step on CUDA (updated in place).
//
//   kiln::TrainOptions o;
//   o.spec = {{"w1", "b1"}, *kiln::passes::parseOptimizer("adam")};
//   o.batch = 64;
//   auto t = kiln::TrainStep::create(*module->lookup("loss"), o);
//   (*t)->setParams(initial);
//   for (...) { auto r = (*t)->step({x, y}, 1e-3f); std::cout << r->loss; }
//   (*t)->save("ckpt");
#pragma once

#include <future>
#include <memory>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "ir/tensor.h"
#include "passes/train_step.h"
#include "runtime/backend.h"
#include "runtime/device_tensor.h"
#include "runtime/stage_chain.h"

namespace kiln {

class Executable;

struct TrainOptions {
  passes::TrainSpec spec;   // trained parameters and the optimizer
  int64_t batch = 0;        // samples per update (axis 0 of each data input); 0: as written in f
  int64_t accumulate = 1;   // micro-batches per update (batch / accumulate samples each)
  Backend backend = Backend::Cpu;
  std::vector<std::string> disabledPasses;  // compiled backends (codegen::CompileOptions)
  // Train f placed across this many devices (its `device` attributes; runtime/placed_executable.h):
  // placed before differentiation, so each gradient is computed where its forward op ran and
  // crosses back by the transfer's gradient, a transfer back. 0: one device.
  int devices = 0;
  bool split = false;  // with devices: place an f without placement across them by compute
  // With devices: run the `accumulate` micro-batches pipelined through the devices' stages
  // (runtime/stage_chain.h), then the update; the same results as accumulating one after another.
  bool pipeline = false;
  PipelineSchedule schedule = PipelineSchedule::FillDrain;
};

struct StepResult {
  double loss = 0;               // mean over the update's micro-batches
  std::vector<double> metrics;   // f's scalar results after the loss, means likewise
};

class TrainStep {
 public:
  // Specialises f to the micro-batch size, builds the step (or accumulate + final step) and
  // compiles it for options.backend (Auto resolved). Parameters start at zero until setParams.
  static Expected<std::unique_ptr<TrainStep>> create(const Function& f, const TrainOptions& options);
  ~TrainStep();

  // One update on `data` (f's data parameters in f's order, axis 0 = options.batch). Learning
  // rate `lr`; the step count (Adam's bias correction) advances by one.
  Expected<StepResult> step(const std::vector<Tensor>& data, float lr);
  // CUDA: starts copying the next batch to the device (on a separate thread, through the
  // runtime's pinned staging), so that it overlaps the current step; the next step() call with
  // the same tensors uses it. Elsewhere it only checks the batch.
  Status prefetch(const std::vector<Tensor>& data);

  const std::vector<std::string>& paramNames() const { return paramNames_; }
  const std::vector<std::string>& dataNames() const { return dataNames_; }
  // Types of one step's data inputs (full batch).
  const std::vector<TensorType>& dataTypes() const { return dataTypes_; }
  Backend backend() const { return backend_; }
  // The compiled step function (or the final accumulation step), as built (for `kiln explain`-like reports).
  const Function& stepFunction() const { return *stepFn_; }

  Expected<std::vector<Tensor>> params() const;
  Status setParams(const std::vector<Tensor>& params);
  // Optimizer state, slot-major (passes/train_step.h), with names "<slot>_<param>".
  Expected<std::vector<Tensor>> state() const;
  std::vector<std::string> stateNames() const;
  Status setState(const std::vector<Tensor>& state);
  int64_t stepCount() const { return stepCount_; }
  // A pipelined step's mean bubble so far (the fraction of the devices' time idle); 0 before one.
  double pipelineBubble() const { return pipelinedSteps_ ? bubbleSum_ / static_cast<double>(pipelinedSteps_) : 0; }
  bool pipelined() const { return pipelined_; }
  void setStepCount(int64_t n) { stepCount_ = n; }

  // Parameters, optimizer state and the step count as a checkpoint directory (runtime/checkpoint.h).
  Status save(const std::string& dir) const;
  // Restores what save() wrote; names, types and the optimizer must match.
  Status load(const std::string& dir);

 private:
  TrainStep() = default;
  struct Fn;  // one compiled function with its backend
  Status checkData(const std::vector<Tensor>& data) const;
  Expected<std::vector<Tensor>> runHost(const Fn& fn, const std::vector<Tensor>& inputs) const;
  Expected<StepResult> stepHost(const std::vector<Tensor>& data, float lr);
  Expected<StepResult> stepPipelined(const std::vector<Tensor>& data, float lr);
  Expected<StepResult> stepDevice(const std::vector<Tensor>& data, float lr);
  Status setResident(std::vector<Tensor>& host, std::vector<DeviceTensor>& device, const std::vector<Tensor>& values,
                     const std::vector<std::string>& names);
  Expected<std::vector<Tensor>> getResident(const std::vector<Tensor>& host, const std::vector<DeviceTensor>& device) const;

  std::unique_ptr<Module> module_;  // owns the built functions
  const Function* stepFn_ = nullptr;        // step, or final accumulation step
  std::unique_ptr<Fn> step_, accumulate_;   // accumulate_ only with options.accumulate > 1
  Backend backend_ = Backend::Cpu;
  passes::OptimizerConfig optimizer_;
  int64_t k_ = 1, micro_ = 0;
  int numMetrics_ = 0;
  std::vector<std::string> paramNames_, dataNames_;
  std::vector<TensorType> paramTypes_, dataTypes_;
  std::vector<Tensor> params_, state_;              // interp, cpu
  std::vector<DeviceTensor> dParams_, dState_;      // cuda
  int64_t stepCount_ = 0;
  bool pipelined_ = false;  // step_ is the update, accumulate_ runs every micro-batch
  bool dataParallel_ = false;  // pipelined across replicas too: gradients averaged on the host
  bool placed_ = false;     // across devices: parameters stay on the host between the stages' runs
  // Parameters and optimizer state live on the GPU between steps (cuda, one device).
  bool deviceResident() const { return backend_ == Backend::Cuda && !placed_; }
  PipelineSchedule schedule_ = PipelineSchedule::FillDrain;
  double bubbleSum_ = 0;
  int64_t pipelinedSteps_ = 0;
  // CUDA prefetch: the batch being uploaded and the host tensors it came from.
  std::vector<Tensor> prefetchedHost_;
  std::future<Expected<std::vector<DeviceTensor>>> prefetched_;
};

}  // namespace kiln
