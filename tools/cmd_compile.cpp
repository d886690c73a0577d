// `kiln compile`: compile a function for the GPU (PTX) or the host CPU and print any stage:
// kiln IR, LLVM IR before or after optimisation, PTX or host assembly; optionally dump them all.
#include <fmt/format.h>


#include "codegen/compile_stages.h"
#include "codegen/cuda_compiler.h"
#include "codegen/dump.h"
#include "codegen/gpu_arch.h"
#include "codegen/optimize.h"
#include "ir/compile_profile.h"
#include "ir/printer.h"
#include "runtime/executable.h"
#include "tools/cli.h"

namespace kiln::cli {

namespace {

using codegen::CompileOptions;

using codegen::Target;

// What `kiln run` compiles, without running it: the host JIT's objects (cpu) or the runtime's PTX
// modules (cuda; loading them would need a GPU), one per distinct kernel, made in parallel
// through the compile cache.
Status compileForRuntime(const Function& f, const CompileOptions& options) {
  if (options.target == Target::Cpu) {
    return Executable::compile(f, options).status();
  }
  return codegen::compileForCuda(f, options, &codegen::CompileCache::global()).status();
}

int run(const Command& c, const Args& args) {
  if (args.positional.size() != 1)
    return usageError(c, args.positional.empty() ? "missing FILE" : "expected one FILE, got " + std::to_string(args.positional.size()));
  CompileOptions options;
  std::string target = args.get("--target").value_or("cuda");
  if (target != "cuda" && target != "cpu") return usageError(c, "unknown --target '" + target + "' (expected cpu or cuda)");
  options.target = target == "cuda" ? Target::Cuda : Target::Cpu;
  bool cuda = options.target == Target::Cuda;
  std::string stage = args.get("--emit").value_or(cuda ? "ptx" : "asm");
  if (stage != "kiln" && stage != "llvm" && stage != "llvm-unopt" && stage != "ptx" && stage != "asm" && stage != "none")
    return usageError(c, "unknown --emit '" + stage + "' (expected kiln, llvm, llvm-unopt, ptx, asm or none)");
  if (stage == "ptx" && !cuda)
    return usageError(c, "--emit ptx needs --target cuda (for the host CPU's code use --emit asm)");
  if (auto arch = args.get("--gpu-arch")) {
    if (!cuda) return usageError(c, "--gpu-arch applies to --target cuda only");
    if (auto parsed = codegen::parseGpuArch(*arch); !parsed) return usageError(c, "--gpu-arch: " + parsed.error().message());
    options.gpuArch = *arch;
  }
  options.fastMath = args.has("--fast-math");
  options.dumpDir = args.get("--dump-dir").value_or("");
  if (!parseDisabledPasses(c, args, options.disabledPasses)) return kExitUsage;
  bool json = args.has("--json");
  if (json && !args.has("--time-passes")) return usageError(c, "--json applies to --time-passes (the report)");
  CompileProfile profile;
  if (args.has("--time-passes")) options.profile = &profile;
  // The report goes out however the compile ends, after the stage it times.
  struct Report {
    const CompileProfile* profile;
    bool json;
    ~Report() {
      if (!profile) return;
      if (json) fmt::print("{}", profile->json());
      else fmt::print(stderr, "{}", profile->table());
    }
  } report{options.profile, json};

  auto loaded = [&] {
    StageTimer timer(options.profile, "import");
    return loadEntry(args);
  }();
  if (!loaded) {
    reportError(loaded.error());
    return kExitError;
  }
  Function* f = loaded->entry;
  if (!options.dumpDir.empty()) {
    if (Status s = codegen::dumpInput(options.dumpDir, *loaded->module); !s) {
      reportError(s.error());
      return kExitError;
    }
  }
  // The IR after the passes needs no code generation.
  if (stage == "kiln" && options.dumpDir.empty()) {
    auto optimized = codegen::optimizeFunction(*f, options);
    if (!optimized) {
      reportError(optimized.error());
      return kExitError;
    }
    return json ? kExitOk : writeOutput(args, printFunction(*optimized->function, kSummaryPrint));
  }

  if (stage == "none") {
    Status compiled = compileForRuntime(*f, options);
    if (!compiled) {
      reportError(compiled.error());
      return kExitError;
    }
    return kExitOk;
  }

  // A cached PTX skips O3, so there is no optimised IR to print then: --emit llvm bypasses the cache.
  auto stages = codegen::compileStages(*f, options, stage == "llvm" ? nullptr : &codegen::CompileCache::global());
  if (!stages) {
    reportError(stages.error());
    return kExitError;
  }
  // With --json the report owns stdout: the stage goes to -o OUT only.
  if (json && !args.has("-o")) return kExitOk;
  if (stage == "kiln") return writeOutput(args, stages->kiln);
  if (stage == "llvm") return writeOutput(args, stages->optimizedIR);
  if (stage == "llvm-unopt") return writeOutput(args, stages->unoptimizedIR);
  return writeOutput(args, stages->code);  // ptx, or asm: PTX is the GPU's assembly
}

}  // namespace

Command compileCommand() {
  Command c{"compile", "compile a function to PTX or host code and print a stage",
            "kiln compile FILE [--entry NAME] [--target cuda|cpu] [--gpu-arch sm_XX] [--fast-math]\n"
            "                  [--emit kiln|llvm|llvm-unopt|ptx|asm] [-o OUT] [--dump-dir DIR] [--disable-passes LIST]\n"
            "                  [--time-passes [--json]]",
            "Compiles the entry function of FILE (@main, else the first; - reads standard input): the pass\n"
            "pipeline runs first (--disable-passes LIST skips some of it, all skips every pass), then each\n"
            "kernel, named k<N>_<what> (k0_matmul, k1_add, ...), is lowered to LLVM IR, optimised at O3\n"
            "and compiled to PTX for an NVIDIA GPU (--target cuda, the default) or to assembly for this\n"
            "machine's CPU (--target cpu). --emit picks the stage printed on stdout (or written to -o OUT):\n"
            "kiln (the IR after passes), llvm-unopt (LLVM IR as emitted), llvm (after libdevice linking and\n"
            "O3), ptx (cuda), asm (host assembly for cpu; PTX for cuda). The default is the target's code.\n"
            "These print the function as one module; the runtime compiles each distinct kernel on its own,\n"
            "in parallel and through the compile cache, and --emit none does just that and prints nothing\n"
            "(with --time-passes: how long a run's compile takes).\n"
            "PTX is for sm_80 unless --gpu-arch says otherwise; it loads on that GPU generation and every\n"
            "later one. Numerics are IEEE unless --fast-math. --dump-dir DIR writes every stage to DIR:\n"
            "00-input.kiln, NN-<pass>.kiln after each pass, <fn>.unopt.ll, <fn>.opt.ll, <fn>.ptx or\n"
            "<fn>.s, and kernels.txt, which maps each kernel to its ops and their source locations.\n"
            "--time-passes reports where the time and memory went, stage by stage. Needs no GPU.",
            {{"--entry", "NAME", "function to compile (default @main, else the first)"},
             {"--target", "NAME", "cuda (PTX, the default) or cpu (this machine)"},
             {"--gpu-arch", "sm_XX", "GPU architecture for cuda (default sm_80; " + codegen::supportedGpuArchs() + ")"},
             fastMathFlag(),
             {"--emit", "STAGE", "kiln, llvm, llvm-unopt, ptx, asm or none (default: ptx for cuda, asm for cpu)"},
             {"-o", "OUT", "write the stage to OUT instead of stdout"},
             {"--dump-dir", "DIR", "write every stage and a kernel-to-ops map to DIR"},
             {"--time-passes", "", "report wall time and peak memory per stage (import, each pass, plan, LLVM ...) on stderr"},
             {"--json", "", "with --time-passes: the report as JSON on stdout (the stage only to -o OUT)"},
             disablePassesFlag()},
            nullptr};
  c.run = [c](const Args& args) { return run(c, args); };
  return c;
}

}  // namespace kiln::cli
