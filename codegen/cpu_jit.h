// The host JIT: an ORC LLJIT that turns optimised LLVM modules into callable kernels in this
// process, resolving libm and other process symbols (tanhf, erff, ...) by name.
#pragma once

#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>

#include <memory>
#include <string>

#include "codegen/compile_options.h"
#include "codegen/cpu_target.h"
#include "ir/status.h"

namespace kiln::codegen {

// The one description of "this machine" that both the optimiser's TargetMachine and the JIT's
// code generator are made from, so that the IR is optimised for the code it becomes: the process
// triple, the host CPU's name and features, O3, and IEEE numerics unless options.fastMath.
llvm::orc::JITTargetMachineBuilder hostMachineBuilder(const CompileOptions& options);

// "CPU-name sorted-features triple" of this machine: part of the cache key of host objects, so
// an object built for one CPU is never loaded on another.
std::string hostCpuDescription();

// Owns the generated machine code: kernels looked up here stay valid while the CpuJit lives.
class CpuJit {
 public:
  static Expected<std::unique_ptr<CpuJit>> create(const CompileOptions& options);

  // Compiles an optimised module (triple and data layout set by configureModule) to machine code.
  Status addModule(llvm::orc::ThreadSafeModule module);
  // Links a relocatable object file made for this host (emitCpuObject, or the compile cache).
  // Garbage fails here; a damaged but parseable object may fail only at lookup().
  Status addObject(const std::string& bytes, const std::string& name);
  // The address of a kernel defined by an added module.
  Expected<CpuKernelFn> lookup(const std::string& name);

 private:
  explicit CpuJit(std::unique_ptr<llvm::orc::LLJIT> jit) : jit_(std::move(jit)) {}
  std::unique_ptr<llvm::orc::LLJIT> jit_;
};

}  // namespace kiln::codegen
