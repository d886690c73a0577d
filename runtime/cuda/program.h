// A function compiled for the GPU: its PTX loaded into the device's context, and the list of
// thunks (kernel launches, library calls, copies) one run executes in order on the program's
// stream. A step without host-driven regions (`map` loops the vectorize pass left, `while`) is
// captured once as a CUDA graph and replayed, so a small step costs one launch. all_reduce results
// are reduced across replicas by NCCL on a second stream, ordered with events, so that a gradient
// bucket's reduction overlaps the kernels after it.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/compile_cache.h"
#include "codegen/compile_options.h"
#include "codegen/cuda_compiler.h"
#include "codegen/library_call.h"
#include "runtime/buffer_plan.h"
#include "runtime/cuda/context.h"
#include "runtime/cuda/cublaslt.h"
#include "runtime/cuda/cudnn.h"
#include "runtime/cuda/device_memory.h"
#include "runtime/cuda/graph.h"
#include "runtime/cuda/module.h"
#include "runtime/cuda/nccl.h"
#include "runtime/cuda/stream.h"
#include "runtime/device_tensor.h"
#include "runtime/executable.h"
#include "runtime/launch_shape.h"

namespace kiln::cuda {

// One kernel group of the plan: a cuBLASLt or cuDNN call where codegen::selectLibraryCall chose
// one and the library is usable, else (and whenever the library finds no algorithm) the generated
// kernel, ready to launch.
struct KernelThunk {
  const codegen::KernelGroup* group = nullptr;
  CUfunction function = nullptr;
  LaunchShape shape;
  codegen::LibraryCall library;  // GeneratedKernel{reason} when the generated kernel runs
};

class Program {
 public:
  // Compiles `function` to PTX for the device's architecture (options.gpuArch is replaced by it),
  // loads it and prepares every kernel's launch. Fails where there is no GPU, with the driver's
  // message.
  static Expected<std::unique_ptr<Program>> compile(const Function& function, codegen::CompileOptions options,
                                                    codegen::CompileCache* cache);
  // Makes its GPU's context current first, so its memory, streams and modules are released on
  // their own GPU (a placed function's stages live on several).
  ~Program();

  // Host tensors in, host tensors out: inputs are copied into the program's own device buffers,
  // results copied back. Runs are serialised (one stream, one set of buffers).
  Expected<std::vector<Tensor>> run(std::span<const TensorView> inputs, const ExecuteOptions& options);
  // Device tensors in and out: no host copies. Results are new device tensors.
  Expected<std::vector<DeviceTensor>> runOnDevice(const std::vector<DeviceTensor>& inputs,
                                                  const ExecuteOptions& options);

  const Function& function() const { return *compiled_.optimized.function; }
  const codegen::BlockPlan& plan() const { return *compiled_.plan; }
  const std::vector<KernelThunk>& kernels() const { return kernels_; }
  const Device& device() const { return *device_; }
  // Why library calls that were selected run as generated kernels (cuBLASLt or cuDNN could not
  // be loaded here); empty when none.
  const std::string& libraryNote() const { return libraryNote_; }
  // Whether runs replay a captured CUDA graph (no host-driven regions, no collectives, not
  // disabled).
  bool capturable() const { return !hasRegions_ && !hasAllReduce_; }

 private:
  class Run;
  Program(codegen::CudaCompilation compiled, Device* device, Stream stream, std::vector<LoadedModule> modules)
      : compiled_(std::move(compiled)), device_(device), stream_(std::move(stream)), modules_(std::move(modules)) {}

  // Runs the plan with parameters and results at the given addresses; params/results indexed as
  // the function's. Replays (or captures) a graph when allowed.
  Status execute(const std::vector<CUdeviceptr>& params, const std::vector<CUdeviceptr>& results,
                 const ExecuteOptions& options);
  // Copies the plan's constant data into one device buffer that lives as long as the program
  // (made once: runs only bind the addresses).
  Status uploadConstants(CUstream stream);
  // A device buffer that stays with the program (inputs and results of host runs).
  Expected<CUdeviceptr> ownBuffer(const Value* v, std::string_view role);
  // Loads cuBLASLt / cuDNN where a thunk calls them; where one cannot be loaded its thunks fall
  // back to their generated kernels, and libraryNote_ says so, unless the user named the library
  // (an override variable): then that is the error.
  Status prepareLibraries();
  // NCCL over the run's communicator and the stream its reductions run on, created on the first
  // all_reduce (with one replica too, so a single GPU exercises the same path). NCCL's deadline is
  // the communicator's timeout (kiln train --collective-timeout).
  Status joinReplicas(const Op& op, const ExecuteOptions& options);

  codegen::CudaCompilation compiled_;
  Device* device_;
  Stream stream_;
  std::vector<LoadedModule> modules_;  // one per compiled_.modules entry
  std::vector<KernelThunk> kernels_;
  std::unordered_map<const codegen::KernelGroup*, const KernelThunk*> kernelOf_;
  bool hasRegions_ = false;
  bool hasAllReduce_ = false;
  std::unique_ptr<NcclCommunicator> nccl_;
  std::optional<Stream> ncclStream_;
  std::string libraryNote_;
  std::unique_ptr<CublasLt> cublasLt_;
  std::unique_ptr<Cudnn> cudnn_;
  // Intermediate values at their BufferPlan offsets in one arena, allocated once: the addresses
  // stay fixed across runs, as a replayed graph needs.
  BufferPlan bufferPlan_;
  DeviceBuffer arena_;
  DeviceBuffer constants_;  // constant data (weights), each at a 256-byte aligned offset
  std::unordered_map<const Value*, CUdeviceptr> constantAddress_;
  // The kernels' error word (an int32), then runWhile's condition flag (a byte).
  static constexpr size_t kStatusBytes = 8;
  DeviceBuffer statusWord_;
  std::mutex mutex_;
  std::unordered_map<const Value*, DeviceBuffer> own_;
  // Captured graphs by parameter and result addresses, and the address sets seen once.
  std::map<std::vector<CUdeviceptr>, GraphExec> graphs_;
  std::set<std::vector<CUdeviceptr>> warmedUp_;
  // Which result goes into which donated input, per donation mask (donatedResultBuffers).
  std::map<std::vector<bool>, std::vector<int>> donations_;
};

}  // namespace kiln::cuda
