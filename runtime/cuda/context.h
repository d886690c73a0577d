// A GPU and its primary context (the one the CUDA runtime, cuBLASLt and cuDNN also use), opened
// once per process and kept for its lifetime.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "ir/status.h"

namespace kiln::cuda {

class Device {
 public:
  // The device kiln runs on: ordinal $KILN_CUDA_DEVICE, else 0. Loads the driver, retains the
  // device's primary context and makes it current on this thread. Every error says what is missing
  // (no driver, no GPU, an ordinal past the device count).
  static Expected<Device*> get();
  static Expected<Device*> get(int ordinal);

  // Makes the context current on the calling thread (each thread that touches the device first).
  Status makeCurrent() const;
  // A stream for copies that belong to no program (DeviceTensor uploads and downloads), created
  // on first use. Copies on it are synchronous for the caller, so no ordering is left to others.
  Expected<CUstream> transferStream();

  int ordinal() const { return ordinal_; }
  CUdevice handle() const { return device_; }
  CUcontext context() const { return context_; }
  const std::string& name() const { return name_; }                     // "NVIDIA H100 80GB HBM3"
  int computeCapability() const { return ccMajor_ * 10 + ccMinor_; }    // 90 for sm_90
  int multiprocessors() const { return sms_; }
  int64_t totalMemory() const { return totalMemory_; }
  // "sm_90": the PTX target kiln compiles for on this device (LLVM 19's newest for newer GPUs,
  // whose driver JIT-compiles it). Only meaningful from compute capability 7.5 on (Program
  // refuses older GPUs).
  std::string gpuArch() const;
  // "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.2 GiB), driver 13.0": for reports and benchmarks.
  std::string describe() const;

  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  ~Device();

 private:
  Device() = default;
  static Expected<std::unique_ptr<Device>> open(int ordinal);
  int ordinal_ = 0;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  std::string name_;
  int ccMajor_ = 0, ccMinor_ = 0, sms_ = 0;
  int64_t totalMemory_ = 0;
  std::mutex streamMutex_;
  CUstream transferStream_ = nullptr;  // never destroyed, as the Device itself
};

}  // namespace kiln::cuda
