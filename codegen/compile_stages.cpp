// One function through plan -> LLVM IR -> O3 -> PTX or host assembly, keeping every stage.
#include "codegen/compile_stages.h"

#include <llvm/IR/LLVMContext.h>

#include "codegen/cpu_compiler.h"
#include "codegen/cpu_target.h"
#include "codegen/dump.h"
#include "codegen/kernel_plan.h"
#include "codegen/nvptx_compiler.h"
#include "codegen/nvptx_target.h"
#include "codegen/optimize.h"
#include "ir/printer.h"

namespace kiln::codegen {

namespace {

// The target-specific half: configure the module, emit, optimise, generate code. The PTX comes
// from `cache` when it has it (artifact "ptx" plus libdevice's identity; the text is
// deterministic, so a hit gives the same bytes), skipping libdevice linking, O3 and codegen;
// optimizedIR stays empty then.
Status compileForCuda(const Function& function, llvm::Module& module, const BlockPlan& plan,
                      const CompileOptions& options, CompileCache* cache, CompiledStages& stages) {
  auto compiler = NvptxCompiler::create(options);
  if (!compiler) return compiler.error();
  compiler->configure(module);
  NvptxTarget target(options.fastMath);
  stages.errors = emitKernels(module, target, plan);
  stages.unoptimizedIR = printModule(module);
  // The PTX also depends on the libdevice linked in. Without one, compile (and fail) uncached.
  auto libdevice = cache ? libdeviceFingerprint(module) : Expected<std::string>(std::string());
  if (!libdevice) cache = nullptr;
  // The emitted IR is part of the key, so PTX from an older emitter is never reused.
  std::string key = cache ? cacheKey(function, options, "ptx " + *libdevice + "\n" + stages.unoptimizedIR) : std::string();
  // With a dump dir the cache is not read, so that every stage is dumped; the result is stored.
  if (cache && options.dumpDir.empty()) {
    if (auto hit = cache->lookup(key)) {
      stages.code = std::move(*hit);
      return {};
    }
  }
  KILN_TRY(compiler->optimize(module));
  stages.optimizedIR = printModule(module);
  auto ptx = compiler->emitPtx(module);
  if (!ptx) return ptx.error();
  stages.code = std::move(*ptx);
  if (cache) cache->store(key, stages.code);
  return {};
}

// The CPU path is the CPU backend's own (cpu_compiler.h), which also writes its dumps.
Expected<CompiledStages> compileCpuStages(const Function& function, const CompileOptions& options) {
  auto c = compileForCpu(function, options);
  if (!c) return c.error();
  CompiledStages stages;
  stages.kiln = kiln::printFunction(*c->optimized.function);
  for (const KernelGroup* group : c->plan->allGroups()) stages.kernels.push_back(group->name);
  stages.errors = c->errors;
  stages.unoptimizedIR = c->unoptimizedIr;
  stages.optimizedIR = printModule(*c->module);
  auto assembly = emitCpuAssembly(*c->module, *c->tm);
  if (!assembly) return assembly.error();
  stages.code = std::move(*assembly);
  return stages;
}

}  // namespace

Expected<CompiledStages> compileStages(const Function& original, const CompileOptions& options, CompileCache* cache) {
  if (options.target == Target::Cpu) return compileCpuStages(original, options);
  auto optimized = optimizeFunction(original, options);
  if (!optimized) return optimized.error();
  // From here on only the optimised copy: it is what the plan points into and the key hashes.
  const Function& function = *optimized->function;
  std::unique_ptr<BlockPlan> plan = planFunction(function);
  CompiledStages stages;
  stages.kiln = kiln::printFunction(function);
  for (const KernelGroup* group : plan->allGroups()) stages.kernels.push_back(group->name);
  llvm::LLVMContext context;
  // Named after the function, not the file: the same function gives the same text anywhere.
  llvm::Module module("kiln." + function.name(), context);
  module.setSourceFileName("kiln." + function.name());
  Status status = compileForCuda(function, module, *plan, options, cache, stages);

  // Dump what was made even when a later stage failed: the IR before the failure is the clue.
  if (!options.dumpDir.empty()) {
    const std::string& dir = options.dumpDir;
    std::pair<const char*, const std::string*> files[] = {
        {".unopt.ll", &stages.unoptimizedIR}, {".opt.ll", &stages.optimizedIR}, {".ptx", &stages.code}};
    for (auto [suffix, text] : files)
      if (!text->empty()) KILN_TRY(dumpFile(dir, function.name() + suffix, *text));
    KILN_TRY(dumpKernelMap(dir, function, *plan));
  }
  if (!status) return status.error();
  return stages;
}

}  // namespace kiln::codegen
