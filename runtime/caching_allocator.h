// A caching device-memory allocator, PyTorch's CUDACachingAllocator in miniature. Device memory
// is slow to get (cuMemAlloc synchronises the device), so freed blocks are kept and handed out
// again instead of being returned to the driver. Generic over a RawAllocator: the CUDA runtime
// plugs in one that calls cuMemAlloc / cuMemFree, tests plug in a fake. Addresses are uint64_t,
// like CUdeviceptr.
//
// Blocks and pools:
//  - every request is rounded up to a multiple of 512 bytes (at least 512: a zero-byte request
//    still gets a distinct, valid address);
//  - requests up to 1 MiB come from the small pool, carved out of 2 MiB raw segments; larger ones
//    from the large pool, whose raw segments are the request rounded up to 2 MiB;
//  - a request takes the smallest free block of its pool that fits (best fit), split when the
//    remainder is worth keeping (small pool: at least 512 bytes; large pool: more than 1 MiB, so
//    that large segments are not whittled into small blocks); a freed block merges with free
//    neighbours of its segment;
//  - when the raw allocator is out of memory, every cached segment that is wholly free is
//    returned to it and the request is retried once; if that fails too the error says how much
//    was requested, in use and cached.
//
// Ownership: allocate() returns a plain address that must be given back with free(); allocateBuffer()
// wraps the same in a move-only DeviceBuffer that frees itself. Both must be freed before the
// allocator dies: its destructor returns every segment to the raw allocator, in use or not.
// Thread-safe: one mutex guards all state (the raw allocator is called with it held).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>

#include "ir/status.h"

namespace kiln {

// Where device memory really comes from.
class RawAllocator {
 public:
  virtual ~RawAllocator() = default;
  // The address of `bytes` fresh bytes (bytes > 0); 0 when the device is out of memory (the
  // caching allocator then empties its cache and retries); an Error for any other failure.
  virtual Expected<uint64_t> allocate(size_t bytes) = 0;
  // Gives back an address allocate() returned, with all its bytes.
  virtual void free(uint64_t address) = 0;
};

struct AllocatorStats {
  size_t inUseBytes = 0;       // in blocks handed out (rounded sizes)
  size_t cachedBytes = 0;      // held from the raw allocator but free: reusable without a raw call
  size_t peakInUseBytes = 0;   // the most inUseBytes ever reached
  uint64_t rawAllocations = 0; // successful RawAllocator::allocate calls, ever
  uint64_t rawFrees = 0;       // RawAllocator::free calls, ever
  uint64_t oomRetries = 0;     // times the raw allocator ran out and the cache was emptied

  size_t reservedBytes() const { return inUseBytes + cachedBytes; }  // held from the raw allocator
};

class CachingAllocator;

// A block from a CachingAllocator, freed when the handle dies. Move-only.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(CachingAllocator* allocator, uint64_t address, size_t bytes)
      : allocator_(allocator), address_(address), bytes_(bytes) {}
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { reset(); }

  uint64_t address() const { return address_; }
  size_t bytes() const { return bytes_; }  // as requested
  explicit operator bool() const { return allocator_ != nullptr; }
  void reset();  // frees the block now

 private:
  CachingAllocator* allocator_ = nullptr;
  uint64_t address_ = 0;
  size_t bytes_ = 0;
};

class CachingAllocator {
 public:
  static constexpr size_t kMinBlockBytes = 512;               // request granule
  static constexpr size_t kSmallRequestBytes = 1 << 20;       // up to this: the small pool
  static constexpr size_t kSmallSegmentBytes = 2 << 20;       // raw segment of the small pool
  static constexpr size_t kLargeSegmentGranule = 2 << 20;     // large segments: multiples of this

  explicit CachingAllocator(RawAllocator& raw);  // `raw` must outlive the allocator
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // The address of at least `bytes` bytes: its raw segment's base plus a multiple of 512, so as
  // aligned as the raw allocator's own addresses (cuMemAlloc's: 256 bytes or more). Errors: out of
  // memory after emptying the cache (saying what was requested, in use and cached), or the raw
  // allocator's own error.
  Expected<uint64_t> allocate(size_t bytes);
  // Returns a block allocate() gave; it stays cached for reuse. Freeing anything else is a bug in
  // the caller (an internal error).
  void free(uint64_t address);
  // allocate() as a handle that frees itself.
  Expected<DeviceBuffer> allocateBuffer(size_t bytes);

  // Returns every wholly free cached segment to the raw allocator.
  void emptyCache();
  AllocatorStats stats() const;

 private:
  struct Block {
    uint64_t address;
    size_t size;
    bool small;              // its pool
    bool allocated = false;
    Block* prev = nullptr;   // neighbours in the same raw segment
    Block* next = nullptr;
  };
  struct BySizeThenAddress {
    bool operator()(const Block* a, const Block* b) const {
      return a->size != b->size ? a->size < b->size : a->address < b->address;
    }
  };
  using FreeList = std::set<Block*, BySizeThenAddress>;

  FreeList& pool(bool small) { return small ? freeSmall_ : freeLarge_; }
  Block* takeFree(bool small, size_t size);
  Expected<Block*> newSegment(bool small, size_t size, size_t requested);
  uint64_t hand(Block* block, size_t size);
  void releaseFreeSegments();
  std::string outOfMemory(size_t requested, size_t segment) const;

  RawAllocator& raw_;
  mutable std::mutex mutex_;
  std::unordered_map<uint64_t, std::unique_ptr<Block>> blocks_;  // every block, free or not, by address
  FreeList freeSmall_, freeLarge_;
  AllocatorStats stats_;
};

}  // namespace kiln
