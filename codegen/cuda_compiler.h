// From a kiln function to PTX for the CUDA backend: the pass pipeline on a copy, the kernel
// plan, the kernels emitted into an LLVM module, libdevice + O3, and LLVM's NVPTX code generator,
// with the PTX cached by content. `kiln compile --target cuda` and the CUDA runtime both come here.
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

// One PTX module (what cuModuleLoadData takes) and the .entry points it defines.
struct PtxModule {
  std::string ptx;
  std::vector<std::string> kernels;
};

struct CudaCompilation {
  OptimizedFunction optimized;      // the compiled copy; declared first so it dies last
  std::unique_ptr<BlockPlan> plan;  // points into optimized.function
  std::vector<KernelError> errors;  // what the kernels' error words index
  std::string unoptimizedIR;        // LLVM IR as the kernel emitter produced it (whole layout only)
  std::string optimizedIR;          // after libdevice and O3 (whole layout, and not from the cache)
  std::vector<PtxModule> modules;   // every distinct kernel's .entry, named KernelGroup::name
  size_t modulesFromCache = 0;      // how many modules the cache had
  KernelSymbols symbols;            // kernels whose .entry is an identical kernel's (kernel_dedup.h)
};

enum class PtxLayout {
  // One module per distinct kernel, each cached under its own key (kernel_units.h) and the misses
  // compiled in parallel: what the runtime loads, so changing one layer recompiles one kernel.
  PerKernel,
  // The whole function as one module, cached under the function's key, with unoptimizedIR and
  // optimizedIR kept: what `kiln compile --emit` prints.
  Whole,
};

// Optimises and plans `function`, emits its kernels for options.gpuArch and generates PTX in
// `layout`, looked up in and stored to `cache` (null: none), keyed by the emitted LLVM IR and
// libdevice's identity. With options.dumpDir set the layout is Whole, the cache is not read (so
// the dump is complete), and every stage is written there, also when a later stage failed.
Expected<CudaCompilation> compileForCuda(const Function& function, const CompileOptions& options, CompileCache* cache,
                                         PtxLayout layout = PtxLayout::PerKernel);

}  // namespace kiln::codegen
