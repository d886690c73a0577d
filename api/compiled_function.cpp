// compile() and CompiledFunction: the public face of Executable (and of the interpreter).
#include <memory>
#include <string>

#include "api/function_lookup.h"
#include "codegen/compile_stages.h"
#include "ir/interp/interpreter.h"
#include "ir/printer.h"
#include "kiln/compile.h"
#include "runtime/backend.h"
#include "runtime/executable.h"

namespace kiln {

struct CompiledFunction::Impl {
  std::shared_ptr<const Module> module;  // owns `function`
  const Function* function = nullptr;
  Signature signature;
  Backend backend = Backend::Cpu;
  codegen::CompileOptions options;
  std::unique_ptr<Executable> executable;  // null on the interpreter
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
  if (*backend != Backend::Interp) {
    auto executable = Executable::compile(**function, impl->options);
    if (!executable) return executable.error();
    impl->executable = std::move(*executable);
  }
  return CompiledFunction(std::move(impl));
}

const Signature& CompiledFunction::signature() const { return impl_->signature; }

Backend CompiledFunction::backend() const { return impl_->backend; }

Expected<std::vector<Tensor>> CompiledFunction::run(const std::vector<Tensor>& inputs) const {
  if (!impl_->executable) return interpret(*impl_->function, inputs);
  return impl_->executable->run(inputs);
}

Expected<std::vector<Tensor>> CompiledFunction::run(std::span<const TensorView> inputs) const {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].data && inputs[i].byteSize() > 0) return Error("input " + std::to_string(i) + " has no data");
  if (impl_->executable) return impl_->executable->run(inputs);
  std::vector<Tensor> copies;  // the interpreter computes on tensors of its own
  for (const TensorView& v : inputs) copies.push_back(Tensor::copyOf(v));
  return interpret(*impl_->function, copies);
}

Expected<std::vector<DeviceTensor>> CompiledFunction::run(const std::vector<DeviceTensor>& inputs) const {
  if (impl_->backend != Backend::Cuda)
    return Error("@" + impl_->signature.name + " was compiled for " + std::string(backendName(impl_->backend)) +
                 ": device tensors need the cuda backend (run it with host tensors)");
  return impl_->executable->runOnDevice(inputs);
}

std::vector<std::string> CompiledFunction::kernels() const {
  return impl_->executable ? impl_->executable->kernelNames() : std::vector<std::string>{};
}

Expected<std::string> CompiledFunction::dump(Stage stage) const {
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
