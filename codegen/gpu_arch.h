// The GPU architectures kiln can generate PTX for, and the PTX ISA version each one gets.
#pragma once

#include <string>

#include "ir/status.h"

namespace kiln::codegen {

struct GpuArch {
  std::string sm;       // "sm_80": the PTX `.target`, and LLVM's CPU name
  int ptxVersion = 0;   // 70 for PTX ISA 7.0: LLVM feature "+ptx70", PTX `.version 7.0`
  int version = 0;      // 80 for sm_80 and sm_80a: which instructions kernels may use
};

// Parses --gpu-arch. Accepted: the archs that both LLVM 19 can target and CUDA 13 can assemble,
// sm_75 to sm_90, and sm_90a only when named (its PTX runs on sm_90 alone, so never a default).
// Anything else is an error that lists these and, for newer GPUs, says to use sm_90 PTX, which the
// driver JIT-compiles for them.
Expected<GpuArch> parseGpuArch(const std::string& name);

// "sm_75, sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a"
std::string supportedGpuArchs();

}  // namespace kiln::codegen
