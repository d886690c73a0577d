// compileForCpu and compileCpuObject: plan, emit, optimise (and dump) a function for the host
// CPU, the latter kernel by kernel through the compile cache.
#include "codegen/cpu_compiler.h"

#include "codegen/cpu_jit.h"
#include "codegen/cpu_target.h"
#include "codegen/dump.h"
#include "codegen/parallel_codegen.h"
#include "ir/compile_profile.h"

namespace kiln::codegen {

namespace {

// Passes, plan and emit; with a dump dir, write the passes' IR, kernels.txt and the unoptimised IR.
// Everything after the passes works on the optimised copy, never on the caller's function.
// `printIr`: keep the emitted module's text (for stages and dumps; the runtime does not need it).
Expected<CpuCompilation> emitForCpu(const Function& original, const CompileOptions& options, bool printIr) {
  CpuCompilation c;
  auto optimized = optimizeFunction(original, options);
  if (!optimized) return optimized.error();
  c.optimized = std::move(*optimized);
  const Function& function = *c.optimized.function;
  {
    StageTimer timer(options.profile, "plan");
    c.plan = planFunction(function);
  }
  countInProfile(options.profile, "kernels", c.plan->allGroups().size());
  auto tm = createHostTargetMachine(options);
  if (!tm) return tm.error();
  c.tm = std::move(*tm);
  c.context = std::make_unique<llvm::LLVMContext>();
  c.module = std::make_unique<llvm::Module>("kiln." + function.name(), *c.context);
  configureModule(*c.module, *c.tm);
  CpuTarget target(options.fastMath);
  {
    StageTimer timer(options.profile, "llvm emit");
    c.errors = emitKernels(*c.module, target, *c.plan);
    c.symbols = deduplicateKernels(*c.module, c.plan->allGroups());
    if (printIr) c.unoptimizedIr = printModule(*c.module);
  }
  // The dump layout is codegen/dump.h's, shared with the NVPTX path.
  if (!options.dumpDir.empty()) {
    KILN_TRY(dumpKernelMap(options.dumpDir, function, *c.plan));
    KILN_TRY(dumpFile(options.dumpDir, function.name() + ".unopt.ll", c.unoptimizedIr));
  }
  return c;
}

// O3; with a dump dir, write the optimised IR and the host assembly.
Status optimizeForCpu(const Function& function, const CompileOptions& options, CpuCompilation& c) {
  {
    StageTimer timer(options.profile, "llvm optimize");
    KILN_TRY(optimizeModule(*c.module, *c.tm));
  }
  if (!options.dumpDir.empty()) {
    KILN_TRY(dumpFile(options.dumpDir, function.name() + ".opt.ll", printModule(*c.module)));
    auto assembly = emitCpuAssembly(*c.module, *c.tm);
    if (!assembly) return assembly.error();
    KILN_TRY(dumpFile(options.dumpDir, function.name() + ".s", *assembly));
  }
  return {};
}

}  // namespace

Expected<CpuCompilation> compileForCpu(const Function& function, const CompileOptions& options) {
  auto c = emitForCpu(function, options, /*printIr=*/true);
  if (!c) return c.error();
  KILN_TRY(optimizeForCpu(function, options, *c));
  return c;
}

namespace {

// Each kernel's object is keyed by its unit's bitcode and this CPU: a kiln whose emitter changed,
// or another machine, never reuses an object made from other IR or for another CPU.
std::vector<std::string> objectKeys(const std::vector<KernelUnit>& units, const CompileOptions& options) {
  std::string artifact = "cpu-object " + hostCpuDescription();
  std::vector<std::string> keys;
  for (const KernelUnit& unit : units) keys.push_back(unitCacheKey(options, artifact, unit.bitcode));
  return keys;
}

// One thread's compiler: O3 and an object file, with a TargetMachine of its own.
Expected<UnitCompiler> makeObjectCompiler(const CompileOptions& options) {
  auto tm = createHostTargetMachine(options);
  if (!tm) return tm.error();
  std::shared_ptr<llvm::TargetMachine> machine = std::move(*tm);
  return UnitCompiler([machine](llvm::Module& unit) -> Expected<std::string> {
    KILN_TRY(optimizeModule(unit, *machine));
    return emitCpuObject(unit, *machine);
  });
}

}  // namespace

std::vector<std::string> cpuObjectCacheKeys(const Function& function, const CompileOptions& options) {
  auto c = emitForCpu(function, options, /*printIr=*/false);
  return c ? objectKeys(splitKernelUnits(*c->module), options) : std::vector<std::string>();
}

Expected<CpuObject> compileCpuObject(const Function& function, const CompileOptions& options, CompileCache* cache,
                                     bool refresh) {
  // Plan and emit always run: they are cheap next to O3 and codegen, and give the error table.
  auto c = emitForCpu(function, options, /*printIr=*/!options.dumpDir.empty());
  if (!c) return c.error();
  CpuObject result;
  result.optimized = std::move(c->optimized);
  result.plan = std::move(c->plan);
  result.errors = std::move(c->errors);
  result.symbols = std::move(c->symbols);
  if (!options.dumpDir.empty()) {
    // A dump shows the function's optimised IR and assembly whole: one module, one thread, and
    // no cache, so that every stage is dumped.
    KILN_TRY(optimizeForCpu(function, options, *c));
    StageTimer timer(options.profile, "llvm codegen");
    auto object = emitCpuObject(*c->module, *c->tm);
    if (!object) return object.error();
    result.objects.push_back(std::move(*object));
    return result;
  }
  std::vector<KernelUnit> units;
  std::vector<std::string> keys;
  {
    StageTimer timer(options.profile, "cache key");
    units = splitKernelUnits(*c->module);
    if (cache) keys = objectKeys(units, options);
    else keys.resize(units.size());
  }
  // Each kernel is looked up on its own; the misses split over every core.
  StageTimer timer(options.profile, "llvm optimize + codegen (parallel)");
  auto compiled =
      compileUnits(units, keys, cache, refresh, [&] { return makeObjectCompiler(options); }, options.profile);
  if (!compiled) return compiled.error();
  result.objects = std::move(compiled->artifacts);
  result.objectsFromCache = compiled->fromCache;
  return result;
}

}  // namespace kiln::codegen
