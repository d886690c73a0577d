// Where a function runs: the reference interpreter, the CPU (kernels compiled by LLVM, run on all
// cores) or an NVIDIA GPU (PTX loaded by the CUDA driver); `Auto` picks the best one usable here
// (cuda > cpu). Part of kiln's public API (docs/api.md).
#pragma once

#include <optional>
#include <string_view>

namespace kiln {

enum class Backend { Interp, Cpu, Cuda, Auto };

// "interp", "cpu", "cuda", "auto", and back (nullopt for any other name).
std::string_view backendName(Backend b);
std::optional<Backend> parseBackend(std::string_view name);

}  // namespace kiln
