// One function through plan -> LLVM IR -> O3 -> PTX or host assembly, keeping every stage.
#include "codegen/compile_stages.h"

#include "codegen/cpu_compiler.h"
#include "codegen/cpu_target.h"
#include "codegen/cuda_compiler.h"
#include "ir/compile_profile.h"
#include "ir/printer.h"

namespace kiln::codegen {

namespace {

// The CPU path is the CPU backend's own (cpu_compiler.h), which also writes its dumps.
Expected<CompiledStages> compileCpuStages(const Function& function, const CompileOptions& options) {
  auto c = compileForCpu(function, options);
  if (!c) return c.error();
  CompiledStages stages;
  stages.kiln = kiln::printFunction(*c->optimized.function, kSummaryPrint);
  for (const KernelGroup* group : c->plan->allGroups()) stages.kernels.push_back(group->name);
  stages.errors = c->errors;
  stages.symbols = c->symbols;
  stages.unoptimizedIR = c->unoptimizedIr;
  stages.optimizedIR = printModule(*c->module);
  StageTimer timer(options.profile, "llvm codegen");
  auto assembly = emitCpuAssembly(*c->module, *c->tm);
  if (!assembly) return assembly.error();
  stages.code = std::move(*assembly);
  return stages;
}

}  // namespace

Expected<CompiledStages> compileStages(const Function& original, const CompileOptions& options, CompileCache* cache) {
  if (options.target == Target::Cpu) return compileCpuStages(original, options);
  auto c = compileForCuda(original, options, cache, PtxLayout::Whole);
  if (!c) return c.error();
  CompiledStages stages;
  stages.kiln = kiln::printFunction(*c->optimized.function, kSummaryPrint);
  for (const KernelGroup* group : c->plan->allGroups()) stages.kernels.push_back(group->name);
  stages.errors = std::move(c->errors);
  stages.symbols = std::move(c->symbols);
  stages.unoptimizedIR = std::move(c->unoptimizedIR);
  stages.optimizedIR = std::move(c->optimizedIR);
  stages.code = std::move(c->modules.at(0).ptx);
  return stages;
}

}  // namespace kiln::codegen
