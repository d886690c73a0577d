// The printer: canonical .kiln text for modules, functions and ops. Parsing its output and
// printing again gives the same bytes.
#pragma once

#include <string>

#include "ir/ir.h"

namespace kiln {

std::string printModule(const Module& module);
std::string printFunction(const Function& function);
// Spells `a, b, c` as in the text format ("f32[2], i64[]").
std::string printTypes(const std::vector<TensorType>& types);

}  // namespace kiln
