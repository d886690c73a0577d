// From a kiln function to an optimised LLVM module for the host CPU (plan, emit every kernel, run
// O3) for `kiln compile --target cpu`, and on to an object file through the compile cache for the
// CPU backend, which JITs it.
#pragma once

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <string>
#include <vector>

#include "codegen/compile_cache.h"
#include "codegen/compile_options.h"
#include "codegen/kernel_dedup.h"
#include "codegen/kernel_emitter.h"
#include "codegen/kernel_plan.h"
#include "codegen/optimize.h"
#include "ir/ir.h"

namespace kiln::codegen {

struct CpuCompilation {
  OptimizedFunction optimized;                // the compiled copy; declared first so it dies last
  std::unique_ptr<BlockPlan> plan;            // points into optimized.function
  std::vector<KernelError> errors;            // what the kernels' error words index
  std::unique_ptr<llvm::TargetMachine> tm;    // the host machine the module is optimised for
  std::unique_ptr<llvm::LLVMContext> context; // owns `module`; declared first so it dies last
  std::unique_ptr<llvm::Module> module;       // optimised, one kernel per plan group
  std::string unoptimizedIr;                  // LLVM IR as emitted, before O3
  KernelSymbols symbols;                      // kernels compiled as an identical one (kernel_dedup.h)
};

// Runs the pass pipeline on a copy of `function` (optimize.h), plans and emits the copy's kernels
// into one module and optimises it. With options.dumpDir set, writes NN-<pass>.kiln, kernels.txt,
// <fn>.unopt.ll, <fn>.opt.ll and <fn>.s there (codegen/dump.h).
// `kiln compile --target cpu`: --emit llvm prints printModule(*c.module) (or unoptimizedIr),
// --emit asm prints emitCpuAssembly(*c.module, *c.tm).
Expected<CpuCompilation> compileForCpu(const Function& function, const CompileOptions& options);

struct CpuObject {
  OptimizedFunction optimized;      // the compiled copy; declared first so it dies last
  std::unique_ptr<BlockPlan> plan;  // points into optimized.function
  std::vector<KernelError> errors;  // what the kernels' error words index
  std::vector<std::string> objects; // relocatable objects for this host: one per distinct kernel
  size_t objectsFromCache = 0;      // how many of them the cache had (O3 and codegen skipped)
  KernelSymbols symbols;            // kernels whose code is an identical kernel's (kernel_dedup.h)
};

// The cache keys of `function`'s host objects, one per distinct kernel (kernel_units.h): the
// kernel's emitted IR, options, and this CPU's name, features and triple. Empty if the passes fail.
std::vector<std::string> cpuObjectCacheKeys(const Function& function, const CompileOptions& options);

// Optimises, plans and emits `function` (always: the plan and error table are needed either way),
// then takes each distinct kernel's object from `cache` if it has it, and compiles the others in
// parallel (parallel_codegen.h) and stores them: a change to one layer recompiles that layer's
// kernels only. `cache` null: no cache. `refresh`: skip the lookups and overwrite the entries (the
// JIT rejected a cached object). With options.dumpDir set the whole module is compiled as one
// object on one thread, as compileForCpu does, and the cache is neither read nor written.
Expected<CpuObject> compileCpuObject(const Function& function, const CompileOptions& options, CompileCache* cache,
                                     bool refresh = false);

}  // namespace kiln::codegen
