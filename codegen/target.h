// What the shared kernel emitter asks of a target (the host CPU or NVPTX): math functions and
// the kernel's entry point with its loop over output elements. Everything else is shared.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <string>
#include <vector>

namespace kiln::codegen {

// Float math the element emitter cannot express as plain LLVM instructions.
enum class MathFn { Exp, Log, Log1p, Sqrt, Tanh, Erf, Sin, Cos, Pow, Floor, Ceil, Fabs };

// Emits the body for one output element: `buffers` are the kernel's buffer pointers (group inputs,
// then outputs), `status` points at the i32 error word, `index` is the i64 linear output index.
using ElementBodyFn = std::function<void(llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& buffers,
                                         llvm::Value* status, llvm::Value* index)>;

class TargetHooks {
 public:
  virtual ~TargetHooks() = default;
  virtual std::string name() const = 0;  // "cpu" or "nvptx"
  // Calls the target's f32 or f64 implementation of `fn` (libm or LLVM intrinsics on the CPU,
  // libdevice's __nv_* on NVPTX). All args have the same float type.
  virtual llvm::Value* emitMath(llvm::IRBuilder<>& b, MathFn fn, llvm::ArrayRef<llvm::Value*> args) = 0;
  // Defines the kernel `name` in `module` with this target's ABI for `numBuffers` buffers and an
  // error word, and a loop over [0, numElements) that runs `body` once per output element.
  virtual llvm::Function* emitKernel(llvm::Module& module, const std::string& name, int numBuffers,
                                     int64_t numElements, const ElementBodyFn& body) = 0;
};

}  // namespace kiln::codegen
