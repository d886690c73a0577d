// Opening a device and its primary context (context.h).
#include "runtime/cuda/context.h"

#include <cstdlib>
#include <map>
#include <mutex>

#include "codegen/gpu_arch.h"
#include "runtime/collectives/communicator.h"
#include "runtime/cuda/driver.h"

namespace kiln::cuda {

Expected<Device*> Device::get() {
  const char* env = std::getenv("KILN_CUDA_DEVICE");
  if (env && *env) {
    char* end = nullptr;
    long v = std::strtol(env, &end, 10);
    if (*end != '\0' || v < 0) return Error(std::string("KILN_CUDA_DEVICE='") + env + "' is not a device number");
    return get(static_cast<int>(v));
  }
  // Data-parallel ranks (one process per GPU) take GPU local_rank, wrapping when a machine runs
  // more ranks than it has GPUs.
  collectives::ReplicaInfo replica = collectives::replicaFromEnvironment();
  if (!replica.launchedByMpi || replica.localRank == 0) return get(0);
  auto d = driver();
  if (!d) return d.error();
  int count = 0;
  KILN_CU(cuDeviceGetCount, "", &count);
  return get(count > 0 ? replica.localRank % count : 0);
}

Expected<Device*> Device::get(int ordinal) {
  // One Device per ordinal for the whole process; a failed open is retried on the next call (a
  // transient error should not stick), but a missing driver fails fast in driver() anyway.
  // Never destroyed (as the driver): work left at exit never finds its context gone.
  static std::mutex& mutex = *new std::mutex;
  static auto& devices = *new std::map<int, std::unique_ptr<Device>>;
  if (auto d = driver(); !d) return d.error();  // e.g. a child forked after the driver started
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = devices.find(ordinal); it != devices.end()) {
    KILN_TRY(it->second->makeCurrent());
    return it->second.get();
  }
  auto opened = open(ordinal);
  if (!opened) return opened.error();
  Device* device = opened->get();
  devices[ordinal] = std::move(*opened);
  return device;
}

Expected<std::unique_ptr<Device>> Device::open(int ordinal) {
  auto d = driver();
  if (!d) return d.error();
  int count = 0;
  KILN_CU(cuDeviceGetCount, "", &count);
  if (ordinal >= count)
    return Error("GPU " + std::to_string(ordinal) + " does not exist: the driver sees " + std::to_string(count) +
                 " (KILN_CUDA_DEVICE picks one of 0.." + std::to_string(count - 1) + ")");
  std::unique_ptr<Device> device(new Device());
  device->ordinal_ = ordinal;
  KILN_CU(cuDeviceGet, "", &device->device_, ordinal);
  char name[256] = {};
  KILN_CU(cuDeviceGetName, "", name, sizeof name, device->device_);
  device->name_ = name;
  KILN_CU(cuDeviceGetAttribute, "compute capability", &device->ccMajor_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
          device->device_);
  KILN_CU(cuDeviceGetAttribute, "compute capability", &device->ccMinor_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
          device->device_);
  KILN_CU(cuDeviceGetAttribute, "multiprocessor count", &device->sms_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
          device->device_);
  size_t total = 0;
  KILN_CU(cuDeviceTotalMem, "", &total, device->device_);
  device->totalMemory_ = static_cast<int64_t>(total);
  // The primary context is shared with cuBLASLt, cuDNN and any CUDA runtime code in the process.
  KILN_CU(cuDevicePrimaryCtxRetain, device->name_, &device->context_, device->device_);
  KILN_TRY(device->makeCurrent());
  return device;
}

Device::~Device() {
  if (context_) api().cuDevicePrimaryCtxRelease(device_);
}

Status Device::makeCurrent() const { return check(api().cuCtxSetCurrent(context_), "cuCtxSetCurrent", name_); }

Expected<CUstream> Device::transferStream() {
  std::lock_guard<std::mutex> lock(streamMutex_);
  if (!transferStream_) KILN_CU(cuStreamCreate, "the transfer stream", &transferStream_, CU_STREAM_NON_BLOCKING);
  return transferStream_;
}

std::string Device::gpuArch() const {
  std::string exact = "sm_" + std::to_string(computeCapability());
  if (codegen::parseGpuArch(exact)) return exact;
  // Newer than LLVM 19 knows (Blackwell): sm_90 PTX, which the driver JIT-compiles forward.
  return computeCapability() > 90 ? "sm_90" : "sm_75";
}

std::string Device::describe() const {
  char memory[32];
  std::snprintf(memory, sizeof memory, "%.1f GiB", static_cast<double>(totalMemory_) / (1 << 30));
  int version = api().version;
  return name_ + " (sm_" + std::to_string(computeCapability()) + ", " + std::to_string(sms_) + " SMs, " + memory +
         "), driver " + std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

}  // namespace kiln::cuda
