// A tensor in GPU memory, for running compiled functions without a host round trip (parameters
// and optimizer state that stay on the device across steps). Copies of a DeviceTensor share its
// memory, which is freed (back to kiln's allocator) when the last copy goes. Part of kiln's
// public API (docs/api.md).
#pragma once

#include <cstdint>
#include <memory>

#include "kiln/status.h"
#include "kiln/tensor.h"
#include "kiln/types.h"

namespace kiln {

class DeviceTensor {
 public:
  DeviceTensor() = default;

  // A copy of `host` on the GPU kiln runs on (cuda::Device::get(): $KILN_CUDA_DEVICE, else 0).
  // Fails with the driver's message where there is no GPU.
  static Expected<DeviceTensor> upload(const Tensor& host);
  // A zero-filled device tensor.
  static Expected<DeviceTensor> zeros(const TensorType& type);
  // A device tensor whose contents are undefined until written (torch.empty): for results.
  static Expected<DeviceTensor> uninitialized(const TensorType& type);
  // The bytes, back on the host (waits for the work that writes them).
  Expected<Tensor> download() const;

  const TensorType& type() const { return type_; }
  size_t byteSize() const { return type_.byteSize(); }
  // The CUdeviceptr (0 for an empty tensor).
  uint64_t address() const { return address_; }

  // For the runtime: wraps memory that `owner` keeps alive.
  DeviceTensor(TensorType type, uint64_t address, std::shared_ptr<void> owner)
      : type_(std::move(type)), address_(address), storage_(std::move(owner)) {}

 private:
  TensorType type_;
  uint64_t address_ = 0;
  std::shared_ptr<void> storage_;
};

}  // namespace kiln
