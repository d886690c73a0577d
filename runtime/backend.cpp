// Backend selection and dispatch: the reference interpreter, the CPU backend and the CUDA backend
// (when this kiln was built with the toolkit's headers and the machine has a driver and a GPU).
#include "runtime/backend.h"

#include "ir/interp/interpreter.h"
#include "passes/split_devices.h"
#include "runtime/collectives/all_reduce_step.h"
#include "runtime/executable.h"
#include "runtime/memory_check.h"
#include "runtime/placed_executable.h"
#if KILN_HAVE_CUDA
#include "runtime/cuda/context.h"
#include "runtime/cuda/driver.h"
#endif

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

namespace {

// Ok when the CUDA backend can run here, else why not (no driver, no GPU, not built).
Status cudaUsable() {
#if KILN_HAVE_CUDA
  auto device = cuda::Device::get();
  if (!device) return device.error();
  return {};
#else
  return Error("this kiln was built without the CUDA toolkit's headers, so it has no cuda backend");
#endif
}

}  // namespace

bool runsOnGpuSimulator() {
#if KILN_HAVE_CUDA
  auto d = cuda::driver();
  return d && (*d)->simulated;
#else
  return false;
#endif
}

Expected<Backend> resolveBackend(Backend requested) {
  switch (requested) {
    case Backend::Interp: return Backend::Interp;
    // The best available backend, in order cuda > cpu > interp.
    case Backend::Auto: return cudaUsable() ? Backend::Cuda : Backend::Cpu;
    case Backend::Cpu: return Backend::Cpu;
    case Backend::Cuda: {
      Status usable = cudaUsable();
      if (!usable) return Error("--backend cuda: " + usable.error().message());
      return Backend::Cuda;
    }
  }
  return Error("unknown backend");
}

Expected<std::vector<Tensor>> runFunction(const Function& function, const std::vector<Tensor>& inputs,
                                          const RunOptions& options) {
  auto resolved = resolveBackend(options.backend);
  if (!resolved) return resolved.error();
  // Every backend holds the inputs and results in host memory (the host backends everything):
  // refuse up front what cannot fit.
  KILN_TRY(checkTensorsFit(function, hostMemoryBytes()));
  if (*resolved == Backend::Cpu || *resolved == Backend::Cuda) {
    codegen::CompileOptions compileOptions;
    compileOptions.target = *resolved == Backend::Cuda ? codegen::Target::Cuda : codegen::Target::Cpu;
    compileOptions.dumpDir = options.dumpDir;
    compileOptions.disabledPasses = options.disabledPasses;
    compileOptions.fastMath = options.fastMath;
    compileOptions.profile = options.profile;
    if (options.devices > 0) {
      auto placed = PlacedExecutable::compile(function, options.devices, compileOptions, options.split);
      if (!placed) return placed.error();
      return (*placed)->run(inputs);
    }
    auto exe = Executable::compile(function, compileOptions);
    if (!exe) return exe.error();
    ExecuteOptions executeOptions;
    executeOptions.maxWhileIterations = options.maxWhileIterations;
    return (*exe)->run(inputs, executeOptions);
  }
  if (options.devices > 0) {  // the placement's errors, then the same values as one device
    auto placed = passes::placedCopy(function, options.devices, options.split);
    if (!placed) return placed.error();
    RunOptions one = options;
    one.devices = 0;
    return runFunction(*(*placed)->functions().front(), inputs, one);
  }
  InterpretOptions interpretOptions;
  interpretOptions.maxWhileIterations = options.maxWhileIterations;
  interpretOptions.allReduce = [](const Op& op, Tensor& value) -> Status {
    auto comm = collectives::worldCommunicator();
    if (!comm) return comm.error().at(op.loc());
    return collectives::allReduceInPlace(op, value.data(), **comm);
  };
  return interpret(function, inputs, interpretOptions);
}

}  // namespace kiln
