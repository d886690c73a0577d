// The simulated devices: KILN_GPUSIM_DEVICES H100 SXM GPUs (notes/gpusim.md section 2), each with
// its own 80 GiB memory of which only what is allocated takes host memory.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include <pthread.h>

#include "gpusim/driver/state.h"

namespace gpusim::driver {

namespace {

std::atomic<bool> g_initialised{false};
// Set in the child of a fork() after cuInit: as with NVIDIA's driver, such a child cannot use CUDA
// (every call, cuInit included, fails with CUDA_ERROR_NOT_INITIALIZED). A program that initialises
// the driver and then forks workers is broken on a real GPU; the simulator must say so too.
std::atomic<bool> g_forked_after_init{false};

void refuseCudaInForkedChild() { g_forked_after_init = true; }

int deviceCountFromEnvironment() {
  const char* env = std::getenv("KILN_GPUSIM_DEVICES");
  if (!env || !*env) return 1;
  char* end = nullptr;
  long n = std::strtol(env, &end, 10);
  if (*end != '\0' || n < 0 || n > 64) {
    std::fprintf(stderr, "gpusim: KILN_GPUSIM_DEVICES='%s' is not a device count from 0 to 64; using 1\n", env);
    return 1;
  }
  return static_cast<int>(n);
}

int asInt(uint32_t v) { return static_cast<int>(v); }

// Every attribute the simulator answers with something other than 0.
int attribute(CUdevice_attribute a, int ordinal) {
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return asInt(kH100.maxThreadsPerBlock);
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return asInt(kH100.maxStaticSharedPerBlock);
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: return kConstantMemory;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: return asInt(kH100.maxRegistersPerBlock);
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return 1980000;  // kHz
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: return 512;
    case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: return 1;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return asInt(kH100.smCount);
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: return 1;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: return 1;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: return 0x18 + ordinal;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: return 2619000;  // kHz
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 5120;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: return 50 * 1024 * 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: return asInt(kH100.maxThreadsPerSm);
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: return 3;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return 9;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return 0;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: return asInt(kH100.sharedPerSm);
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: return asInt(kH100.registersPerSm);
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO: return 2;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: return 1;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: return asInt(kH100.maxSharedPerBlockOptIn);
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: return asInt(kH100.maxBlocksPerSm);
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: return asInt(kH100.sharedReservedPerBlock);
    case CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE: return 50 * 1024 * 1024 * 3 / 4;
    case CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE: return 134213632;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH: return 1;
    default: return 0;
  }
}

}  // namespace

std::vector<Device>& devices() {
  static std::vector<Device>& d = *new std::vector<Device>;
  return d;
}

bool initialised() { return g_initialised.load() && !g_forked_after_init.load(); }

// A valid device ordinal for a call, or the error to return.
static CUresult checkDevice(CUdevice dev) {
  if (!initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev < 0 || static_cast<size_t>(dev) >= devices().size()) return CUDA_ERROR_INVALID_DEVICE;
  return CUDA_SUCCESS;
}

}  // namespace gpusim::driver

using namespace gpusim::driver;

GPUSIM_EXPORT CUresult cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (g_forked_after_init) return CUDA_ERROR_NOT_INITIALIZED;
  static std::once_flag once;
  std::call_once(once, [] {
    int n = deviceCountFromEnvironment();
    std::vector<Device>& d = devices();
    d.resize(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      d[i].ordinal = i;
      d[i].memory = std::make_unique<gpusim::DeviceMemory>(kTotalMemory);
      d[i].primary = new CUctx_st;
      d[i].primary->device = &d[i];
    }
    launchOptions();  // reads the launch settings now, reporting a bad value once
    pthread_atfork(nullptr, nullptr, refuseCudaInForkedChild);
    g_initialised = true;
  });
  return devices().empty() ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult cuDriverGetVersion(int* version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult cuDeviceGetCount(int* count) {
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  if (!initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  *count = static_cast<int>(devices().size());
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = checkDevice(ordinal)) return r;
  *device = ordinal;
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = checkDevice(dev)) return r;
  std::snprintf(name, static_cast<size_t>(len), "NVIDIA H100 80GB HBM3 (gpusim)");
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  if (!pi || attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = checkDevice(dev)) return r;
  *pi = attribute(attrib, dev);
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult cuDeviceTotalMem(size_t* bytes, CUdevice dev) {
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = checkDevice(dev)) return r;
  *bytes = kTotalMemory;
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  if (!uuid) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = checkDevice(dev)) return r;
  // "GPU-9p51m-..." style uuids are opaque: a fixed pattern plus the ordinal tells devices apart.
  static constexpr char kPattern[16] = {'g', 'p', 'u', 's', 'i', 'm', '-', 'h', '1', '0', '0', '-', 0, 0, 0, 0};
  std::memcpy(uuid->bytes, kPattern, sizeof kPattern);
  uuid->bytes[15] = static_cast<char>(dev);
  return CUDA_SUCCESS;
}
