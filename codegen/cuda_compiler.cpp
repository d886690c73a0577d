// One function through plan -> LLVM IR -> libdevice + O3 -> PTX (cuda_compiler.h).
#include "codegen/cuda_compiler.h"

#include <llvm/IR/LLVMContext.h>

#include "codegen/cpu_target.h"  // printModule
#include "codegen/dump.h"
#include "codegen/kernel_units.h"
#include "codegen/nvptx_compiler.h"
#include "codegen/nvptx_target.h"
#include "codegen/parallel_codegen.h"
#include "ir/compile_profile.h"

namespace kiln::codegen {

namespace {

// The names of the kernels the module still defines after deduplication, in plan order.
std::vector<std::string> distinctKernels(const CudaCompilation& c) {
  std::vector<std::string> names;
  for (const KernelGroup* group : c.plan->allGroups())
    if (!c.symbols.count(group->name)) names.push_back(group->name);
  return names;
}

// The whole module as one PTX text. It comes from `cache` when it has it (the text is
// deterministic, so a hit gives the same bytes), skipping libdevice linking, O3 and codegen;
// optimizedIR stays empty then.
Status compileWhole(const Function& function, llvm::Module& module, const NvptxCompiler& compiler,
                    const CompileOptions& options, CompileCache* cache, CudaCompilation& c) {
  // The PTX also depends on the libdevice linked in. Without one, compile (and fail) uncached.
  auto libdevice = cache ? libdeviceFingerprint(module) : Expected<std::string>(std::string());
  if (!libdevice) cache = nullptr;
  // The emitted IR is part of the key, so PTX from an older emitter is never reused.
  std::string key;
  if (cache) {
    StageTimer timer(options.profile, "cache key");
    key = cacheKey(function, options, "ptx " + *libdevice + "\n" + c.unoptimizedIR);
  }
  PtxModule whole;
  whole.kernels = distinctKernels(c);
  if (cache && options.dumpDir.empty()) {
    if (auto hit = cache->lookup(key)) {
      whole.ptx = std::move(*hit);
      c.modules.push_back(std::move(whole));
      c.modulesFromCache = 1;
      return {};
    }
  }
  {
    StageTimer timer(options.profile, "llvm optimize");
    KILN_TRY(compiler.optimize(module));
    c.optimizedIR = printModule(module);
  }
  StageTimer timer(options.profile, "llvm codegen");
  auto ptx = compiler.emitPtx(module);
  if (!ptx) return ptx.error();
  whole.ptx = std::move(*ptx);
  if (cache) cache->store(key, whole.ptx);
  c.modules.push_back(std::move(whole));
  return {};
}

// One module per distinct kernel: each looked up under its own key, the misses compiled in parallel.
Status compilePerKernel(const llvm::Module& module, const CompileOptions& options, CompileCache* cache,
                        CudaCompilation& c) {
  std::vector<KernelUnit> units;
  std::vector<std::string> keys;
  {
    StageTimer timer(options.profile, "cache key");
    units = splitKernelUnits(module);
    for (const KernelUnit& unit : units) {
      // A unit that needs libdevice when there is none compiles (and fails) uncached.
      auto libdevice = cache ? libdeviceFingerprint(unit.declared) : Expected<std::string>(std::string());
      keys.push_back(cache && libdevice ? unitCacheKey(options, "ptx " + *libdevice, unit.bitcode) : std::string());
    }
  }
  StageTimer timer(options.profile, "llvm optimize + codegen (parallel)");
  auto compiled = compileUnits(units, keys, cache, /*refresh=*/false, [&]() -> Expected<UnitCompiler> {
    auto compiler = NvptxCompiler::create(options);
    if (!compiler) return compiler.error();
    auto shared = std::make_shared<NvptxCompiler>(std::move(*compiler));
    return UnitCompiler([shared](llvm::Module& unit) -> Expected<std::string> {
      KILN_TRY(shared->optimize(unit));
      return shared->emitPtx(unit);
    });
  }, options.profile);
  if (!compiled) return compiled.error();
  for (size_t u = 0; u < units.size(); ++u)
    c.modules.push_back(PtxModule{std::move(compiled->artifacts[u]), {units[u].kernel}});
  c.modulesFromCache = compiled->fromCache;
  return {};
}

}  // namespace

Expected<CudaCompilation> compileForCuda(const Function& original, const CompileOptions& options, CompileCache* cache,
                                         PtxLayout layout) {
  if (!options.dumpDir.empty()) layout = PtxLayout::Whole;
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
  countInProfile(options.profile, "kernels", c.plan->allGroups().size());
  auto compiler = NvptxCompiler::create(options);
  if (!compiler) return compiler.error();
  llvm::LLVMContext context;
  // Named after the function, not the file: the same function gives the same text anywhere.
  llvm::Module module("kiln." + function.name(), context);
  module.setSourceFileName("kiln." + function.name());
  compiler->configure(module);
  {
    StageTimer timer(options.profile, "llvm emit");
    NvptxTarget target(options.fastMath, compiler->arch().version);
    c.errors = emitKernels(module, target, *c.plan);
    c.symbols = deduplicateKernels(module, c.plan->allGroups());
    if (layout == PtxLayout::Whole) c.unoptimizedIR = printModule(module);
  }
  Status status = layout == PtxLayout::Whole ? compileWhole(function, module, *compiler, options, cache, c)
                                             : compilePerKernel(module, options, cache, c);

  // Dump what was made even when a later stage failed: the IR before the failure is the clue.
  if (!options.dumpDir.empty()) {
    const std::string& dir = options.dumpDir;
    std::string ptx = c.modules.empty() ? std::string() : c.modules[0].ptx;
    std::pair<const char*, const std::string*> files[] = {
        {".unopt.ll", &c.unoptimizedIR}, {".opt.ll", &c.optimizedIR}, {".ptx", &ptx}};
    for (auto [suffix, text] : files)
      if (!text->empty()) KILN_TRY(dumpFile(dir, function.name() + suffix, *text));
    KILN_TRY(dumpKernelMap(dir, function, *c.plan));
  }
  if (!status) return status.error();
  return c;
}

}  // namespace kiln::codegen
