// The compile pipeline's front half: the passes of passes::defaultPipeline() run on a copy of the
// function, so that the caller's function stays as written (the runtime re-interprets a failed
// kernel's ops, and users keep their graph). Every compile path (compileStages, the CPU backend,
// Executable::compile, `kiln explain`) plans and emits the copy this returns.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "codegen/compile_options.h"
#include "ir/ir.h"
#include "passes/pass.h"

namespace kiln::codegen {

struct OptimizedFunction {
  std::unique_ptr<Module> module;       // owns `function`; plans point into it, so keep it alive
  Function* function = nullptr;         // the optimised copy (same name, parameters and locations)
  std::vector<passes::Remark> remarks;  // every pass's remarks, in pipeline order
};

// The names `disabledPasses` accepts: the registered passes, those of the default pipeline that
// are not registered yet, and "all". Unknown names give "unknown pass 'x' (passes: ..., all)".
Status checkDisabledPasses(const std::vector<std::string>& names);

// The passes that run for `disabled` on `target`: its defaultPipeline() in order (the GPU's adds
// split-reductions), minus the disabled ones and minus names not registered (yet), so a pipeline
// that names a pass before it lands still works.
Expected<std::vector<std::string>> enabledPasses(const std::vector<std::string>& disabled, Target target);

// Clones `function` into a new module and runs enabledPasses(options.disabledPasses) on it, the
// verifier after each. With options.dumpDir set, writes NN-<pass>.kiln there after each pass
// (01 follows dumpInput's 00-input.kiln).
Expected<OptimizedFunction> optimizeFunction(const Function& function, const CompileOptions& options);

}  // namespace kiln::codegen
