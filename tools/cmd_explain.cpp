// `kiln explain`: which kernels a function becomes after the pass pipeline, what each reads and
// writes, why passes decided as they did, and what fusion saved.
#include <fmt/format.h>

#include "codegen/kernel_report.h"
#include "tools/cli.h"

namespace kiln::cli {

namespace {

using codegen::KernelReport;
using codegen::PlanReport;

std::string totalsText(const PlanReport& r) {
  return fmt::format("{} kernel{}, {} bytes read, {} bytes written", r.kernels.size(), r.kernels.size() == 1 ? "" : "s",
                     r.bytesRead, r.bytesWritten);
}

void printKernel(const KernelReport& k) {
  fmt::print("{}: {}{}\n", k.name, k.layout, k.region.empty() ? "" : " (in " + k.region + ", per iteration)");
  // file:line:col first, as compilers print locations, so editors jump to each op.
  for (const codegen::KernelOpInfo& op : k.ops) fmt::print("  {}: {}\n", codegen::locationText(op.loc), op.name);
  fmt::print("  reads {} bytes, writes {} bytes\n", k.bytesRead, k.bytesWritten);
}

// The shape of kiln opt --remarks' lines, on stdout here: remarks are what explain is asked for.
void printRemark(const passes::Remark& r) {
  std::string where = r.loc.known() ? codegen::locationText(r.loc) + ": " : "";
  fmt::print("{}remark: [{}] {}\n", where, r.pass, r.message);
}

int run(const Command& c, const Args& args) {
  if (args.positional.size() != 1)
    return usageError(c, args.positional.empty() ? "missing FILE" : "expected one FILE, got " + std::to_string(args.positional.size()));
  codegen::CompileOptions options;
  std::string target = args.get("--target").value_or("cpu");
  if (target != "cuda" && target != "cpu") return usageError(c, "unknown --target '" + target + "' (expected cpu or cuda)");
  options.target = target == "cuda" ? codegen::Target::Cuda : codegen::Target::Cpu;
  if (!parseDisabledPasses(c, args, options.disabledPasses)) return kExitUsage;

  auto loaded = loadEntry(args);
  if (!loaded) {
    reportError(loaded.error());
    return kExitError;
  }
  auto report = codegen::reportPlan(*loaded->entry, options);
  if (!report) {
    reportError(report.error());
    return kExitError;
  }
  auto unfused = codegen::reportPlan(*loaded->entry, codegen::withoutFusion(options));
  if (!unfused) {
    reportError(unfused.error());
    return kExitError;
  }

  fmt::print("@{} for {}:\n", loaded->entry->name(), target);
  for (const KernelReport& k : report->kernels) printKernel(k);
  fmt::print("remarks:{}\n", report->remarks.empty() ? " none" : "");
  for (const passes::Remark& r : report->remarks) printRemark(r);
  fmt::print("{}\n", totalsText(*report));
  if (report->constants)
    fmt::print("constant data: {} buffer{}, {} bytes (made once per executable, read by the kernels)\n",
               report->constants, report->constants == 1 ? "" : "s", report->constantBytes);
  fmt::print("without fusion: {}\n", totalsText(*unfused));
  return kExitOk;
}

}  // namespace

Command explainCommand() {
  Command c{"explain", "show the kernels a function becomes, with their ops, bytes and the passes' remarks",
            "kiln explain FILE [--entry NAME] [--target cpu|cuda] [--disable-passes LIST]",
            "Runs the pass pipeline on the entry function of FILE (@main, else the first; - reads\n"
            "standard input) and plans its kernels, without compiling them. Prints each kernel in the\n"
            "order it runs: its name and layout (loop over the outputs' shapes, or row: rows x inner),\n"
            "each op it computes as `file:line:col: op`, and the bytes it reads (its inputs) and writes\n"
            "(its outputs) per launch; kernels inside a map or while body say so and count one\n"
            "iteration. Then every pass's remarks as `file:line:col: remark: [pass] message` (why a map\n"
            "stayed a loop, why two ops were not fused), and the totals: kernels and bytes moved, with\n"
            "the pipeline as given and with fusion disabled too, to see what fusion saved.",
            {{"--entry", "NAME", "function to explain (default @main, else the first)"},
             {"--target", "NAME", "cpu (the default) or cuda: the target the plan is for"},
             disablePassesFlag()},
            nullptr};
  c.run = [c](const Args& args) { return run(c, args); };
  return c;
}

}  // namespace kiln::cli
