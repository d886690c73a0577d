// From a kiln function to PTX for the CUDA backend: the pass pipeline on a copy, the kernel
// plan, one LLVM module with every kernel, libdevice + O3, and LLVM's NVPTX code generator, with
// the PTX cached by content. `kiln compile --target cuda` and the CUDA runtime both come here.
#pragma once

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

struct CudaCompilation {
  OptimizedFunction optimized;      // the compiled copy; declared first so it dies last
  std::unique_ptr<BlockPlan> plan;  // points into optimized.function
  std::vector<KernelError> errors;  // what the kernels' error words index
  std::string unoptimizedIR;        // LLVM IR as the kernel emitter produced it
  std::string optimizedIR;          // after libdevice and O3; empty when the PTX came from the cache
  std::string ptx;                  // one .entry per distinct kernel, named KernelGroup::name
  KernelSymbols symbols;            // kernels whose .entry is an identical kernel's (kernel_dedup.h)
};

// Optimises and plans `function`, emits its kernels for options.gpuArch and generates PTX. The PTX
// is looked up in and stored to `cache` (null: none), keyed by the emitted LLVM IR and libdevice's
// identity; with options.dumpDir set it is not looked up (so the dump is complete) and every stage
// is written there, also when a later stage failed.
Expected<CudaCompilation> compileForCuda(const Function& function, const CompileOptions& options, CompileCache* cache);

}  // namespace kiln::codegen
