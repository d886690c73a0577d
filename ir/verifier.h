// The verifier: checks that a module is well formed (SSA scoping, terminators, types) before and
// after every transformation. Errors carry the offending op's source location when it has one.
#pragma once

#include "ir/ir.h"

namespace kiln {

Status verifyModule(const Module& module);
Status verifyFunction(const Function& function);

}  // namespace kiln
