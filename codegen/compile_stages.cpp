// One function through plan -> LLVM IR -> O3 -> PTX or host assembly, keeping every stage.
#include "codegen/compile_stages.h"

#include <llvm/IR/LLVMContext.h>

#include "codegen/cpu_target.h"
#include "codegen/dump.h"
#include "codegen/kernel_plan.h"
#include "codegen/nvptx_compiler.h"
#include "codegen/nvptx_target.h"

namespace kiln::codegen {

namespace {

// The target-specific half: configure the module, emit, optimise, generate code.
Status compileForCuda(llvm::Module& module, const BlockPlan& plan, const CompileOptions& options,
                      CompiledStages& stages) {
  auto compiler = NvptxCompiler::create(options);
  if (!compiler) return compiler.error();
  compiler->configure(module);
  NvptxTarget target(options.fastMath);
  stages.errors = emitKernels(module, target, plan);
  stages.unoptimizedIR = printModule(module);
  KILN_TRY(compiler->optimize(module));
  stages.optimizedIR = printModule(module);
  auto ptx = compiler->emitPtx(module);
  if (!ptx) return ptx.error();
  stages.code = std::move(*ptx);
  return {};
}

Status compileForCpu(llvm::Module& module, const BlockPlan& plan, const CompileOptions& options,
                     CompiledStages& stages) {
  auto tm = createHostTargetMachine(options);
  if (!tm) return tm.error();
  configureModule(module, **tm);
  CpuTarget target(options.fastMath);
  stages.errors = emitKernels(module, target, plan);
  stages.unoptimizedIR = printModule(module);
  KILN_TRY(optimizeModule(module, **tm));
  stages.optimizedIR = printModule(module);
  auto assembly = emitCpuAssembly(module, **tm);
  if (!assembly) return assembly.error();
  stages.code = std::move(*assembly);
  return {};
}

}  // namespace

Expected<CompiledStages> compileStages(const Function& function, const CompileOptions& options) {
  std::unique_ptr<BlockPlan> plan = planFunction(function);
  CompiledStages stages;
  for (const KernelGroup* group : plan->allGroups()) stages.kernels.push_back(group->name);
  llvm::LLVMContext context;
  // Named after the function, not the file: the same function gives the same text anywhere.
  llvm::Module module("kiln." + function.name(), context);
  module.setSourceFileName("kiln." + function.name());
  bool cuda = options.target == Target::Cuda;
  Status status = cuda ? compileForCuda(module, *plan, options, stages) : compileForCpu(module, *plan, options, stages);

  // Dump what was made even when a later stage failed: the IR before the failure is the clue.
  if (!options.dumpDir.empty()) {
    const std::string& dir = options.dumpDir;
    std::pair<const char*, const std::string*> files[] = {
        {".unopt.ll", &stages.unoptimizedIR}, {".opt.ll", &stages.optimizedIR}, {cuda ? ".ptx" : ".s", &stages.code}};
    for (auto [suffix, text] : files)
      if (!text->empty()) KILN_TRY(dumpFile(dir, function.name() + suffix, *text));
    KILN_TRY(dumpKernelMap(dir, function, *plan));
  }
  if (!status) return status.error();
  return stages;
}

}  // namespace kiln::codegen
