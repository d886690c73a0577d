// Device memory for the CUDA backend: allocations (RAII) and host<->device copies, large ones
// through pinned staging buffers.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <string_view>

#include "ir/status.h"
#include "runtime/caching_allocator.h"

namespace kiln::cuda {

// Device bytes owned until destruction, from the process's caching allocator (so a step that
// frees and allocates the same sizes again makes no cuMemAlloc call). Size 0 holds no memory.
using DeviceBuffer = kiln::DeviceBuffer;

// `bytes` of device memory on the current context, 512-byte aligned, through the caching allocator
// (runtime/caching_allocator.h; one per process, for the one device a process runs on). Out of
// memory, after the allocator returned its cached blocks to the driver and tried again, is an
// error naming `what` ("intermediate %h (f32[4096,4096])"), the size, what is in use and cached,
// and what the device has free.
Expected<DeviceBuffer> allocateDevice(size_t bytes, std::string_view what);

// Host -> device on `stream`. Copies of 1 MiB and more go through pinned staging buffers (the DMA
// engine reads pageable memory at a fraction of the bus's speed). The copy is complete when this
// returns: the host memory may be reused, and work on any stream sees the data.
Status copyToDevice(CUdeviceptr dst, const void* src, size_t bytes, CUstream stream);
// Device -> host on `stream`, after the work queued before it; returns when `dst` holds the bytes.
Status copyToHost(void* dst, CUdeviceptr src, size_t bytes, CUstream stream);

// The caching allocator's figures (bytes in use, cached, peak), for reports.
AllocatorStats deviceMemoryStats();

}  // namespace kiln::cuda
