// The host CPU's instruction set as kiln's CPU code uses it: the host's features, or, with
// KILN_CPU_ISA set, only those of an older x86-64 level (as XLA's --xla_cpu_max_isa caps XLA:CPU).
// Generated kernels, the vector math they call, oneDNN's kernels and the runtime's 16-bit
// conversions all keep under the cap, so one machine can run, test and measure the code an
// older CPU gets: `sse4.2` (x86-64-v2: 128-bit vectors), `avx2` (x86-64-v3: 256-bit, FMA, F16C),
// `avx512` (every AVX-512 extension the host has, no AMX) or `native` (the default).
#pragma once

#include <llvm/ADT/StringMap.h>

#include "kiln/status.h"

namespace kiln::codegen {

enum class IsaCap { Native, Sse42, Avx2, Avx512 };

// KILN_CPU_ISA's cap, or an error naming the values it takes (read once per process).
const Expected<IsaCap>& hostIsaCap();
// The host's CPU features under the cap (every feature LLVM knows, each on or off); the host's
// own where KILN_CPU_ISA is unset or invalid (hostIsaCap reports that).
const llvm::StringMap<bool>& hostCpuFeatures();
// Whether the capped host has `feature` (an LLVM X86 feature name: "avx2", "avx512f", "f16c").
bool hostHas(const char* feature);

}  // namespace kiln::codegen
