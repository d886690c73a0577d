// The `kiln` command: dispatches to a subcommand (check, print, run, compile, opt, grad, explain, ...).
#include <fmt/format.h>
#include <llvm/Config/llvm-config.h>

#include <malloc.h>

#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "kiln/version.h"
#include "tools/cli.h"

namespace {

using kiln::cli::Command;

std::vector<Command> commands() {
  return {kiln::cli::checkCommand(), kiln::cli::printCommand(), kiln::cli::runCommand(), kiln::cli::compileCommand(),
          kiln::cli::optCommand(), kiln::cli::gradCommand(), kiln::cli::trainCommand(), kiln::cli::explainCommand(), kiln::cli::benchCommand(), kiln::cli::opsCommand(),
          kiln::cli::importCommand(), kiln::cli::onnxTestCommand()};
}

void printTopLevelHelp() {
  fmt::print(
      "kiln: a JIT compiler from tensor graphs to GPU kernels\n\n"
      "usage: kiln COMMAND [ARGS]\n\ncommands:\n");
  for (const Command& c : commands()) fmt::print("  {:<8} {}\n", c.name, c.summary);
  fmt::print(
      "\n`kiln COMMAND --help` lists a command's flags. `kiln --version` prints the versions.\n"
      "The .kiln format and every op are described in docs/ir.md.\n");
}

// Keeps the host memory a run frees for the next run. glibc hands blocks over 128 KiB (a threshold
// that grows to at most 32 MiB) back to the kernel when they are freed, and trims the heap's top
// past twice that, so the multi-megabyte results a training step allocates again every step were
// faulted in and zeroed page by page by the kernel each time: the CPU MLP step's Adam updates ran
// at a third of copy bandwidth, and the step took 1.6x as long (bench/RESULTS.md). Blocks up to
// 32 MiB (glibc's most) now come from the heap, and up to 512 MiB freed at its top stays mapped,
// as a framework's caching allocator keeps it. The MALLOC_*_ environment variables still win.
void keepFreedHostMemory() {
  if (!std::getenv("MALLOC_MMAP_THRESHOLD_")) mallopt(M_MMAP_THRESHOLD, 32 << 20);
  if (!std::getenv("MALLOC_TRIM_THRESHOLD_")) mallopt(M_TRIM_THRESHOLD, 512 << 20);
}

}  // namespace

int main(int argc, char** argv) {
  keepFreedHostMemory();
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    printTopLevelHelp();
    return args.empty() ? kiln::cli::kExitUsage : kiln::cli::kExitOk;
  }
  if (args[0] == "--version") {
    fmt::print("kiln {} (LLVM {})\n", KILN_VERSION_STRING, LLVM_VERSION_STRING);
    return kiln::cli::kExitOk;
  }
  for (const Command& c : commands()) {
    if (c.name != args[0]) continue;
    std::vector<std::string> rest(args.begin() + 1, args.end());
    for (const std::string& a : rest) {
      if (a == "--help" || a == "-h") {
        fmt::print("{}", kiln::cli::helpText(c));
        return kiln::cli::kExitOk;
      }
    }
    auto parsed = kiln::cli::parseArgs(c, rest);
    if (!parsed) return kiln::cli::kExitUsage;
    try {
      return c.run(*parsed);
    } catch (const std::bad_alloc&) {
      // Tensors that fit one by one (checked before running) may still not fit together.
      fmt::print(stderr, "kiln {}: out of memory: the program's tensors together need more than this machine has\n",
                 c.name);
      return kiln::cli::kExitError;
    }
  }
  std::string names;
  for (const Command& c : commands()) names += (names.empty() ? "" : ", ") + c.name;
  fmt::print(stderr, "kiln: unknown command '{}' (commands: {}; see `kiln --help`)\n", args[0], names);
  return kiln::cli::kExitUsage;
}
