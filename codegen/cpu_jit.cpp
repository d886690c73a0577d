// The host JIT (ORC LLJIT) and the host machine description shared with the optimiser.
#include "codegen/cpu_jit.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/TargetParser/Host.h>

namespace kiln::codegen {

llvm::orc::JITTargetMachineBuilder hostMachineBuilder(const CompileOptions& options) {
  initializeHostTarget();
  llvm::orc::JITTargetMachineBuilder jtmb{llvm::Triple(llvm::sys::getProcessTriple())};
  jtmb.setCPU(llvm::sys::getHostCPUName().str());
  std::vector<std::string> features;
  for (const auto& feature : llvm::sys::getHostCPUFeatures())
    features.push_back((feature.second ? "+" : "-") + feature.first().str());
  // Sorted so that the same machine always gives the same feature string (and assembly).
  std::sort(features.begin(), features.end());
  jtmb.addFeatures(features);
  jtmb.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  llvm::TargetOptions targetOptions;
  if (options.fastMath) {
    targetOptions.UnsafeFPMath = true;
    targetOptions.NoInfsFPMath = true;
    targetOptions.NoNaNsFPMath = true;
    targetOptions.NoSignedZerosFPMath = true;
    targetOptions.AllowFPOpFusion = llvm::FPOpFusion::Fast;
  }
  jtmb.setOptions(targetOptions);
  return jtmb;
}

namespace {

Error fromLlvm(const std::string& what, llvm::Error e) { return Error(what + ": " + llvm::toString(std::move(e))); }

}  // namespace

Expected<std::unique_ptr<CpuJit>> CpuJit::create(const CompileOptions& options) {
  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(hostMachineBuilder(options)).create();
  if (!jit) return fromLlvm("cannot start the host JIT", jit.takeError());
  // Kernels call libm (tanhf, erff, log1pf, and what the intrinsics lower to): resolve every
  // undefined symbol against the libraries already loaded into this process.
  auto search = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess((*jit)->getDataLayout().getGlobalPrefix());
  if (!search) return fromLlvm("cannot search this process's symbols", search.takeError());
  (*jit)->getMainJITDylib().addGenerator(std::move(*search));
  return std::unique_ptr<CpuJit>(new CpuJit(std::move(*jit)));
}

Status CpuJit::addModule(llvm::orc::ThreadSafeModule module) {
  if (llvm::Error e = jit_->addIRModule(std::move(module))) return fromLlvm("host JIT", std::move(e));
  return {};
}

Expected<CpuKernelFn> CpuJit::lookup(const std::string& name) {
  auto address = jit_->lookup(name);
  if (!address) return fromLlvm("host JIT: kernel " + name, address.takeError());
  return address->toPtr<CpuKernelFn>();
}

}  // namespace kiln::codegen
