// Finding a function of a graph by the name the public API takes ("", "main" or "@main").
#pragma once

#include <string>

#include "ir/ir.h"
#include "kiln/graph.h"

namespace kiln::api {

// `name` of `module` ("" is its entry), or an error listing the functions there are (Module::find).
Expected<Function*> findFunction(const Module& module, const std::string& name);
// Its name, parameters and result types.
Signature signatureOf(const Function& function);

}  // namespace kiln::api
