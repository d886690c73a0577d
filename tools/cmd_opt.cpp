// `kiln opt`: run named passes over a .kiln file and print the result, for pass tests and debugging.
#include <fmt/format.h>

#include <iostream>
#include <vector>

#include "codegen/dump.h"
#include "ir/printer.h"
#include "passes/pass_manager.h"
#include "passes/placement.h"
#include "passes/split_devices.h"
#include "tools/cli.h"

namespace kiln::cli {

namespace {
int listPasses() {
  for (const passes::PassInfo& p : passes::registeredPasses()) fmt::print("  {:<10} {}\n", p.name, p.description);
  return kExitOk;
}

// "file:line:col: remark: [pass] message", the shape of an error line, so editors jump to it.
void printRemark(const passes::Remark& r) {
  std::string where = r.loc.known() ? r.loc.str() + ": " : "";
  fmt::print(stderr, "{}remark: [{}] {}\n", where, r.pass, r.message);
}

int runOpt(const Command& command, const Args& args) {
  if (args.has("--list-passes")) return listPasses();
  if (args.positional.size() != 1)
    return usageError(command, args.positional.empty() ? "missing FILE"
                                                       : "expected one FILE, got " + std::to_string(args.positional.size()));
  // An empty list runs no passes (the file is just verified and printed).
  std::vector<std::string> names = splitCommaList(args.get("--passes").value_or(""));
  // A misspelt pass is a command-line mistake: say so before reading the file.
  if (Status s = passes::checkPassNames(names); !s) return usageError(command, s.error().message());

  auto module = loadModule(args.positional[0]);
  if (!module) {
    reportError(module.error());
    return kExitError;
  }
  passes::PassRunOptions options;
  std::vector<passes::Remark> remarks;
  if (args.has("--remarks")) options.remarks = &remarks;
  options.dumpDir = args.get("--dump-dir").value_or("");
  if (args.has("--print-after-all")) options.printAfterAll = &std::cerr;
  if (!options.dumpDir.empty()) {
    if (Status s = codegen::dumpInput(options.dumpDir, **module); !s) {
      reportError(s.error());
      return kExitError;
    }
  }
  DeviceFlags devices;
  if (!parseDevices(command, args, devices)) return kExitUsage;
  Status ran;
  // Placement first, with the device count checked, then the passes asked for.
  for (const auto& f : (*module)->functions()) {
    if (!ran || devices.devices == 0) break;
    if (devices.split || passes::isPlaced(*f)) ran = passes::placeOnDevices(*f, devices.devices, devices.split);
  }
  if (ran) ran = passes::runPasses(**module, names, options);
  // Remarks of the passes that ran come first, also when a later pass failed.
  for (const passes::Remark& r : remarks) printRemark(r);
  if (!ran) {
    reportError(ran.error());
    return kExitError;
  }
  fmt::print("{}", printModule(**module));
  return kExitOk;
}
}  // namespace

Command optCommand() {
  Command c{"opt", "run passes over a .kiln file and print the result",
            "kiln opt FILE --passes=P1,P2,... [--devices N [--split]] [--remarks] [--print-after-all] [--dump-dir DIR]\n"
            "       kiln opt --list-passes",
            "Parses and verifies FILE (- for standard input), runs the named passes in order over every\n"
            "function, verifying after each, and prints the module in canonical form on stdout.\n"
            "--remarks prints the passes' remarks on stderr, one a line, as\n"
            "`file:line:col: remark: [pass] message` (why a map stayed a loop, say).\n"
            "--print-after-all prints the module after each pass on stderr, headed `# IR after <pass>`;\n"
            "--dump-dir DIR writes 00-input.kiln and then NN-<pass>.kiln after each pass.\n"
            "--devices N places every function placed across devices ({device = K} on ops) on N devices\n"
            "first, as `kiln run --devices N` does: each op gets its device and each crossing a transfer;\n"
            "--split places every function across the N devices by compute instead.\n"
            "An unknown pass name exits 2 with the list of passes.",
            {{"--passes", "LIST", "comma-separated passes to run in order (see --list-passes)"},
             {"--list-passes", "", "list the passes and exit"},
             devicesFlag(),
             splitFlag(),
             {"--remarks", "", "print the passes' remarks (decisions such as a map kept as a loop) on stderr"},
             {"--print-after-all", "", "print the module after every pass on stderr"},
             {"--dump-dir", "DIR", "write 00-input.kiln and NN-<pass>.kiln after each pass to DIR"},
             {"--entry", "NAME", "accepted for symmetry with other commands; passes run on every function"}},
            nullptr};
  c.run = [c](const Args& args) { return runOpt(c, args); };
  return c;
}

}  // namespace kiln::cli
