// `kiln explain`: which kernels a function becomes after the pass pipeline, what each reads and
// writes, why passes decided as they did, and what fusion saved.
#include <fmt/format.h>

#include "codegen/kernel_report.h"
#include "passes/partition.h"
#include "passes/split_devices.h"
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

// Where a stage input comes from, for the stage listing: "%h: transfer from device 0 (main.d0.s0), 4096 bytes".
std::string sourceText(const passes::Partition& p, const passes::StageSource& s, const Value& param) {
  std::string from = s.stage < 0 ? "parameter " + std::to_string(s.index) : p.stages[s.stage].function->name();
  if (!s.transfer) return fmt::format("%{}: {} on this device", param.name(), from);
  return fmt::format("%{}: transfer from device {} ({}), {} bytes", param.name(), s.from, from, param.type().byteSize());
}

// kiln explain --devices N: the placed function's stages in the order they start, each with where
// its inputs come from and its kernels.
int explainStages(const Function& entry, DeviceFlags devices, const codegen::CompileOptions& options) {
  auto module = passes::placedCopy(entry, devices.devices, devices.split);
  if (!module) {
    reportError(module.error());
    return kExitError;
  }
  auto partition = passes::partitionByDevice(*(*module)->functions().front());
  if (!partition) {
    reportError(partition.error());
    return kExitError;
  }
  fmt::print("@{} on {} devices: {} stage{}\n", entry.name(), devices.devices, partition->stages.size(),
             partition->stages.size() == 1 ? "" : "s");
  for (const passes::Stage& stage : partition->stages) {
    fmt::print("\nstage {} on device {}:\n", stage.function->name(), stage.device);
    std::vector<Value*> params = stage.function->params();
    for (size_t i = 0; i < params.size(); ++i) fmt::print("  input {}\n", sourceText(*partition, stage.inputs[i], *params[i]));
    auto report = codegen::reportPlan(*stage.function, options);
    if (!report) {
      reportError(report.error());
      return kExitError;
    }
    for (const KernelReport& k : report->kernels) printKernel(k);
    fmt::print("{}\n", totalsText(*report));
  }
  return kExitOk;
}

int run(const Command& c, const Args& args) {
  if (args.positional.size() != 1)
    return usageError(c, args.positional.empty() ? "missing FILE" : "expected one FILE, got " + std::to_string(args.positional.size()));
  codegen::CompileOptions options;
  std::string target = args.get("--target").value_or("cpu");
  if (target != "cuda" && target != "cpu") return usageError(c, "unknown --target '" + target + "' (expected cpu or cuda)");
  options.target = target == "cuda" ? codegen::Target::Cuda : codegen::Target::Cpu;
  if (!parseDisabledPasses(c, args, options.disabledPasses)) return kExitUsage;
  DeviceFlags devices;
  if (!parseDevices(c, args, devices)) return kExitUsage;

  auto loaded = loadEntry(args);
  if (!loaded) {
    reportError(loaded.error());
    return kExitError;
  }
  if (devices.devices > 0) return explainStages(*loaded->entry, devices, options);
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
            "kiln explain FILE [--entry NAME] [--target cpu|cuda] [--devices N [--split]] [--disable-passes LIST]",
            "Runs the pass pipeline on the entry function of FILE (@main, else the first; - reads\n"
            "standard input) and plans its kernels, without compiling them. Prints each kernel in the\n"
            "order it runs: its name and layout (loop over the outputs' shapes, or row: rows x inner),\n"
            "each op it computes as `file:line:col: op`, and the bytes it reads (its inputs) and writes\n"
            "(its outputs) per launch; kernels inside a map or while body say so and count one\n"
            "iteration. Then every pass's remarks as `file:line:col: remark: [pass] message` (why a map\n"
            "stayed a loop, why two ops were not fused), and the totals: kernels and bytes moved, with\n"
            "the pipeline as given and with fusion disabled too, to see what fusion saved.\n"
            "--devices N explains a function placed across devices instead: its stages (the parts of one\n"
            "device that run without waiting for another) in order, where each stage's inputs come from\n"
            "(transfers from other devices, with their bytes) and each stage's kernels.",
            {{"--entry", "NAME", "function to explain (default @main, else the first)"},
             {"--target", "NAME", "cpu (the default) or cuda: the target the plan is for"},
             devicesFlag(),
             splitFlag(),
             disablePassesFlag()},
            nullptr};
  c.run = [c](const Args& args) { return run(c, args); };
  return c;
}

}  // namespace kiln::cli
