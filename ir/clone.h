// Deep copies of IR: the compile pipeline optimises a copy, so the caller's function (and the
// interpreter that re-runs it for exact error messages) stays as written.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/ir.h"

namespace kiln {

// A new module holding one function equal to `function`: same name, location, parameter and
// value names, ops, attributes and nested regions.
std::unique_ptr<Module> cloneFunction(const Function& function);
// The same copy added to `module` under the name `name` (a transformation's starting point).
Function* cloneFunctionInto(Module& module, const Function& function, std::string name);
// Copies `from`'s ops except its terminator to the end of `into`, `args` standing for from's
// arguments, and returns the copies of what the terminator returns (inlining a function body).
std::vector<Value*> inlineBlock(const Block& from, Block& into, const std::vector<Value*>& args);
// Appends a copy of `op`, regions included, to `into`: its operands are looked up in `map`, which
// then maps its results to the copy's (building a function from some of another's ops).
Op* cloneOp(const Op& op, Block& into, std::unordered_map<const Value*, Value*>& map);

}  // namespace kiln
