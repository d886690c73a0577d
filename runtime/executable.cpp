// Executable::compile: compile a function for this CPU (codegen/cpu_compiler.h) and JIT it.
#include "runtime/executable.h"

#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>

#include "codegen/cpu_compiler.h"
#include "codegen/cpu_jit.h"

namespace kiln {

Executable::Executable(const Function& function, std::unique_ptr<codegen::BlockPlan> plan)
    : function_(function), plan_(std::move(plan)) {}

Executable::~Executable() = default;

std::vector<std::string> Executable::kernelNames() const {
  std::vector<std::string> names;
  for (const codegen::KernelGroup* g : plan_->allGroups()) names.push_back(g->name);
  return names;
}

Expected<std::unique_ptr<Executable>> Executable::compile(const Function& function,
                                                          const codegen::CompileOptions& options) {
  if (options.target == codegen::Target::Cuda)
    return Error(
        "running on the GPU needs the CUDA runtime (not built yet); use kiln compile --target cuda --emit ptx to "
        "see the PTX");
  auto compiled = codegen::compileForCpu(function, options);
  if (!compiled) return compiled.error();
  std::unique_ptr<Executable> exe(new Executable(function, std::move(compiled->plan)));
  exe->errors_ = std::move(compiled->errors);

  auto jit = codegen::CpuJit::create(options);
  if (!jit) return jit.error();
  exe->jit_ = std::move(*jit);
  KILN_TRY(exe->jit_->addModule(llvm::orc::ThreadSafeModule(std::move(compiled->module), std::move(compiled->context))));
  for (const codegen::KernelGroup* group : exe->plan_->allGroups()) {
    auto fn = exe->jit_->lookup(group->name);
    if (!fn) return fn.error();
    exe->kernels_[group] = *fn;
  }
  return exe;
}

}  // namespace kiln
