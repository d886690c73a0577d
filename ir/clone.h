// Deep copies of IR: the compile pipeline optimises a copy, so the caller's function (and the
// interpreter that re-runs it for exact error messages) stays as written.
#pragma once

#include <memory>

#include "ir/ir.h"

namespace kiln {

// A new module holding one function equal to `function`: same name, location, parameter and
// value names, ops, attributes and nested regions.
std::unique_ptr<Module> cloneFunction(const Function& function);

}  // namespace kiln
