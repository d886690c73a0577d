// Backend selection and dispatch. Only the reference interpreter exists so far; the CPU and CUDA
// backends are named here so that users get a clear answer instead of an unknown-flag error.
#include "runtime/backend.h"

#include "ir/interp/interpreter.h"
#include "runtime/memory_check.h"

namespace kiln {

std::string_view backendName(Backend b) {
  switch (b) {
    case Backend::Interp: return "interp";
    case Backend::Cpu: return "cpu";
    case Backend::Cuda: return "cuda";
    case Backend::Auto: return "auto";
  }
  return "?";
}

std::optional<Backend> parseBackend(std::string_view name) {
  for (Backend b : {Backend::Interp, Backend::Cpu, Backend::Cuda, Backend::Auto})
    if (backendName(b) == name) return b;
  return std::nullopt;
}

Expected<Backend> resolveBackend(Backend requested) {
  switch (requested) {
    case Backend::Interp: return Backend::Interp;
    // The best available backend, in order cuda > cpu > interp; only interp is built today.
    case Backend::Auto: return Backend::Interp;
    case Backend::Cpu:
      return Error("the cpu backend (LLVM ORC JIT) is not built yet; use --backend interp (or auto)");
    case Backend::Cuda:
      return Error("the cuda backend (NVPTX + CUDA driver) is not built yet; use --backend interp (or auto)");
  }
  return Error("unknown backend");
}

Expected<std::vector<Tensor>> runFunction(const Function& function, const std::vector<Tensor>& inputs,
                                          const RunOptions& options) {
  auto resolved = resolveBackend(options.backend);
  if (!resolved) return resolved.error();
  // The interpreter holds every tensor in host memory: refuse up front what cannot fit.
  KILN_TRY(checkTensorsFit(function, hostMemoryBytes()));
  InterpretOptions interpretOptions;
  interpretOptions.maxWhileIterations = options.maxWhileIterations;
  return interpret(function, inputs, interpretOptions);
}

}  // namespace kiln
