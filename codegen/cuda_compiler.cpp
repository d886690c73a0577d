// One function through plan -> LLVM IR -> libdevice + O3 -> PTX (cuda_compiler.h).
#include "codegen/cuda_compiler.h"

#include <llvm/IR/LLVMContext.h>

#include "codegen/cpu_target.h"  // printModule
#include "codegen/dump.h"
#include "codegen/nvptx_compiler.h"
#include "codegen/nvptx_target.h"
#include "ir/compile_profile.h"

namespace kiln::codegen {

namespace {

// The target-specific half: configure the module, emit, optimise, generate PTX. The PTX comes from
// `cache` when it has it (the text is deterministic, so a hit gives the same bytes), skipping
// libdevice linking, O3 and codegen; optimizedIR stays empty then.
Status emitPtx(const Function& function, llvm::Module& module, const CompileOptions& options, CompileCache* cache,
               CudaCompilation& c) {
  auto compiler = NvptxCompiler::create(options);
  if (!compiler) return compiler.error();
  compiler->configure(module);
  NvptxTarget target(options.fastMath);
  {
    StageTimer timer(options.profile, "llvm emit");
    c.errors = emitKernels(module, target, *c.plan);
    c.symbols = deduplicateKernels(module, c.plan->allGroups());
    c.unoptimizedIR = printModule(module);
  }
  // The PTX also depends on the libdevice linked in. Without one, compile (and fail) uncached.
  auto libdevice = cache ? libdeviceFingerprint(module) : Expected<std::string>(std::string());
  if (!libdevice) cache = nullptr;
  // The emitted IR is part of the key, so PTX from an older emitter is never reused.
  std::string key;
  if (cache) {
    StageTimer timer(options.profile, "cache key");
    key = cacheKey(function, options, "ptx " + *libdevice + "\n" + c.unoptimizedIR);
  }
  if (cache && options.dumpDir.empty()) {
    if (auto hit = cache->lookup(key)) {
      c.ptx = std::move(*hit);
      return {};
    }
  }
  {
    StageTimer timer(options.profile, "llvm optimize");
    KILN_TRY(compiler->optimize(module));
    c.optimizedIR = printModule(module);
  }
  StageTimer timer(options.profile, "llvm codegen");
  auto ptx = compiler->emitPtx(module);
  if (!ptx) return ptx.error();
  c.ptx = std::move(*ptx);
  if (cache) cache->store(key, c.ptx);
  return {};
}

}  // namespace

Expected<CudaCompilation> compileForCuda(const Function& original, const CompileOptions& options, CompileCache* cache) {
  auto optimized = optimizeFunction(original, options);
  if (!optimized) return optimized.error();
  CudaCompilation c;
  c.optimized = std::move(*optimized);
  // From here on only the optimised copy: it is what the plan points into and the key hashes.
  const Function& function = *c.optimized.function;
  {
    StageTimer timer(options.profile, "plan");
    c.plan = planFunction(function);
  }
  llvm::LLVMContext context;
  // Named after the function, not the file: the same function gives the same text anywhere.
  llvm::Module module("kiln." + function.name(), context);
  module.setSourceFileName("kiln." + function.name());
  Status status = emitPtx(function, module, options, cache, c);

  // Dump what was made even when a later stage failed: the IR before the failure is the clue.
  if (!options.dumpDir.empty()) {
    const std::string& dir = options.dumpDir;
    std::pair<const char*, const std::string*> files[] = {
        {".unopt.ll", &c.unoptimizedIR}, {".opt.ll", &c.optimizedIR}, {".ptx", &c.ptx}};
    for (auto [suffix, text] : files)
      if (!text->empty()) KILN_TRY(dumpFile(dir, function.name() + suffix, *text));
    KILN_TRY(dumpKernelMap(dir, function, *c.plan));
  }
  if (!status) return status.error();
  return c;
}

}  // namespace kiln::codegen
