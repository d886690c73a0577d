// Compiling a graph's function for a backend, and running it: kiln's jit. Part of kiln's public
// API (docs/api.md).
//
//   kiln::CompileOptions options;
//   options.backend = kiln::Backend::Cpu;
//   kiln::Expected<kiln::CompiledFunction> f = kiln::compile(*graph, options);
//   kiln::Expected<std::vector<kiln::Tensor>> y = f->run({x, w});
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/backend.h"
#include "kiln/device_tensor.h"
#include "kiln/graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

struct CompileOptions {
  // Auto: cuda where a GPU (or the GPU simulator) is usable, else cpu.
  Backend backend = Backend::Auto;
  // The function to compile: "" is the graph's entry (@main, else the first).
  std::string function;
  // cuda: the PTX's architecture when compiling without a GPU; a GPU's own replaces it.
  std::string gpuArch = "sm_80";
  // Off: IEEE results. On: approximate math and reassociation, like nvcc --use_fast_math, and
  // subnormals flushed to zero (f32 on the GPU; every float in the CPU's kernels).
  bool fastMath = false;
  // Passes to skip by name ("fusion"), or "all": each op its own kernel, the graph as written.
  std::vector<std::string> disabledPasses;
  // If set, every stage is written there: the IR after each pass, LLVM IR, PTX or assembly.
  std::string dumpDir;
  // Run the function placed across this many devices: its ops' `device` attributes (a
  // FunctionBuilder sets them as any attribute: {"device", 1}), or with `split`, placed by
  // compute. cpu: the machine split into devices; cuda: a GPU each. 0: one device, where
  // placement changes nothing. docs/parallelism.md.
  int devices = 0;
  bool split = false;
};

// A stage of compilation, as text (CompiledFunction::dump; `kiln compile --emit`).
enum class Stage {
  Kiln,           // the function after kiln's passes: what became kernels
  LlvmUnoptimized,  // LLVM IR as kiln emitted it
  Llvm,           // LLVM IR after O3
  Code,           // PTX (cuda) or host assembly (cpu)
};

class CompiledFunction {
 public:
  // The function's name, parameters and results.
  const Signature& signature() const;
  // The backend it runs on (Auto resolved).
  Backend backend() const;
  // Runs it on host tensors, one per parameter with its exact type; returns the results. Runs may
  // be made from several threads at once. Run-time errors (a gather index out of range) name
  // the op and its source location.
  Expected<std::vector<Tensor>> run(const std::vector<Tensor>& inputs) const;
  // The same on inputs in memory the caller owns (NumPy arrays': kiln's Python module), which the
  // CPU reads in place, without a copy.
  Expected<std::vector<Tensor>> run(std::span<const TensorView> inputs) const;
  // cuda: inputs already on the GPU, results left there (not for a function placed across devices).
  Expected<std::vector<DeviceTensor>> run(const std::vector<DeviceTensor>& inputs) const;
  // The kernels a run launches, in order (empty on the interpreter).
  std::vector<std::string> kernels() const;
  // A stage as text, compiled again for the purpose (the run's code is not re-read).
  Expected<std::string> dump(Stage stage) const;

  struct Impl;
  explicit CompiledFunction(std::shared_ptr<const Impl> impl);

 private:
  std::shared_ptr<const Impl> impl_;
};

// Compiles `options.function` of `graph` for `options.backend`: kiln's passes, then LLVM (O3 for
// this CPU, or PTX for the GPU), loaded and ready to run. Compiled code is cached by content
// ($KILN_CACHE_DIR, else ~/.cache/kiln), so compiling the same function again is quick.
Expected<CompiledFunction> compile(const Graph& graph, const CompileOptions& options = {});

}  // namespace kiln
