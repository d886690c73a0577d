// compile() and CompiledFunction: the public face of Executable (and of the interpreter).
#include <memory>
#include <string>

#include "api/function_lookup.h"
#include "codegen/compile_stages.h"
#include "ir/interp/interpreter.h"
#include "ir/printer.h"
#include "kiln/compile.h"
#include "passes/split_devices.h"
#include "runtime/backend.h"
#include "runtime/executable.h"
#include "runtime/placed_executable.h"

namespace kiln {

struct CompiledFunction::Impl {
  std::shared_ptr<const Module> module;  // owns `function`
  const Function* function = nullptr;
  Signature signature;
  Backend backend = Backend::Cpu;
  codegen::CompileOptions options;
  std::unique_ptr<Executable> executable;  // null on the interpreter, and when placed
  std::unique_ptr<PlacedExecutable> placed;  // across devices (CompileOptions::devices)
};

CompiledFunction::CompiledFunction(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

Expected<CompiledFunction> compile(const Graph& graph, const CompileOptions& options) {
  auto function = api::findFunction(*graph.module(), options.function);
  if (!function) return function.error();
  auto backend = resolveBackend(options.backend);
  if (!backend) return backend.error();
  auto impl = std::make_shared<CompiledFunction::Impl>();
  impl->module = graph.module();  // shared, not copied: a Graph never changes
  impl->function = *function;
  impl->signature = api::signatureOf(**function);
  impl->backend = *backend;
  impl->options.target = *backend == Backend::Cuda ? codegen::Target::Cuda : codegen::Target::Cpu;
  impl->options.gpuArch = options.gpuArch;
  impl->options.fastMath = options.fastMath;
  impl->options.disabledPasses = options.disabledPasses;
  impl->options.dumpDir = options.dumpDir;
  if (options.devices < 0) return Error("CompileOptions::devices must be 0 (one device) or more, not " + std::to_string(options.devices));
  if (options.split && options.devices == 0) return Error("CompileOptions::split places the function across `devices` devices: set devices");
  if (options.devices > 0 && *backend == Backend::Interp) {  // the placement's errors, then run as one device
    auto placed = passes::placedCopy(**function, options.devices, options.split);
    if (!placed) return placed.error();
    impl->function = (*placed)->functions().front().get();
    impl->module = std::move(*placed);
  } else if (options.devices > 0) {
    auto placed = PlacedExecutable::compile(**function, options.devices, impl->options, options.split);
    if (!placed) return placed.error();
    impl->placed = std::move(*placed);
  } else if (*backend != Backend::Interp) {
    auto executable = Executable::compile(**function, impl->options);
    if (!executable) return executable.error();
    impl->executable = std::move(*executable);
  }
  return CompiledFunction(std::move(impl));
}

const Signature& CompiledFunction::signature() const { return impl_->signature; }

Backend CompiledFunction::backend() const { return impl_->backend; }

Expected<std::vector<Tensor>> CompiledFunction::run(const std::vector<Tensor>& inputs) const {
  if (impl_->placed) return impl_->placed->run(inputs);
  if (!impl_->executable) return interpret(*impl_->function, inputs);
  return impl_->executable->run(inputs);
}

Expected<std::vector<Tensor>> CompiledFunction::run(std::span<const TensorView> inputs) const {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].data && inputs[i].byteSize() > 0) return Error("input " + std::to_string(i) + " has no data");
  if (impl_->executable) return impl_->executable->run(inputs);
  std::vector<Tensor> copies;  // the interpreter and placed runs compute on tensors of their own
  for (const TensorView& v : inputs) copies.push_back(Tensor::copyOf(v));
  return run(copies);
}

Expected<std::vector<DeviceTensor>> CompiledFunction::run(const std::vector<DeviceTensor>& inputs) const {
  if (impl_->backend != Backend::Cuda)
    return Error("@" + impl_->signature.name + " was compiled for " + std::string(backendName(impl_->backend)) +
                 ": device tensors need the cuda backend (run it with host tensors)");
  if (impl_->placed) return Error("@" + impl_->signature.name + " runs placed across devices: run it with host tensors");
  return impl_->executable->runOnDevice(inputs);
}

std::vector<std::string> CompiledFunction::kernels() const {
  std::vector<std::string> names;
  if (impl_->placed)  // each stage's, prefixed with its stage function's name
    for (size_t s = 0; s < impl_->placed->partition().stages.size(); ++s)
      if (const Executable* e = impl_->placed->stageExecutable(s))
        for (const std::string& k : e->kernelNames())
          names.push_back(impl_->placed->partition().stages[s].function->name() + "/" + k);
  if (impl_->placed) return names;
  return impl_->executable ? impl_->executable->kernelNames() : std::vector<std::string>{};
}

Expected<std::string> CompiledFunction::dump(Stage stage) const {
  if (impl_->placed) {
    if (stage == Stage::Kiln) return printFunction(impl_->placed->placedFunction());
    return Error("@" + impl_->signature.name + " runs placed across devices: dump its stages with `kiln explain --devices N`");
  }
  if (!impl_->executable) {
    if (stage == Stage::Kiln) return printFunction(*impl_->function);
    return Error("@" + impl_->signature.name + " runs on the interpreter: it has no LLVM IR or machine code");
  }
  codegen::CompileOptions options = impl_->options;
  options.dumpDir.clear();
  // No cache: a cached PTX would leave the optimised LLVM IR out.
  auto stages = codegen::compileStages(*impl_->function, options, /*cache=*/nullptr);
  if (!stages) return stages.error();
  switch (stage) {
    case Stage::Kiln: return stages->kiln;
    case Stage::LlvmUnoptimized: return stages->unoptimizedIR;
    case Stage::Llvm: return stages->optimizedIR;
    case Stage::Code: return stages->code;
  }
  return Error("unknown stage");
}

}  // namespace kiln
