// A function compiled for the host CPU: generated kernels in an LLVM ORC JIT, and the plan that
// says in which order to run them (with `map` and `while` driven by the host over their regions).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/compile_cache.h"
#include "codegen/compile_options.h"
#include "codegen/cpu_target.h"
#include "codegen/kernel_emitter.h"
#include "codegen/kernel_plan.h"
#include "ir/ir.h"
#include "ir/tensor.h"
#include "runtime/buffer_plan.h"

namespace kiln {

namespace codegen {
class CpuJit;
}

struct ExecuteOptions {
  // A `while` that runs longer than this stops with an error instead of hanging.
  int64_t maxWhileIterations = 10'000'000;
};

// The Executable compiles and owns an optimised copy of the Function it is given (its plan names
// the copy's ops and values); the caller's Function is never changed and need not outlive it.
// run() may be called any number of times, also from several threads at once (each call allocates
// its own arena, laid out by bufferPlan()).
class Executable {
 public:
  // Runs the pass pipeline on a copy of `function` (all of passes::defaultPipeline() minus
  // options.disabledPasses; codegen/optimize.h), plans the copy, emits one LLVM module with all its kernels, optimises it (O3 for this
  // CPU), generates an object file and links it into a JIT. The object comes from `cache` when it
  // holds one for this function, options and CPU (skipping O3 and codegen) and is stored there
  // otherwise; a cached object the JIT cannot load is recompiled and replaced. `cache` null: no
  // caching. Target::Cuda is not runnable yet and gives an error that says what to use instead.
  // With options.dumpDir set, writes the IR after each pass, the LLVM IR before and after
  // optimisation and the host assembly there (the cache is not read then, so the dump is complete).
  static Expected<std::unique_ptr<Executable>> compile(const Function& function,
                                                       const codegen::CompileOptions& options,
                                                       codegen::CompileCache* cache = &codegen::CompileCache::global());
  ~Executable();

  // Runs the function on `inputs` (one per parameter, with its exact type) and returns the
  // results. Run-time errors (a gather index out of range, an integer division by zero, ...) name
  // the op and its source location, as the interpreter's do.
  Expected<std::vector<Tensor>> run(const std::vector<Tensor>& inputs, const ExecuteOptions& options = {}) const;

  // The optimised copy that was compiled (same name, parameters and source locations).
  const Function& function() const { return *function_; }
  // The kernels, in the order the plan runs them (nested regions depth first).
  std::vector<std::string> kernelNames() const;
  // Where each intermediate value lives in a run's one arena (computed once, at compile time).
  const BufferPlan& bufferPlan() const { return bufferPlan_; }

 private:
  friend class ExecutionContext;
  Executable(std::unique_ptr<Module> module, const Function* function, std::unique_ptr<codegen::BlockPlan> plan);

  std::unique_ptr<Module> module_;  // owns function_; declared first so the plan dies before it
  const Function* function_;
  std::unique_ptr<codegen::BlockPlan> plan_;
  BufferPlan bufferPlan_;  // of plan_
  std::unique_ptr<codegen::CpuJit> jit_;
  std::unordered_map<const codegen::KernelGroup*, codegen::CpuKernelFn> kernels_;
  std::vector<codegen::KernelError> errors_;
};

}  // namespace kiln
