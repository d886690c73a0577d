// oneDNN on the CPU backend: a matmul kernel group that codegen::selectLibraryCall hands to oneDNN
// (an f32 MatmulCall with its bias and relu/gelu epilogue) runs as one oneDNN matmul primitive,
// made once when the executable is compiled and executed on every run with that run's buffers.
// oneDNN runs on its own OpenMP threads; the run waits for it before the next kernel.
#pragma once

#include <memory>

#include "codegen/library_call.h"
#include "ir/status.h"

namespace kiln {

class OnednnMatmul {
 public:
  // The primitive for `call`, or why oneDNN cannot run it (kiln built without oneDNN, or oneDNN
  // refusing the shapes): the caller then runs the generated kernel.
  static Expected<std::unique_ptr<OnednnMatmul>> create(const codegen::MatmulCall& call);
  ~OnednnMatmul();
  OnednnMatmul(const OnednnMatmul&) = delete;
  OnednnMatmul& operator=(const OnednnMatmul&) = delete;

  // Runs C = A @ B (+ bias) (then the activation) on `buffers`, the kernel's arguments (the
  // group's inputs, then its results). Safe to call from several runs at once.
  Status run(void* const* buffers) const;

 private:
  OnednnMatmul() = default;
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace kiln
