// From an LLVM module of NVPTX kernels to PTX text: libdevice linking, numerics settings, the O3
// pipeline and LLVM's NVPTX code generator.
#pragma once

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <string>
#include <vector>

#include "codegen/compile_options.h"
#include "codegen/gpu_arch.h"
#include "ir/status.h"

namespace kiln::codegen {

// One compilation's NVPTX settings and TargetMachine. Cheap to create; not shared between threads
// (make one per thread). Numerics:
// - IEEE (default): no flush-to-zero, div.rn and sqrt.rn for f32 (LLVM's defaults when the
//   function is not marked unsafe-fp-math), libdevice's precise paths (nvvm-reflect-ftz = 0). FMA
//   contraction is on, as nvcc's default --fmad=true: a*b+c may round once instead of twice.
// - fastMath (like nvcc --use_fast_math): f32 denormals flush to zero, div.approx / sqrt.approx,
//   libdevice's ftz paths, and reassociation/approximate-function flags on kiln's own instructions.
// All of this travels in function attributes and a module flag, never in LLVM's global
// command-line options, so compilations with different settings can run side by side.
class NvptxCompiler {
 public:
  // Fails on an unknown --gpu-arch.
  static Expected<NvptxCompiler> create(const CompileOptions& options);

  const GpuArch& arch() const { return arch_; }
  // Sets the module's triple and data layout (before emitting kernels into it).
  void configure(llvm::Module& module) const;
  // Links the libdevice functions the module calls, applies the numerics settings, internalizes
  // everything but the kernels, runs O3 and verifies. Fails if libdevice is needed but missing.
  Status optimize(llvm::Module& module) const;
  // PTX for an optimised module. Same module and settings -> byte-identical text.
  Expected<std::string> emitPtx(llvm::Module& module) const;

 private:
  NvptxCompiler(GpuArch arch, bool fastMath, std::unique_ptr<llvm::TargetMachine> tm)
      : arch_(std::move(arch)), fastMath_(fastMath), tm_(std::move(tm)) {}
  GpuArch arch_;
  bool fastMath_ = false;
  std::unique_ptr<llvm::TargetMachine> tm_;
};

// What of libdevice the PTX of `module` depends on, for the compile cache's key: empty if the
// module calls no __nv_* function, else libdevice's path and content hash (a toolkit upgrade or
// another KILN_CUDA_HOME is then a miss). Fails as optimize() would if libdevice is missing.
Expected<std::string> libdeviceFingerprint(const llvm::Module& module);
// The same for a kernel unit (kernel_units.h), from the functions it declares.
Expected<std::string> libdeviceFingerprint(const std::vector<std::string>& declared);

// configure + optimize + emitPtx for a module whose triple and layout may still be unset.
Expected<std::string> compileToPtx(llvm::Module& module, const CompileOptions& options);

}  // namespace kiln::codegen
