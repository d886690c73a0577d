// A module's kernels as units of their own: each exported kernel, with the internal functions and
// tables it uses and the declarations it calls, in a module of its own written as bitcode. A unit
// is what the compile cache keys and what a compile thread takes, so changing one layer of a model
// recompiles the kernels whose code changed and no other, and distinct kernels compile in parallel.
#pragma once

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <memory>
#include <string>
#include <vector>

#include "ir/status.h"

namespace kiln::codegen {

struct KernelUnit {
  std::string kernel;                 // the exported kernel it defines
  std::string bitcode;                // its module: target triple and data layout of the source
  std::vector<std::string> declared;  // the functions it calls but does not define (libm, libdevice)
};

// One unit per exported function definition of `module`, in module order. Internal globals used by
// two kernels are copied into both units (each keeps it internal). A unit's bitcode depends only on
// its own code, so an unchanged kernel gives byte-identical bitcode in any module.
std::vector<KernelUnit> splitKernelUnits(const llvm::Module& module);

// The unit's module, read into `context` (one context per thread).
Expected<std::unique_ptr<llvm::Module>> readUnit(const KernelUnit& unit, llvm::LLVMContext& context);

}  // namespace kiln::codegen
