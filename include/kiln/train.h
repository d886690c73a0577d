// Training: a loss function's forward pass, its gradient and an optimizer's update compiled into
// one step, run many times with the parameters and optimizer state kept where the step runs.
// Part of kiln's public API (docs/api.md; docs/training.md says what a step computes).
//
//   kiln::TrainerOptions o;
//   o.params = {"w1", "b1", "w2", "b2"};
//   o.optimizer = "adam";
//   kiln::Expected<kiln::Trainer> t = kiln::Trainer::create(*graph, o);
//   for (...) { auto stats = t->step({x, labels}, 1e-3f); std::cout << stats->loss << "\n"; }
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/backend.h"
#include "kiln/graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

struct TrainerOptions {
  // The loss function: "" is the graph's entry. Its first result is the scalar loss; further
  // scalar results are metrics, averaged like the loss.
  std::string function;
  // The parameters to train, by name; the function's other parameters are data.
  std::vector<std::string> params;
  // "sgd", "momentum", "nesterov", "adam" or "adamw".
  std::string optimizer = "sgd";
  // Samples per update (axis 0 of each data input); 0: as the function is written.
  int64_t batch = 0;
  // Micro-batches per update, gradients summed across them (batch / accumulate samples each).
  int64_t accumulate = 1;
  // Where the step runs: cpu, cuda (parameters stay on the GPU) or interp.
  Backend backend = Backend::Cpu;
  // Train the function placed across this many devices (its ops' `device` attributes, or with
  // `split` placed by compute): each gradient computed where its op runs. 0: one device.
  int devices = 0;
  bool split = false;
  // With devices: run the `accumulate` micro-batches pipelined through the devices' stages,
  // "gpipe" (fill-drain) or "1f1b"; the updates equal accumulating them one after another.
  bool pipeline = false;
  std::string schedule = "gpipe";
};

struct TrainStats {
  double loss = 0;              // the update's mean loss
  std::vector<double> metrics;  // the other scalar results, means likewise
};

class Trainer {
 public:
  // Builds and compiles the step. The parameters start at zero: setParams gives them values.
  static Expected<Trainer> create(const Graph& graph, const TrainerOptions& options);

  // One update on `data` (the function's data parameters in order, `batch` samples each) with
  // learning rate `lr`.
  Expected<TrainStats> step(const std::vector<Tensor>& data, float lr);

  const std::vector<std::string>& paramNames() const;
  const std::vector<std::string>& dataNames() const;
  Expected<std::vector<Tensor>> params() const;
  Status setParams(const std::vector<Tensor>& params);
  int64_t stepCount() const;
  // Parameters, optimizer state and step count as a checkpoint directory, and back.
  Status save(const std::string& dir) const;
  Status load(const std::string& dir);

  struct Impl;
  explicit Trainer(std::shared_ptr<Impl> impl);

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace kiln
