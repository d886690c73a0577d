// oneDNN on the CPU backend: a kernel group that codegen::selectLibraryCall(group, Target::Cpu)
// hands to oneDNN runs as one oneDNN primitive, made once when the executable is compiled and
// executed on every run with that run's buffers: an f32 matmul (MatmulCall: bias, relu or
// tanh-gelu fused) or an f32 convolution (ConvCall: forward with bias and relu fused, backward
// data, backward weights). oneDNN runs on its own OpenMP threads; the run waits for it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "codegen/library_call.h"
#include "ir/status.h"

namespace kiln {

class OnednnCall {
 public:
  // The primitive for `call` (a MatmulCall or ConvCall), or why oneDNN cannot run it (kiln built
  // without oneDNN, a type it is not used for, oneDNN refusing the shapes): the caller then runs
  // the generated kernel.
  // `constants` holds, by kernel buffer, the data of buffers that are constant data (a model's
  // weights; null for the others): a matmul's or convolution's constant weights are packed into
  // oneDNN's layout once, here, instead of on every run.
  // `sliceCacheBytes` is the cache a convolution's slices of the batch are sized for (0: the
  // host's L2 caches together; tests pass less to make slices on any host).
  static Expected<std::unique_ptr<OnednnCall>> create(const codegen::LibraryCall& call,
                                                      std::vector<const void*> constants = {},
                                                      int64_t sliceCacheBytes = 0);
  ~OnednnCall();
  OnednnCall(const OnednnCall&) = delete;
  OnednnCall& operator=(const OnednnCall&) = delete;

  // Runs the call on `buffers`, the kernel's arguments (the group's inputs, then its results).
  // Safe to call from several runs at once.
  Status run(void* const* buffers) const;
  // Bytes of weights packed when the call was made (0: none were constant, or oneDNN takes them
  // as kiln lays them out).
  size_t packedBytes() const;
  // The primitives a run executes, in order, each as "kind:implementation" in oneDNN's names
  // ("reorder:jit:uni", "matmul:gemm:jit", ...): what `ONEDNN_VERBOSE=1` would print, for tests.
  std::vector<std::string> primitives() const;
  // How many slices of the batch a run computes one after the other, the primitives once per
  // slice (a convolution whose activations oneDNN reorders; 1 for every other call).
  int64_t batchSlices() const;

 private:
  OnednnCall();
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace kiln
