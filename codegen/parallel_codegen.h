// A function's kernel units (kernel_units.h) through the compile cache and onto every core: each
// unit's artifact (an object file, PTX) is looked up under its own key, and the misses compile in
// parallel, each thread with its own LLVM context and TargetMachine.
#pragma once

#include <llvm/IR/Module.h>

#include <functional>
#include <string>
#include <vector>

#include "codegen/compile_cache.h"
#include "codegen/kernel_units.h"
#include "ir/compile_profile.h"
#include "ir/status.h"

namespace kiln::codegen {

// Optimises one unit's module (read into the calling thread's context) and generates its artifact.
using UnitCompiler = std::function<Expected<std::string>(llvm::Module& unit)>;
// Makes one thread's UnitCompiler: TargetMachines are not shared between threads.
using UnitCompilerFactory = std::function<Expected<UnitCompiler>()>;

struct CompiledUnits {
  std::vector<std::string> artifacts;  // one per unit, in unit order
  size_t fromCache = 0;                // how many of them the cache had
};

// Looks every unit up in `cache` by `keys[i]` (null cache: none; `refresh`: look nothing up, as
// when a cached artifact was rejected), compiles the rest on up to the machine's core count of
// threads and stores them. The first failing unit, in unit order, gives the error. `profile`
// (may be null) counts the "distinct kernels" and the "kernels from the cache".
Expected<CompiledUnits> compileUnits(const std::vector<KernelUnit>& units, const std::vector<std::string>& keys,
                                     CompileCache* cache, bool refresh, const UnitCompilerFactory& makeCompiler,
                                     CompileProfile* profile);

}  // namespace kiln::codegen
