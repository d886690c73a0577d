// A function compiled for the host CPU: generated kernels in an LLVM ORC JIT, and the plan that
// says in which order to run them (with `map` and `while` driven by the host over their regions).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/compile_cache.h"
#include "codegen/compile_options.h"
#include "codegen/cpu_target.h"
#include "codegen/kernel_emitter.h"
#include "codegen/kernel_plan.h"
#include "ir/ir.h"
#include "ir/tensor.h"
#include "runtime/buffer_plan.h"
#include "runtime/device_tensor.h"

namespace kiln {
namespace collectives {
class Communicator;
}

namespace codegen {
class CpuJit;
}
class OnednnCall;
class ThreadPool;
namespace cuda {
class Program;
}

// How a run treats its all_reduce ops when there are several replicas (with one, nothing crosses
// replicas whatever the mode).
enum class CollectiveMode {
  // Each reduction starts as soon as its kernel has computed this replica's value and is waited for
  // only before the first step that reads its result, so communication of early gradient buckets
  // overlaps the rest of the backward pass (CPU: the communicator's reduction thread; CUDA: NCCL on
  // a stream of its own, ordered with events).
  Overlapped,
  // Each reduction completes before the next step starts (the comparison kiln bench makes).
  Synchronous,
  // Nothing is reduced: every replica keeps its own value. Only for timing the compute alone
  // (kiln bench); the results are not the data-parallel ones.
  Skipped,
};

// One all_reduce of a run, for kiln bench.
struct CollectiveTiming {
  std::string kernel;  // its kernel, e.g. "k12_all_reduce"
  int64_t bytes = 0;   // of its result, reduced in place
  // The reduction itself: CPU, wall clock on the thread that ran it; CUDA, events around
  // ncclAllReduce on its stream.
  double milliseconds = 0;
  // How long the host blocked waiting for it (CPU). 0 on CUDA, where the compute stream waits on
  // the device and the host does not.
  double waitedMilliseconds = 0;
};

struct ExecuteOptions {
  // A `while` that runs longer than this stops with an error instead of hanging.
  int64_t maxWhileIterations = 10'000'000;
  // CUDA: capture a step without host-driven regions as a CUDA graph on its first run with a set
  // of buffers, and replay it on later runs with the same buffers (one launch per step).
  bool cudaGraph = true;
  // runOnDevice: inputs the caller will not use again (parameters being updated, optimizer
  // state), by parameter index. A result may then be computed into such an input's memory and
  // share it (runtime/donation.h says when), so an update happens in place; the donated
  // DeviceTensor must not be read afterwards. Host runs ignore it.
  std::vector<bool> donated;
  // Profiling (`kiln bench`), off when null. stepMilliseconds: how long the step took where it
  // runs, without copying inputs in or results out (CUDA: events around the device work; CPU: wall
  // clock). kernelMilliseconds: time per kernel name, summed over its launches in this run (CUDA:
  // events around each launch, which runs the step without its CUDA graph).
  double* stepMilliseconds = nullptr;
  std::map<std::string, double>* kernelMilliseconds = nullptr;
  // The replicas `all_reduce` reduces across (runtime/collectives/communicator.h). Null: this
  // process's world, which is one replica (all_reduce is the identity) unless mpirun launched it.
  collectives::Communicator* communicator = nullptr;
  CollectiveMode collectives = CollectiveMode::Overlapped;
  // kiln bench: one entry per all_reduce reduced across replicas in this run, in the order they
  // were waited for. Off when null.
  std::vector<CollectiveTiming>* collectiveTimings = nullptr;
  // Tests: what the host did, in order: "kernel k3_matmul" (launched; CPU: run), "start
  // k4_all_reduce" (its reduction across replicas queued), "wait k4_all_reduce" (the host, or the
  // compute stream, waits for it). Off when null.
  std::vector<std::string>* schedule = nullptr;
  // CPU: the threads generated kernels run on (one device's share of the cores when a placed
  // function runs across devices, runtime/placed_executable.h). Null: ThreadPool::shared().
  ThreadPool* threads = nullptr;
};

// Ok when `given` are exactly the parameter types of `function`; else "@f takes 2 inputs, got 1"
// or "input 1 (%b): expected f32[1000], got f16[1000]". Every backend checks its inputs so.
Status checkInputTypes(const Function& function, const std::vector<TensorType>& given);

// A CPU kernel as runs call it: its entry point and how the thread pool splits it, its work items
// (codegen::numWorkItems) and the fewest a chunk takes, worked out once when it is loaded.
struct LoadedCpuKernel {
  codegen::CpuKernelFn fn = nullptr;
  int64_t items = 0;
  int64_t grain = 1;
};

// The Executable compiles and owns an optimised copy of the Function it is given (its plan names
// the copy's ops and values); the caller's Function is never changed and need not outlive it.
// run() may be called any number of times, also from several threads at once (each call allocates
// its own arena, laid out by bufferPlan()).
class Executable {
 public:
  // Runs the pass pipeline on a copy of `function` (all of passes::defaultPipeline() minus
  // options.disabledPasses; codegen/optimize.h), plans the copy, emits one LLVM module with all its kernels, optimises it (O3 for this
  // CPU), generates an object file and links it into a JIT. The object comes from `cache` when it
  // holds one for this function, options and CPU (skipping O3 and codegen) and is stored there
  // otherwise; a cached object the JIT cannot load is recompiled and replaced. `cache` null: no
  // caching. Target::Cuda compiles PTX for the GPU kiln runs on (cuda::Device: its architecture
  // replaces options.gpuArch), loads it through the driver and runs there (runtime/cuda/program.h);
  // without a GPU that is an error saying so.
  // With options.dumpDir set, writes the IR after each pass, the LLVM IR before and after
  // optimisation and the host assembly there (the cache is not read then, so the dump is complete).
  static Expected<std::unique_ptr<Executable>> compile(const Function& function,
                                                       const codegen::CompileOptions& options,
                                                       codegen::CompileCache* cache = &codegen::CompileCache::global());
  ~Executable();

