// What the cuBLASLt and cuDNN wrappers share: the outcome of a call (ran, or declined so the
// generated kernel runs instead), grow-on-demand device workspace, and pointer alignment classes
// for caching per-call plans.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ir/status.h"

namespace kiln::cuda {

// A library call either ran (its work is queued on the stream) or found no algorithm for the
// problem on this GPU: then nothing was queued and the caller runs the group's generated kernel.
// Errors (bad arguments, out of memory, a failed launch) are Expected's error, not an outcome.
enum class LibraryOutcome { Ran, NoAlgorithm };

// Device scratch memory for library calls, allocated through the driver table on first need and
// grown when a plan needs more. Growth waits for the stream to finish with the old block, so it
// must not happen while the stream is being captured into a CUDA graph: run a step once (which
// plans every call) before capturing it.
class DeviceWorkspace {
 public:
  DeviceWorkspace() = default;
  DeviceWorkspace(const DeviceWorkspace&) = delete;
  DeviceWorkspace& operator=(const DeviceWorkspace&) = delete;
  ~DeviceWorkspace();

  // At least `bytes` of device memory (0 bytes gives a null pointer); `what` names the call in errors.
  Expected<CUdeviceptr> reserve(size_t bytes, CUstream stream, std::string_view what);
  size_t size() const { return size_; }

 private:
  CUdeviceptr ptr_ = 0;
  size_t size_ = 0;
};

// Why a vendor library (cuBLASLt, cuDNN, NCCL) is not used on the GPU simulator: its kernels are
// machine code for real GPUs, and the simulator runs PTX. Where the simulator has a stand-in for
// the library, the message names it and the variable (`overrideVariable`) that selects it.
std::string librariesNeedRealGpu(std::string_view library, std::string_view overrideVariable,
                                 std::string_view standIn);

// The largest power of two up to 256 that divides `address` (256 for null): libraries pick
// vectorised kernels by alignment, so a plan cached for one alignment is only reused for the same.
uint32_t alignmentOf(CUdeviceptr address);

}  // namespace kiln::cuda
