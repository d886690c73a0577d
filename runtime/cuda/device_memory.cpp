// Device allocations and staged copies (device_memory.h).
#include "runtime/cuda/device_memory.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#include "runtime/cuda/driver.h"

namespace kiln::cuda {

namespace {

std::string gib(size_t bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.2f GiB", static_cast<double>(bytes) / (1 << 30));
  return s;
}

// Two pinned buffers used in turn: while the DMA engine copies one, the CPU fills the other.
// One set per process (copies are serialised by its mutex); allocated on the first large copy.
class Staging {
 public:
  static constexpr size_t kChunk = 8 << 20;
  static constexpr size_t kThreshold = 1 << 20;

  static Staging& get() {
    static Staging& s = *new Staging;  // never destroyed: pinned memory outlives static teardown
    return s;
  }

  Status toDevice(CUdeviceptr dst, const uint8_t* src, size_t bytes, CUstream stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    KILN_TRY(ensureBuffers());
    for (size_t done = 0, turn = 0; done < bytes; done += kChunk, turn ^= 1) {
      size_t n = std::min(kChunk, bytes - done);
      // The buffer's previous copy must have finished before the CPU overwrites it.
      KILN_CU(cuEventSynchronize, "staging buffer", events_[turn]);
      std::memcpy(buffers_[turn], src + done, n);
      KILN_CU(cuMemcpyHtoDAsync, "staged host-to-device copy", dst + done, buffers_[turn], n, stream);
      KILN_CU(cuEventRecord, "staging buffer", events_[turn], stream);
    }
    // Done when it returns, as the unstaged path: the reader may run on another (non-blocking)
    // stream that nothing orders after these copies (the GPU simulator's initcheck caught a
    // kernel reading an input whose last chunks were still in flight).
    KILN_CU(cuStreamSynchronize, "staged host-to-device copy", stream);
    return {};
  }

  Status toHost(uint8_t* dst, CUdeviceptr src, size_t bytes, CUstream stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    KILN_TRY(ensureBuffers());
    // Queue the first chunk, then: queue chunk i+1 into the other buffer, wait for chunk i, copy it out.
    size_t chunks = (bytes + kChunk - 1) / kChunk;
    auto queue = [&](size_t i) -> Status {
      size_t n = std::min(kChunk, bytes - i * kChunk);
      KILN_CU(cuMemcpyDtoHAsync, "staged device-to-host copy", buffers_[i % 2], src + i * kChunk, n, stream);
      KILN_CU(cuEventRecord, "staging buffer", events_[i % 2], stream);
      return {};
    };
    KILN_TRY(queue(0));
    for (size_t i = 0; i < chunks; ++i) {
      if (i + 1 < chunks) KILN_TRY(queue(i + 1));
      KILN_CU(cuEventSynchronize, "staged device-to-host copy", events_[i % 2]);
      std::memcpy(dst + i * kChunk, buffers_[i % 2], std::min(kChunk, bytes - i * kChunk));
    }
    return {};
  }

 private:
  Status ensureBuffers() {
    for (int i = 0; i < 2; ++i) {
      if (!buffers_[i]) KILN_CU(cuMemAllocHost, "a pinned staging buffer", &buffers_[i], kChunk);
      if (!events_[i]) KILN_CU(cuEventCreate, "staging buffer", &events_[i], CU_EVENT_DISABLE_TIMING);
    }
    return {};
  }

  std::mutex mutex_;
  void* buffers_[2] = {nullptr, nullptr};
  CUevent events_[2] = {nullptr, nullptr};
};

}  // namespace

namespace {

// cuMemAlloc and cuMemFree under the caching allocator; out of memory is address 0, which makes
// the allocator return its cached blocks and try once more.
class DriverAllocator : public RawAllocator {
 public:
  Expected<uint64_t> allocate(size_t bytes) override {
    CUdeviceptr address = 0;
    CUresult r = api().cuMemAlloc(&address, bytes);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return uint64_t{0};
    KILN_TRY(check(r, "cuMemAlloc"));
    return static_cast<uint64_t>(address);
  }
  void free(uint64_t address) override { api().cuMemFree(static_cast<CUdeviceptr>(address)); }
};

// One cache per context (per GPU: kiln uses the primary contexts), the current one's: a placed
// function's stages allocate on several GPUs of one process. Never destroyed: buffers still alive
// at exit (in static objects) must not find it gone.
CachingAllocator& allocator() {
  static DriverAllocator& raw = *new DriverAllocator;
  static std::mutex& mutex = *new std::mutex;
  static auto& caches = *new std::map<CUcontext, CachingAllocator*>;
  CUcontext current = nullptr;
  api().cuCtxGetCurrent(&current);
  std::lock_guard<std::mutex> lock(mutex);
  CachingAllocator*& cache = caches[current];
  if (!cache) cache = new CachingAllocator(raw);
  return *cache;
}

}  // namespace

Expected<DeviceBuffer> allocateDevice(size_t bytes, std::string_view what) {
  if (bytes == 0) return DeviceBuffer();
  auto buffer = allocator().allocateBuffer(bytes);
  if (buffer) return buffer;
  size_t free = 0, total = 0;
  api().cuMemGetInfo(&free, &total);
  return Error(buffer.error().message() + "; for " + std::string(what) + ", with " + gib(free) + " of " + gib(total) +
               " free on the GPU");
}

AllocatorStats deviceMemoryStats() { return allocator().stats(); }

Status copyToDevice(CUdeviceptr dst, const void* src, size_t bytes, CUstream stream) {
  if (bytes == 0) return {};
  if (bytes >= Staging::kThreshold) return Staging::get().toDevice(dst, static_cast<const uint8_t*>(src), bytes, stream);
  KILN_CU(cuMemcpyHtoDAsync, "host-to-device copy", dst, src, bytes, stream);
  // A pageable source is copied out before the call returns only for the synchronous variant;
  // waiting here keeps the promise that the caller may reuse `src` at once.
  KILN_CU(cuStreamSynchronize, "host-to-device copy", stream);
  return {};
}

Status copyToHost(void* dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  if (bytes == 0) return {};
  if (bytes >= Staging::kThreshold) return Staging::get().toHost(static_cast<uint8_t*>(dst), src, bytes, stream);
  KILN_CU(cuMemcpyDtoHAsync, "device-to-host copy", dst, src, bytes, stream);
  KILN_CU(cuStreamSynchronize, "device-to-host copy", stream);
  return {};
}

}  // namespace kiln::cuda