  // Runs the function on `inputs` (one per parameter, with its exact type) and returns the
  // results. Run-time errors (a gather index out of range, an integer division by zero, ...) name
  // the op and its source location, as the interpreter's do.
  Expected<std::vector<Tensor>> run(const std::vector<Tensor>& inputs, const ExecuteOptions& options = {}) const;
  // The same on inputs in memory the caller owns: the CPU reads them in place, cuda copies them in.
  Expected<std::vector<Tensor>> run(std::span<const TensorView> inputs, const ExecuteOptions& options = {}) const;
  // Target::Cuda only: inputs already on the GPU, results left there (new device tensors). Runs
  // on one executable are serialised; returns when the results are computed.
  Expected<std::vector<DeviceTensor>> runOnDevice(const std::vector<DeviceTensor>& inputs,
                                          const ExecuteOptions& options = {}) const;
  // Which target it was compiled for.
  codegen::Target target() const { return cuda_ ? codegen::Target::Cuda : codegen::Target::Cpu; }
  // The CUDA program (Target::Cuda), for benchmarks and tests; null on the CPU.
  cuda::Program* cudaProgram() const { return cuda_.get(); }

  // The optimised copy that was compiled (same name, parameters and source locations).
  const Function& function() const { return *function_; }
  // Its kernel plan (what kernelNames() lists; codegen::reportKernels gives each one's bytes).
  const codegen::BlockPlan& plan() const;
  // The kernels, in the order the plan runs them (nested regions depth first).
  std::vector<std::string> kernelNames() const;
  // Where each intermediate value lives in a run's one arena (computed once, at compile time).
  const BufferPlan& bufferPlan() const { return bufferPlan_; }

 private:
  friend class ExecutionContext;
  Executable(std::unique_ptr<Module> module, const Function* function, std::unique_ptr<codegen::BlockPlan> plan);
  explicit Executable(std::unique_ptr<cuda::Program> program);
  void makeLibraryCalls();

  std::unique_ptr<Module> module_;  // owns function_; declared first so the plan dies before it
  const Function* function_;
  std::unique_ptr<codegen::BlockPlan> plan_;
  BufferPlan bufferPlan_;  // of plan_
  std::vector<const Value*> constants_;  // plan_'s constant data, which every run points at
  std::unique_ptr<codegen::CpuJit> jit_;
  std::unordered_map<const codegen::KernelGroup*, LoadedCpuKernel> kernels_;
  // Kernels a library runs instead of the generated code (runtime/onednn.h).
  std::unordered_map<const codegen::KernelGroup*, std::unique_ptr<OnednnCall>> libraryCalls_;
  std::vector<codegen::KernelError> errors_;
  std::unique_ptr<cuda::Program> cuda_;  // Target::Cuda: the rest above is unused
};

}  // namespace kiln
