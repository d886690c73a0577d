// `kiln run`: run a function on given or random inputs, show the results, optionally save them.
#include <fmt/format.h>

#include <filesystem>

#include "codegen/dump.h"
#include "ir/compile_profile.h"
#include "ir/npy.h"
#include "runtime/backend.h"
#include "runtime/memory_check.h"
#include "tools/cli.h"
#include "tools/inputs.h"
#include "tools/result_report.h"

namespace kiln::cli {

namespace {

int run(const Command& c, const Args& args) {
  if (args.positional.size() != 1)
    return usageError(c, args.positional.empty() ? "missing FILE" : "expected one FILE, got " + std::to_string(args.positional.size()));
  RunOptions options;
  if (auto name = args.get("--backend")) {
    auto b = parseBackend(*name);
    if (!b) return usageError(c, "unknown backend '" + *name + "' (expected interp, cpu, cuda or auto)");
    options.backend = *b;
  }
  uint64_t seed = 0;
  if (auto s = args.get("--seed")) {
    auto v = parseInteger<uint64_t>(*s);
    if (!v) return usageError(c, "--seed takes a non-negative integer, got '" + *s + "'");
    seed = *v;
  }
  if (auto s = args.get("--max-iterations")) {
    auto v = parseInteger<int64_t>(*s);
    if (!v || *v == 0) return usageError(c, "--max-iterations takes a positive integer, got '" + *s + "'");
    options.maxWhileIterations = *v;
  }
  DeviceFlags devices;
  if (!parseDevices(c, args, devices)) return kExitUsage;
  options.devices = devices.devices;
  options.split = devices.split;
  if (!parseDisabledPasses(c, args, options.disabledPasses)) return kExitUsage;
  options.fastMath = args.has("--fast-math");
  auto backend = resolveBackend(options.backend);
  if (!backend) {
    reportError(backend.error());
    return kExitError;
  }

  auto module = loadModule(args.positional[0]);
  if (!module) {
    reportError(module.error());
    return kExitError;
  }
  if (auto dir = args.get("--dump-dir")) {
    if (*backend == Backend::Interp) return usageError(c, "--dump-dir needs a compiled backend (cpu); interp compiles nothing");
    options.dumpDir = *dir;
    if (Status s = codegen::dumpInput(*dir, **module); !s) {
      reportError(s.error());
      return kExitError;
    }
  }
  // The interpreter runs the graph as written: a pass list for it would be silently ignored.
  if (args.has("--disable-passes") && *backend == Backend::Interp)
    return usageError(c, "--disable-passes needs a compiled backend (cpu); interp runs no passes");
  if (options.fastMath && *backend == Backend::Interp)
    return usageError(c, "--fast-math needs a compiled backend (cpu, cuda); interp computes IEEE results");
  auto selected = selectEntry(**module, args, args.positional[0]);
  if (!selected) {
    reportError(selected.error());
    return kExitError;
  }
  Function* f = *selected;

  // Before any input is made: a program whose tensors cannot fit is an error, not a crash.
  if (Status s = checkTensorsFit(*f, hostMemoryBytes()); !s) {
    reportError(s.error());
    return kExitError;
  }
  std::vector<Value*> params = f->params();
  std::vector<std::string> sources;
  auto inputs = programInputs(c, args, *f, seed, sources);
  if (!inputs) return kExitError;

  fmt::print("@{} on {}\n", f->name(), backendName(*backend));
  for (size_t i = 0; i < params.size(); ++i)
    fmt::print("input %{}: {}  {}\n", params[i]->name(), params[i]->type().str(), sources[i]);

  options.backend = *backend;
  CompileProfile profile;
  if (args.has("--time-passes")) {
    if (*backend == Backend::Interp) return usageError(c, "--time-passes needs a compiled backend (cpu, cuda); interp compiles nothing");
    options.profile = &profile;
  }
  auto results = runFunction(*f, *inputs, options);
  if (options.profile) fmt::print(stderr, "{}", profile.table());  // compile stages (the import came before)
  if (!results) {
    reportError(results.error());
    return kExitError;
  }

  std::optional<std::string> outDir = args.get("--out");
  if (outDir) {
    std::error_code ec;
    std::filesystem::create_directories(*outDir, ec);
    if (ec) {
      reportError(Error("cannot create --out directory '" + *outDir + "': " + ec.message()));
      return kExitError;
    }
  }
  for (size_t i = 0; i < results->size(); ++i) {
    const Tensor& r = (*results)[i];
    fmt::print("result {}: {}\n  values   {}\n  checksum {}\n", i, r.type().str(), leadingValues(r), checksum(r));
    if (!outDir) continue;
    std::string path = (std::filesystem::path(*outDir) / fmt::format("result_{}.npy", i)).string();
    if (Status s = writeNpy(path, r); !s) {
      reportError(s.error());
      return kExitError;
    }
    fmt::print("  saved    {}\n", path);
  }
  return kExitOk;
}

}  // namespace

Command runCommand() {
  Command c{"run", "run a function on given or random inputs",
            "kiln run FILE [--entry NAME] [--backend interp|cpu|cuda|auto] [--input NAME=PATH]... [--seed N] [--out DIR]\n"
            "                [--devices N [--split]] [--disable-passes LIST] [--fast-math] [--dump-dir DIR]",
            "Runs the entry function of FILE (@main, else the first; - reads standard input). Each\n"
            "parameter takes its value from --input NAME=PATH (a NumPy .npy or an ONNX TensorProto .pb\n"
            "file of exactly the parameter's type) or, if none is given, from a deterministic random\n"
            "generator: floats in [-1, 1), integers in [0, 10) or in range for the gather/cross-entropy\n"
            "they feed, bools.\n"
            "Prints each result's type, its first values and checksums; --out DIR also writes result i\n"
            "to DIR/result_<i>.npy. Compiled backends run the pass pipeline first (`kiln opt --list-passes`);\n"
            "--disable-passes skips some or all of it, to compare results with and without.\n"
            "--devices N runs a function placed across devices ({device = K} on its ops; docs/parallelism.md)\n"
            "on N devices: on the cpu backend, N devices of the machine's share of cores each; --split\n"
            "places a function without placement across them by compute.\n"
            "Exits 1 with a located message on a bad file, input or run-time error.",
            {{"--entry", "NAME", "function to run (default @main, else the first)"},
             {"--backend", "NAME", "interp, cpu, cuda or auto (default auto: the best one built and usable here)"},
             {"--input", "NAME=PATH", "take parameter %NAME from a NumPy .npy or an ONNX TensorProto .pb file", true},
             {"--seed", "N", "seed for the random inputs (default 0)"},
             {"--out", "DIR", "write result i to DIR/result_<i>.npy"},
             {"--dump-dir", "DIR", "cpu: write the kiln IR, LLVM IR before/after O3 and assembly of every kernel to DIR"},
             {"--time-passes", "", "report the compile's time and peak memory per stage on stderr (with the compile cache)"},
             devicesFlag(),
             splitFlag(),
             {"--max-iterations", "N", "stop a `while` after N iterations with an error (default 10000000)"},
             fastMathFlag(),
             disablePassesFlag()},
            nullptr};
  c.run = [c](const Args& args) { return run(c, args); };
  return c;
}

}  // namespace kiln::cli
