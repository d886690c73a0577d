// From a kiln function to an optimised LLVM module for the host CPU: plan, emit every kernel,
// run O3. Shared by the CPU backend (which then JITs the module) and `kiln compile --target cpu`.
#pragma once

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <string>
#include <vector>

#include "codegen/compile_options.h"
#include "codegen/kernel_emitter.h"
#include "codegen/kernel_plan.h"
#include "ir/ir.h"

namespace kiln::codegen {

struct CpuCompilation {
  std::unique_ptr<BlockPlan> plan;            // points into the compiled Function
  std::vector<KernelError> errors;            // what the kernels' error words index
  std::unique_ptr<llvm::TargetMachine> tm;    // the host machine the module is optimised for
  std::unique_ptr<llvm::LLVMContext> context; // owns `module`; declared first so it dies last
  std::unique_ptr<llvm::Module> module;       // optimised, one kernel per plan group
  std::string unoptimizedIr;                  // LLVM IR as emitted, before O3
};

// Plans and emits `function`'s kernels into one module and optimises it. With options.dumpDir
// set, writes kernels.txt, <fn>.unopt.ll, <fn>.opt.ll and <fn>.s there (codegen/dump.h).
// `kiln compile --target cpu`: --emit llvm prints printModule(*c.module) (or unoptimizedIr),
// --emit asm prints emitCpuAssembly(*c.module, *c.tm).
Expected<CpuCompilation> compileForCpu(const Function& function, const CompileOptions& options);

}  // namespace kiln::codegen
