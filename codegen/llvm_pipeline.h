// LLVM's O3 pipeline (new pass manager) for one target, shared by the CPU and NVPTX compilers.
#pragma once

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

namespace kiln::codegen {

struct PipelineSettings {
  bool loopVectorize = true;  // CPU: vectorise loops for the host's SIMD width
  bool slpVectorize = true;   // straight-line vectorisation (both targets)
  // Let the TargetMachine add its own passes (NVPTX: NVVMReflect and NVVMIntrRange at the start).
  bool targetCallbacks = false;
  // Library info with vector variants of math functions (CPU: codegen/vector_math.h); null: the
  // triple's default.
  const llvm::TargetLibraryInfoImpl* libraryInfo = nullptr;
};

// Runs O3 on `module` with `tm`'s analyses (TargetTransformInfo: vector widths and costs).
void runO3(llvm::Module& module, llvm::TargetMachine& tm, const PipelineSettings& settings);

}  // namespace kiln::codegen
