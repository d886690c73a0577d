// The CUDA driver API, loaded at run time: libcuda is dlopen'ed on first use and every entry
// point kiln calls is looked up once into a table. No driver, a stub driver or no device gives one
// clear error (and never a crash), so the same kiln binary runs on machines without a GPU.
#pragma once

#include <cuda.h>

#include <string>
#include <string_view>

#include "ir/status.h"

namespace kiln::cuda {

// Every driver function kiln calls. cuda.h maps each name to its current versioned symbol
// (cuMemAlloc -> cuMemAlloc_v2), and the table looks up that symbol.
#define KILN_CUDA_DRIVER_FUNCTIONS(X)                                                                     \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGetCount) X(cuDeviceGet) \
  X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain)              \
  X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuCtxGetCurrent) X(cuCtxSynchronize)                  \
  X(cuMemGetInfo) X(cuMemAlloc) X(cuMemFree) X(cuMemAllocHost) X(cuMemFreeHost) X(cuMemcpyHtoDAsync)      \
  X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync) X(cuMemsetD8Async) X(cuStreamCreate) X(cuStreamDestroy)      \
  X(cuStreamSynchronize) X(cuStreamQuery) X(cuStreamWaitEvent) X(cuStreamBeginCapture)                   \
  X(cuStreamEndCapture)                                                                                   \
  X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime)        \
  X(cuModuleLoadDataEx) X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncGetAttribute)                  \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor) X(cuLaunchKernel) X(cuGraphInstantiate)                 \
  X(cuGraphLaunch) X(cuGraphDestroy) X(cuGraphExecDestroy)

struct DriverApi {
#define KILN_CUDA_DRIVER_POINTER(fn) decltype(&::fn) fn = nullptr;
  KILN_CUDA_DRIVER_FUNCTIONS(KILN_CUDA_DRIVER_POINTER)
#undef KILN_CUDA_DRIVER_POINTER
  int version = 0;  // cuDriverGetVersion: 13000 for CUDA 13.0
  // The GPU simulator (gpusim/, libkiln_gpusim.so) exports these beside the driver API: where found,
  // kiln is running on simulated devices, and a failed call's explanation (a launch fault's kernel,
  // PTX line, thread and address) is appended to kiln's error.
  bool simulated = false;
  const char* (*gpusimLastReport)() = nullptr;
};

// The driver, loaded and initialised (cuInit) once per process; later calls return the same
// table or the same error. Fails when libcuda cannot be loaded ("no NVIDIA driver"), lacks an entry
// point kiln needs (a driver older than CUDA 12), or cuInit fails (no device, a stub library).
// $KILN_CUDA_DRIVER names the library to load instead of libcuda.so.1.
Expected<const DriverApi*> driver();

// The table, for code that runs only after driver() succeeded (a live context proves it).
const DriverApi& api();

// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for a driver result code.
std::string resultName(CUresult result);

// Ok for CUDA_SUCCESS; else "<call> failed: <resultName>", with " for <what>" when `what` is
// given (the kernel, the buffer), e.g. "cuLaunchKernel failed for k3_row_softmax:
// CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (too many resources requested for launch)".
Status check(CUresult result, std::string_view call, std::string_view what = {});

}  // namespace kiln::cuda

// Calls driver function `fn` through the table and returns its error from the enclosing function
// (Status or Expected), naming the call: KILN_CU(cuStreamSynchronize, "after k3_row_softmax", stream).
#define KILN_CU(fn, what, ...) KILN_TRY(::kiln::cuda::check(::kiln::cuda::api().fn(__VA_ARGS__), #fn, what))
