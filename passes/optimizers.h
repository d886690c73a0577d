// Optimizers as IR: the update of one parameter from its gradient, appended to a function with
// GraphBuilder, so that a training step's updates are ordinary elementwise ops that fusion
// merges (horizontally, across parameters) and that run in place on donated buffers.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/builder.h"

namespace kiln::passes {

enum class OptimizerKind { Sgd, Momentum, Adam, AdamW };

// Hyper-parameters fixed at build time. The learning rate and the step count are not here: they
// are runtime scalars of the step function, so schedules and resuming need no recompile.
struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::Sgd;
  double momentum = 0.9;      // momentum
  bool nesterov = false;      // momentum
  double beta1 = 0.9;         // adam, adamw
  double beta2 = 0.999;       // adam, adamw
  double eps = 1e-8;          // adam, adamw
  double weightDecay = 0.0;   // adamw: decoupled; sgd, momentum, adam: L2 added to the gradient
};

// "sgd", "momentum", "nesterov", "adam", "adamw" (other fields keep their defaults).
Expected<OptimizerConfig> parseOptimizer(std::string_view name);
std::string_view optimizerName(OptimizerKind kind);

// State tensors per parameter, each of the parameter's type: sgd 0, momentum 1 (velocity),
// adam/adamw 2 (first and second moment). All start at zero.
int stateSlots(OptimizerKind kind);
// Names of the slots ("velocity"; "m", "v"), used for checkpoint files.
std::vector<std::string> stateSlotNames(OptimizerKind kind);

// Appends the update of all parameters. `lr` and `step` are f32 scalars; `step` is the 1-based
// number of this update (Adam's bias correction 1 - beta^step). state[s][i] is slot s of
// parameter i. Returns the new parameters and the new state in the same layout.
struct UpdatedParams {
  std::vector<Value*> params;
  std::vector<std::vector<Value*>> state;
};
UpdatedParams appendOptimizerUpdate(GraphBuilder& b, const OptimizerConfig& config, const std::vector<Value*>& params,
                                    const std::vector<Value*>& grads, const std::vector<std::vector<Value*>>& state,
                                    Value* lr, Value* step);

}  // namespace kiln::passes
