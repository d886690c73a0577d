// What a compilation is asked for: the target, its architecture and numerics, and dumps.
#pragma once

#include <string>
#include <vector>

namespace kiln {
class CompileProfile;
}

namespace kiln::codegen {

enum class Target { Cpu, Cuda };

struct CompileOptions {
  Target target = Target::Cpu;
  // NVPTX: the virtual architecture of the PTX. sm_80 PTX loads through the driver's JIT on every
  // GPU from Ampere on; never an arch-specific `a` variant unless asked for.
  std::string gpuArch = "sm_80";
  // Off: IEEE results (no flush-to-zero, correctly rounded division and sqrt). On: approximate
  // math and reassociation, like nvcc --use_fast_math, and subnormals flushed to zero: f32 on
  // the GPU (.ftz), every float on the CPU (MXCSR's FTZ and DAZ while a kernel runs).
  bool fastMath = false;
  // If set, compilation writes every stage here: kiln IR, LLVM IR before and after optimisation,
  // PTX (cuda) or assembly (cpu), with file names that map each kernel back to its ops.
  std::string dumpDir;
  // Passes of passes::defaultPipeline() to skip, by name ("fusion"); "all" skips every pass, so
  // each op becomes its own kernel. For debugging a pass and for differential tests against the
  // unoptimised graph. A name that is not a pass is an error (listing the passes).
  std::vector<std::string> disabledPasses;
  // When set, every stage records its wall time and peak memory here (ir/compile_profile.h:
  // `kiln compile --time-passes`, the compile-time benchmark). Not part of what is compiled.
  CompileProfile* profile = nullptr;
  // Executable::compile for cuda: the GPU it compiles for and runs on (a placed function's stage,
  // runtime/placed_executable.h); -1: the process's GPU (cuda::Device::get()). Not part of what
  // is compiled beyond the architecture it implies.
  int deviceOrdinal = -1;
};

}  // namespace kiln::codegen
