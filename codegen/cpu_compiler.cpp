// compileForCpu and compileCpuObject: plan, emit, optimise (and dump) a function for the host
// CPU, the latter through the compile cache.
#include "codegen/cpu_compiler.h"

#include <algorithm>
#include <thread>

#include "codegen/cpu_jit.h"
#include "codegen/cpu_target.h"
#include "codegen/dump.h"
#include "codegen/parallel_codegen.h"
#include "ir/compile_profile.h"

namespace kiln::codegen {

namespace {

// Passes, plan and emit; with a dump dir, write the passes' IR, kernels.txt and the unoptimised IR.
// Everything after the passes works on the optimised copy, never on the caller's function.
Expected<CpuCompilation> emitForCpu(const Function& original, const CompileOptions& options) {
  CpuCompilation c;
  auto optimized = optimizeFunction(original, options);
  if (!optimized) return optimized.error();
  c.optimized = std::move(*optimized);
  const Function& function = *c.optimized.function;
  {
    StageTimer timer(options.profile, "plan");
    c.plan = planFunction(function);
  }
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
    c.unoptimizedIr = printModule(*c.module);
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
  auto c = emitForCpu(function, options);
  if (!c) return c.error();
  KILN_TRY(optimizeForCpu(function, options, *c));
  return c;
}

namespace {
// The emitted LLVM IR is part of the key: a kiln whose emitter changed must not reuse objects
// compiled from the old IR, even for the same kiln text.
std::string objectKey(const Function& function, const CompileOptions& options, const std::string& emittedIr) {
  return cacheKey(function, options, "cpu-object " + hostCpuDescription() + "\n" + emittedIr);
}
}  // namespace

std::string cpuObjectCacheKey(const Function& function, const CompileOptions& options) {
  auto c = emitForCpu(function, options);
  return c ? objectKey(*c->optimized.function, options, c->unoptimizedIr) : std::string();
}

Expected<CpuObject> compileCpuObject(const Function& function, const CompileOptions& options, CompileCache* cache,
                                     bool refresh) {
  // Plan and emit always run: they are cheap next to O3 and codegen, and give the error table.
  auto c = emitForCpu(function, options);
  if (!c) return c.error();
  CpuObject result;
  // The key hashes the optimised copy: what was planned and emitted.
  std::string key;
  if (cache) {
    StageTimer timer(options.profile, "cache key");
    key = objectKey(*c->optimized.function, options, c->unoptimizedIr);
  }
  result.optimized = std::move(c->optimized);
  result.plan = std::move(c->plan);
  result.errors = std::move(c->errors);
  result.symbols = std::move(c->symbols);
  // With a dump dir the cache is not read, so that every stage is dumped; the result is stored.
  if (cache && !refresh && options.dumpDir.empty()) {
    if (auto hit = cache->lookup(key)) {
      result.object = std::move(*hit);
      result.fromCache = true;
      return result;
    }
  }
  if (!options.dumpDir.empty()) {
    // A dump shows the function's optimised IR and assembly whole: one module, one thread.
    KILN_TRY(optimizeForCpu(function, options, *c));
    StageTimer timer(options.profile, "llvm codegen");
    auto object = emitCpuObject(*c->module, *c->tm);
    if (!object) return object.error();
    result.object = std::move(*object);
  } else {
    // The kernels split over every core, each part O3'd and compiled in its own context.
    StageTimer timer(options.profile, "llvm optimize + codegen (parallel)");
    auto objects = compileCpuObjects(*c->module, options, std::max(1u, std::thread::hardware_concurrency()));
    if (!objects) return objects.error();
    result.object = packObjects(*objects);
  }
  if (cache) cache->store(key, result.object);
  return result;
}

}  // namespace kiln::codegen
