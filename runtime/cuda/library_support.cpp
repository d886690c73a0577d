// DeviceWorkspace and alignmentOf (library_support.h).
#include "runtime/cuda/library_support.h"

#include "runtime/cuda/driver.h"

namespace kiln::cuda {

DeviceWorkspace::~DeviceWorkspace() {
  // Nothing to report to from a destructor; the context may also be gone already at exit.
  if (ptr_) api().cuMemFree(ptr_);
}

Expected<CUdeviceptr> DeviceWorkspace::reserve(size_t bytes, CUstream stream, std::string_view what) {
  if (bytes <= size_) return ptr_;
  std::string purpose = "the workspace of " + std::string(what);
  if (ptr_) {
    // Calls queued earlier on the stream may still use the old block.
    KILN_CU(cuStreamSynchronize, purpose, stream);
    KILN_CU(cuMemFree, purpose, ptr_);
    ptr_ = 0;
    size_ = 0;
  }
  CUdeviceptr fresh = 0;
  KILN_CU(cuMemAlloc, purpose + " (" + std::to_string(bytes) + " bytes)", &fresh, bytes);
  ptr_ = fresh;
  size_ = bytes;
  return ptr_;
}

std::string librariesNeedRealGpu(std::string_view library, std::string_view overrideVariable,
                                 std::string_view standIn) {
  std::string why = std::string(library) +
                    " does not run on the GPU simulator (KILN_CUDA_DRIVER names libkiln_gpusim.so): its kernels are "
                    "machine code for real GPUs, not PTX";
  if (overrideVariable.empty()) return why;
  return why + "; set " + std::string(overrideVariable) + " to the simulator's stand-in, " + std::string(standIn) +
         " (built beside libkiln_gpusim.so)";
}

uint32_t alignmentOf(CUdeviceptr address) {
  uint32_t alignment = 256;
  while (alignment > 1 && address % alignment != 0) alignment /= 2;
  return alignment;
}

}  // namespace kiln::cuda
