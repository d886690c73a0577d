// PTX text -> ptx::Module. Unknown directives, opcodes, instruction forms, registers, labels and
// symbols are errors naming the line, so a kernel the interpreter cannot run never loads.
#pragma once

#include <string>
#include <string_view>

#include "gpusim/ptx/module.h"

namespace gpusim::ptx {

// Parses a whole module. On failure returns false and appends "line N: error: message\n" lines to
// `log` (the first error is enough; later ones may follow).
bool parseModule(std::string_view text, Module& out, std::string& log);

}  // namespace gpusim::ptx
