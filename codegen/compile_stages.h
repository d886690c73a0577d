// Compiling one function for a target with every stage kept as text: what `kiln compile --emit`
// prints and what --dump-dir writes. (Running code goes through the runtime's Executable.)
#pragma once

#include <string>
#include <vector>

#include "codegen/compile_cache.h"
#include "codegen/compile_options.h"
#include "codegen/kernel_dedup.h"
#include "codegen/kernel_emitter.h"
#include "ir/ir.h"

namespace kiln::codegen {

struct CompiledStages {
  std::string kiln;           // the function after the pass pipeline (what was planned)
  std::string unoptimizedIR;  // LLVM IR as the kernel emitter produced it
  std::string optimizedIR;    // after libdevice linking (cuda) and O3; empty when the PTX was cached
  std::string code;           // PTX (cuda) or host assembly (cpu)
  std::vector<std::string> kernels;  // kernel names, in plan order
  KernelSymbols symbols;             // kernels compiled as an identical earlier one (kernel_dedup.h)
  std::vector<KernelError> errors;   // the error table the kernels' status words index
};

// Runs the pass pipeline on a copy of `function` (optimize.h; the caller's function is untouched),
// plans the copy, emits its kernels into one LLVM module for options.target, optimises it and
// generates code. With options.dumpDir set, also writes NN-<pass>.kiln, <fn>.unopt.ll, <fn>.opt.ll,
// <fn>.ptx or <fn>.s and the function's kernels.txt entry there (00-input.kiln is the caller's: dumpInput).
// Cuda: the PTX is looked up in and stored to `cache` (null: none), except that with a dump dir
// it is not looked up, so the dump is complete; a caller that needs optimizedIR passes null. The
// CPU path caches nothing here (its object cache is the CPU backend's: cpu_compiler.h).
Expected<CompiledStages> compileStages(const Function& function, const CompileOptions& options,
                                       CompileCache* cache = &CompileCache::global());

}  // namespace kiln::codegen
