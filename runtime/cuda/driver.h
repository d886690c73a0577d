// The CUDA driver API, loaded at run time: libcuda is dlopen'ed on first use and every entry
// point kiln calls is looked up once into a table. No driver, a stub driver or no device gives one
// clear error (and never a crash), so the same kiln binary runs on machines without a GPU.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
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
  X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync) X(cuMemcpyPeerAsync) X(cuMemsetD8Async) X(cuStreamCreate)    \
  X(cuStreamDestroy)                                                                                      \
  X(cuStreamSynchronize) X(cuStreamQuery) X(cuStreamWaitEvent) X(cuStreamBeginCapture)                   \
  X(cuStreamEndCapture)                                                                                   \
  X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime)        \
  X(cuModuleLoadDataEx) X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncGetAttribute)                  \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor) X(cuLaunchKernel) X(cuGraphInstantiate)                 \
  X(cuGraphLaunch) X(cuGraphDestroy) X(cuGraphExecDestroy)

// One kernel launch's counters as the GPU simulator records them: gpusim.h's GpusimKernelStats,
// declared again here because kiln does not depend on gpusim. The layout is a C ABI the two share:
// the same members, types and order (a change on one side needs the same change on the other, and
// `kiln bench --backend cuda` on the simulator checks the byte counts end to end,
// tests/lit/cli/bench_gpusim.test). Counted per warp-level request, as Nsight Compute counts.
struct SimulatedKernelStats {
  char name[256];  // the kernel's name, truncated to fit
  uint32_t grid[3], block[3];
  uint32_t registers_per_thread;  // from the PTX's .reg declarations: an upper bound on ptxas'
  uint32_t static_shared_bytes, dynamic_shared_bytes, local_bytes_per_thread;
  uint64_t warp_instructions;    // inst_executed
  uint64_t thread_instructions;  // thread_inst_executed
  uint64_t global_load_requests, global_load_sectors, global_load_bytes;
  uint64_t global_store_requests, global_store_sectors, global_store_bytes;
  uint64_t atomic_requests;
  uint64_t shared_requests, shared_wavefronts;
  uint32_t blocks_per_sm;
  double theoretical_occupancy, achieved_occupancy, sm_coverage;
  double sector_efficiency;           // bytes asked for / (32 x sectors touched), 1 = ideal
  double shared_wavefronts_per_request;  // 1 = conflict-free
};

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
  // The simulator's counters of each launch since the start or the last reset, in completion
  // order (a faulted launch is not recorded); Get returns 0, or -1 for an index out of range.
  size_t (*gpusimKernelStatsCount)() = nullptr;
  int (*gpusimKernelStatsGet)(size_t index, SimulatedKernelStats* out, size_t outSize) = nullptr;
  void (*gpusimKernelStatsReset)() = nullptr;
};

// The driver, loaded and initialised (cuInit) once per process; later calls return the same
// table or the same error. Fails when libcuda cannot be loaded ("no NVIDIA driver"), lacks an entry
// point kiln needs (a driver older than CUDA 12), or cuInit fails (no device, a stub library); and
// in a child forked after the driver started, where NVIDIA's driver refuses every call.
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
