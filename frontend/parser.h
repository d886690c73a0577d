// The .kiln parser: text in, a verified Module out, or the first error with file:line:col.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "ir/ir.h"

namespace kiln {

// Parses `text`; `filename` names it in diagnostics. Missing result types are inferred, written
// ones are checked; the module is verified before it is returned.
Expected<std::unique_ptr<Module>> parseModule(std::string_view text, const std::string& filename = "<input>");
// Reads and parses a file; an unreadable file is an error naming the path.
Expected<std::unique_ptr<Module>> parseFile(const std::string& path);

}  // namespace kiln
