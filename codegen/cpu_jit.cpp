// The host JIT (ORC LLJIT) and the host machine description shared with the optimiser.
#include "codegen/cpu_jit.h"
#include "codegen/host_isa.h"
#include "codegen/vector_math.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/TargetParser/Host.h>

namespace kiln::codegen {

namespace {

std::vector<std::string> hostFeatures() {
  std::vector<std::string> features;
  for (const auto& feature : hostCpuFeatures())
    features.push_back((feature.second ? "+" : "-") + feature.first().str());
  // Sorted so that the same machine always gives the same feature string (and assembly).
  std::sort(features.begin(), features.end());
  return features;
}

}  // namespace

std::string hostCpuDescription() {
  std::string text = llvm::sys::getHostCPUName().str();
  for (const std::string& feature : hostFeatures()) text += " " + feature;
  return text + " " + llvm::sys::getProcessTriple();
}

llvm::orc::JITTargetMachineBuilder hostMachineBuilder(const CompileOptions& options) {
  initializeHostTarget();
  llvm::orc::JITTargetMachineBuilder jtmb{llvm::Triple(llvm::sys::getProcessTriple())};
  jtmb.setCPU(llvm::sys::getHostCPUName().str());
  jtmb.addFeatures(hostFeatures());
  jtmb.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  // LLJIT links with JITLink, which places code anywhere in the address space: objects we emit
  // ourselves (and cache) must be position independent, small code model, as LLJIT's own are.
  jtmb.setRelocationModel(llvm::Reloc::PIC_);
  jtmb.setCodeModel(llvm::CodeModel::Small);
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
  if (!hostIsaCap().ok()) return hostIsaCap().error();
  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(hostMachineBuilder(options)).create();
  if (!jit) return fromLlvm("cannot start the host JIT", jit.takeError());
  // Kernels call libm (tanhf, erff, log1pf, asinf, acosf, atanf, and what the intrinsics lower to)
  // and libmvec's vector variants (codegen/vector_math.h; loaded here too, for objects from the
  // compile cache): resolve every undefined symbol against the libraries loaded into this process.
  vectorMathAvailable();
  auto search = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess((*jit)->getDataLayout().getGlobalPrefix());
  if (!search) return fromLlvm("cannot search this process's symbols", search.takeError());
  (*jit)->getMainJITDylib().addGenerator(std::move(*search));
  return std::unique_ptr<CpuJit>(new CpuJit(std::move(*jit)));
}

Status CpuJit::addModule(llvm::orc::ThreadSafeModule module) {
  if (llvm::Error e = jit_->addIRModule(std::move(module))) return fromLlvm("host JIT", std::move(e));
  return {};
}

Status CpuJit::addObject(const std::string& bytes, const std::string& name) {
  // A copy: the JIT keeps the buffer for as long as it lives, the caller's string may not.
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(bytes, name);
  if (llvm::Error e = jit_->addObjectFile(std::move(buffer))) return fromLlvm("host JIT: object " + name, std::move(e));
  return {};
}

Expected<CpuKernelFn> CpuJit::lookup(const std::string& name) {
  auto address = jit_->lookup(name);
  if (!address) return fromLlvm("host JIT: kernel " + name, address.takeError());
  return address->toPtr<CpuKernelFn>();
}

}  // namespace kiln::codegen
