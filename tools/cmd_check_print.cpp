// `kiln check` and `kiln print`: parse and verify a file; print its canonical text.
#include <fmt/format.h>

#include "ir/printer.h"
#include "tools/cli.h"

namespace kiln::cli {

namespace {
// Both commands take exactly one FILE and do something with its module; `use` is skipped when
// loading fails, and the exit code says which way it went.
int withSingleModule(const Command& command, const Args& args, const std::function<void(const Module&)>& use) {
  if (args.positional.size() != 1)
    return usageError(command, args.positional.empty() ? "missing FILE"
                                                       : "expected one FILE, got " + std::to_string(args.positional.size()));
  auto module = loadModule(args.positional[0]);
  if (!module) {
    reportError(module.error());
    return kExitError;
  }
  use(**module);
  return kExitOk;
}
}  // namespace

Command checkCommand() {
  Command c{"check", "parse and verify a .kiln file; silent on success", "kiln check FILE",
            "Parses FILE (- for standard input), infers missing result types, checks written ones and\n"
            "verifies the module. Prints nothing and exits 0 when the file is valid; otherwise prints\n"
            "`file:line:col: error: ...` on stderr and exits 1.",
            {}, nullptr};
  c.run = [c](const Args& args) { return withSingleModule(c, args, [](const Module&) {}); };
  return c;
}

Command printCommand() {
  Command c{"print", "print a .kiln file in canonical form", "kiln print FILE [--full-constants]",
            "Parses and verifies FILE (- for standard input) and prints it in canonical form on stdout:\n"
            "every result type written out, attributes in table order, comments dropped. Constant data\n"
            "of more than 256 elements (a model's weights) prints as a summary with its content hash,\n"
            "which does not parse back; with --full-constants every constant is printed in full, and\n"
            "printing is idempotent: `kiln print --full-constants` of the output gives the same bytes.",
            {{"--full-constants", "", "print every constant's elements (text that parses back)"}}, nullptr};
  c.run = [c](const Args& args) {
    PrintOptions options = args.has("--full-constants") ? PrintOptions{} : kSummaryPrint;
    return withSingleModule(c, args, [&](const Module& m) { fmt::print("{}", printModule(m, options)); });
  };
  return c;
}

}  // namespace kiln::cli
