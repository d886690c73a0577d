// Reverse-mode automatic differentiation (`grad`): a function with a scalar float result becomes a
// function that also returns the result's gradient with respect to chosen parameters, as
// jax.grad / jax.value_and_grad do. The new function is ordinary IR: the pass pipeline optimises
// it (CSE, fusion) like any other.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace kiln::passes {

// Adds to `module` a function named `newName` (default: f's name + "_grad") with f's parameters
// whose results are f's results followed by d(result 0)/d(p), one per name in `wrt`, in order;
// each gradient has its parameter's type. Result 0 must be a float scalar; f's other results
// (metrics such as accuracy) pass through undifferentiated. `map`s are vectorized first.
//
// Errors (with the op's location): an integer or unknown `wrt` parameter, a parameter that
// reaches result 0 only through ops without a derivative (argmax, a float->int cast, a `while`,
// a `map` that stays a loop), a non-scalar or non-float result 0.
Expected<Function*> differentiate(Module& module, const Function& f, const std::vector<std::string>& wrt,
                                  std::string newName = "");

}  // namespace kiln::passes
