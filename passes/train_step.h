// Training step functions built from a loss function: forward, gradient and optimizer update in
// ONE function, so fusion reaches across all three and the update runs in place on donated
// buffers. Also the pieces of gradient accumulation and the batch-size specialisation.
//
// Layout of a step function built from f(params..., data...) -> (loss, metrics...):
//   (params..., state..., data..., lr: f32[], step: f32[])
//     -> (loss, metrics..., new params..., new state...)
// `params` are f's parameters named in TrainSpec::params, in that order; data are f's other
// parameters in f's order; state is slot-major (slot 0 of every parameter, then slot 1, ...).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "passes/optimizers.h"

namespace kiln::passes {

struct TrainSpec {
  std::vector<std::string> params;  // trained parameters of f, by name
  OptimizerConfig optimizer;
  // Data parallelism: the update uses gradients averaged across replicas (bucketed all_reduce,
  // passes/data_parallel.h; with accumulation only the final step reduces, once per update), and
  // the loss and metrics are averaged too, so every replica reports the global batch's values.
  bool dataParallel = false;
  int64_t bucketBytes = int64_t{25} << 20;
};

// Which parameters of f are trained and which are data, and how many metrics f returns.
struct StepLayout {
  std::vector<int> paramIndex;  // f's parameter index of each trained parameter
  std::vector<int> dataIndex;   // f's parameter index of each data parameter
  int numMetrics = 0;           // f's results after the loss
  int stateSlots = 0;
};
Expected<StepLayout> stepLayout(const Function& f, const TrainSpec& spec);

// The full step: (params, state, data, lr, step) -> (loss, metrics, new params, new state).
Expected<Function*> buildTrainStep(Module& module, const Function& f, const TrainSpec& spec, std::string name = "");

// Gradient accumulation over K micro-batches (docs/training.md):
//   accumulate: (params..., acc..., data...) -> (loss, metrics..., acc + g...)
//   final step: (params..., state..., acc..., data..., lr, step)
//                 -> (loss, metrics..., new params..., new state...)
// where the final step's gradient is (acc + g) / K. acc starts at zero for each update; the
// first K-1 micro-batches go through `accumulate`, the last through the final step.
Expected<Function*> buildAccumulate(Module& module, const Function& f, const TrainSpec& spec, std::string name = "");
Expected<Function*> buildAccumulateStep(Module& module, const Function& f, const TrainSpec& spec, int64_t k,
                                        std::string name = "");
// The update alone, for a pipelined step (K accumulate calls in flight through the stages, then
// this): (params..., state..., acc..., lr, step) -> (new params..., new state...) with the
// gradient acc / K: buildAccumulateStep's arithmetic after its last accumulation, so the results
// are the same bits. `devices`: where each parameter's update runs (placed across devices), by
// parameter; empty: unplaced.
Expected<Function*> buildUpdate(Module& module, const Function& f, const TrainSpec& spec, int64_t k,
                                const std::vector<std::optional<int64_t>>& devices = {}, std::string name = "");

// A copy of f (added to `module` as `name`) whose data parameters (those of `layout`) have
// axis 0 = `batch`, every type re-inferred, as jax.jit retraces for a new shape. An op whose
// types no longer check (a reshape that hard-codes the batch) is reported at its location, with
// the note that it fixes the batch size.
Expected<Function*> specializeBatch(Module& module, const Function& f, const std::vector<int>& dataIndex,
                                    int64_t batch, std::string name);

}  // namespace kiln::passes
