// compileForCpu: plan, emit, optimise (and dump) a function for the host CPU.
#include "codegen/cpu_compiler.h"

#include "codegen/cpu_target.h"
#include "codegen/dump.h"

namespace kiln::codegen {

Expected<CpuCompilation> compileForCpu(const Function& function, const CompileOptions& options) {
  CpuCompilation c;
  c.plan = planFunction(function);
  auto tm = createHostTargetMachine(options);
  if (!tm) return tm.error();
  c.tm = std::move(*tm);
  c.context = std::make_unique<llvm::LLVMContext>();
  c.module = std::make_unique<llvm::Module>("kiln." + function.name(), *c.context);
  configureModule(*c.module, *c.tm);
  CpuTarget target(options.fastMath);
  c.errors = emitKernels(*c.module, target, *c.plan);
  c.unoptimizedIr = printModule(*c.module);

  // The dump layout is codegen/dump.h's, shared with the NVPTX path.
  const std::string& dump = options.dumpDir;
  if (!dump.empty()) {
    KILN_TRY(dumpKernelMap(dump, function, *c.plan));
    KILN_TRY(dumpFile(dump, function.name() + ".unopt.ll", c.unoptimizedIr));
  }
  KILN_TRY(optimizeModule(*c.module, *c.tm));
  if (!dump.empty()) {
    KILN_TRY(dumpFile(dump, function.name() + ".opt.ll", printModule(*c.module)));
    auto assembly = emitCpuAssembly(*c.module, *c.tm);
    if (!assembly) return assembly.error();
    KILN_TRY(dumpFile(dump, function.name() + ".s", *assembly));
  }
  return c;
}

}  // namespace kiln::codegen
