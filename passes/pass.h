// The pass convention: a pass rewrites a Module in place and reports whether it changed anything.
#pragma once

#include <string_view>

#include "ir/ir.h"

namespace kiln::passes {

// What a pass returns (as in XLA's HloPassInterface): true if it changed the module, false if it
// left it alone, or an Error. The pass manager verifies the module after every pass, so passes
// themselves need not.
using PassResult = Expected<bool>;
using PassFn = PassResult (*)(Module&);

// One entry of the pass registry: what `kiln opt --passes=` and `--list-passes` see.
struct PassInfo {
  std::string_view name;         // "cse"
  std::string_view description;  // one line
  PassFn run;
};

}  // namespace kiln::passes
