// Reading the FILE argument that most subcommands take.
#include <fmt/format.h>

#include <iostream>
#include <iterator>

#include "frontend/parser.h"
#include "tools/cli.h"

namespace kiln::cli {

Expected<std::unique_ptr<Module>> loadModule(const std::string& path) {
  if (path != "-") return parseFile(path);
  std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  return parseModule(text, "<stdin>");
}

void reportError(const Error& error) { fmt::print(stderr, "{}\n", error.str()); }

}  // namespace kiln::cli
