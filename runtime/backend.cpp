// Backend selection and dispatch: the reference interpreter and the CPU backend run here; the CUDA
// backend is named so that users get a clear answer instead of an unknown-flag error.
#include "runtime/backend.h"

#include "ir/interp/interpreter.h"
#include "runtime/executable.h"
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
    // The best available backend, in order cuda > cpu > interp; cuda is not built yet.
    case Backend::Auto: return Backend::Cpu;
    case Backend::Cpu: return Backend::Cpu;
    case Backend::Cuda:
      return Error(
          "the cuda backend (NVPTX + CUDA driver) is not built yet; use --backend cpu (or auto), and kiln compile "
          "--target cuda --emit ptx to see the PTX");
  }
  return Error("unknown backend");
}

Expected<std::vector<Tensor>> runFunction(const Function& function, const std::vector<Tensor>& inputs,
                                          const RunOptions& options) {
  auto resolved = resolveBackend(options.backend);
  if (!resolved) return resolved.error();
  // Both host backends hold every tensor in host memory: refuse up front what cannot fit.
  KILN_TRY(checkTensorsFit(function, hostMemoryBytes()));
  if (*resolved == Backend::Cpu) {
    codegen::CompileOptions compileOptions;
    compileOptions.dumpDir = options.dumpDir;
    compileOptions.disabledPasses = options.disabledPasses;
    auto exe = Executable::compile(function, compileOptions);
    if (!exe) return exe.error();
    ExecuteOptions executeOptions;
    executeOptions.maxWhileIterations = options.maxWhileIterations;
    return (*exe)->run(inputs, executeOptions);
  }
  InterpretOptions interpretOptions;
  interpretOptions.maxWhileIterations = options.maxWhileIterations;
  return interpret(function, inputs, interpretOptions);
}

}  // namespace kiln
