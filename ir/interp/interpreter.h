// The reference interpreter: runs any function of the IR on host tensors, op by op, exactly as
// docs/ir.md says. It is slow and simple on purpose: every backend is tested against it.
#pragma once

#include <functional>
#include <vector>

#include "ir/ir.h"
#include "ir/tensor.h"

namespace kiln {

struct InterpretOptions {
  // A `while` that runs longer than this stops with an error instead of hanging the process.
  int64_t maxWhileIterations = 10'000'000;
  // Reduces an `all_reduce`'s value (this replica's, in `value`) in place across data-parallel
  // replicas; the runtime supplies it under mpirun. Null: one replica, where all_reduce is the
  // identity.
  std::function<Status(const Op& op, Tensor& value)> allReduce;
};

// Runs `function` on `inputs` (one per parameter, with the parameter's exact type) and returns
// its results. Wrong inputs and run-time errors (a gather index out of range, an integer division
// by zero, a label outside [0,K)) are errors that name the op and its source location.
Expected<std::vector<Tensor>> interpret(const Function& function, const std::vector<Tensor>& inputs,
                                        const InterpretOptions& options = {});

// Runs the kernel of one op that is neither a region op (map, while) nor a terminator on `inputs`
// (one per operand, with the operands' types). For constant folding: a run-time error (an integer
// division by zero, a gather index out of range) comes back unprefixed, without the op's location.
Expected<Tensor> evaluateOp(const Op& op, const std::vector<const Tensor*>& inputs);

}  // namespace kiln
