// Device memory for the CUDA backend: allocations (RAII) and host<->device copies, large ones
// through pinned staging buffers.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <string_view>

#include "ir/status.h"

namespace kiln::cuda {

// Device bytes owned until destruction. Size 0 is allowed and holds no memory (address 0).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& o) noexcept : address_(o.address_), bytes_(o.bytes_) { o.address_ = 0, o.bytes_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  CUdeviceptr address() const { return address_; }
  size_t bytes() const { return bytes_; }

 private:
  friend Expected<DeviceBuffer> allocateDevice(size_t bytes, std::string_view what);
  CUdeviceptr address_ = 0;
  size_t bytes_ = 0;
};

// `bytes` of device memory on the current context, 256-byte aligned. Out of memory is an error
// naming `what` ("%h of @mlp, f32[4096,4096]"), the size, and what the device has free.
Expected<DeviceBuffer> allocateDevice(size_t bytes, std::string_view what);

// Host -> device on `stream`. Copies of 1 MiB and more go through pinned staging buffers (the DMA
// engine reads pageable memory at a fraction of the bus's speed); the host memory may be reused as
// soon as this returns.
Status copyToDevice(CUdeviceptr dst, const void* src, size_t bytes, CUstream stream);
// Device -> host on `stream`, after the work queued before it; returns when `dst` holds the bytes.
Status copyToHost(void* dst, CUdeviceptr src, size_t bytes, CUstream stream);

}  // namespace kiln::cuda
