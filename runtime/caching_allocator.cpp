// CachingAllocator: best-fit free lists per pool, block splitting and merging within raw segments,
// and one retry after emptying the cache when the raw allocator is out of memory.
#include "runtime/caching_allocator.h"

#include "runtime/memory_check.h"

#include <algorithm>

namespace kiln {

namespace {

size_t roundUp(size_t n, size_t granule) { return (n + granule - 1) / granule * granule; }

// Beyond this a request cannot be rounded without overflowing (and no device has it anyway).
constexpr size_t kLargestRequest = size_t{1} << 62;

}  // namespace

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this == &o) return *this;
  reset();
  allocator_ = o.allocator_, address_ = o.address_, bytes_ = o.bytes_;
  o.allocator_ = nullptr, o.address_ = 0, o.bytes_ = 0;
  return *this;
}

void DeviceBuffer::reset() {
  if (allocator_) allocator_->free(address_);
  allocator_ = nullptr, address_ = 0, bytes_ = 0;
}

CachingAllocator::CachingAllocator(RawAllocator& raw) : raw_(raw) {}

CachingAllocator::~CachingAllocator() {
  // A segment's first block has no prev: that is where the raw allocation starts.
  for (auto& [address, block] : blocks_)
    if (!block->prev) raw_.free(address);
}

Expected<uint64_t> CachingAllocator::allocate(size_t bytes) {
  if (bytes > kLargestRequest) return Error("cannot allocate " + std::to_string(bytes) + " bytes of device memory");
  size_t size = std::max(kMinBlockBytes, roundUp(bytes, kMinBlockBytes));
  bool small = size <= kSmallRequestBytes;
  std::lock_guard<std::mutex> lock(mutex_);
  Block* block = takeFree(small, size);
  if (!block) {
    auto fresh = newSegment(small, size, bytes);
    if (!fresh) return fresh.error();
    block = *fresh;
  }
  return hand(block, size);
}

Expected<DeviceBuffer> CachingAllocator::allocateBuffer(size_t bytes) {
  auto address = allocate(bytes);
  if (!address) return address.error();
  return DeviceBuffer(this, *address, bytes);
}

// The smallest free block of the pool with at least `size` bytes, removed from its free list.
CachingAllocator::Block* CachingAllocator::takeFree(bool small, size_t size) {
  FreeList& list = pool(small);
  Block key{0, size, small};
  auto it = list.lower_bound(&key);
  if (it == list.end()) return nullptr;
  Block* block = *it;
  list.erase(it);
  stats_.cachedBytes -= block->size;
  return block;
}

// A new raw segment for a request of `size` rounded bytes, as one block not in any free list.
Expected<CachingAllocator::Block*> CachingAllocator::newSegment(bool small, size_t size, size_t requested) {
  size_t segment = small ? kSmallSegmentBytes : roundUp(size, kLargeSegmentGranule);
  auto address = raw_.allocate(segment);
  if (address && *address == 0) {
    // Out of memory: what the cache holds may be enough once returned (or less fragmented).
    ++stats_.oomRetries;
    releaseFreeSegments();
    address = raw_.allocate(segment);
  }
  if (!address)
    return Error("device allocation of " + formatBytes(requested) + " failed: " + address.error().message());
  if (*address == 0) return Error(outOfMemory(requested, segment));
  ++stats_.rawAllocations;
  auto block = std::make_unique<Block>(Block{*address, segment, small});
  Block* raw = block.get();
  blocks_[*address] = std::move(block);
  return raw;
}

// Marks `block` allocated, first splitting off what it has beyond `size` when that is worth
// keeping as a free block of its own.
uint64_t CachingAllocator::hand(Block* block, size_t size) {
  size_t remaining = block->size - size;
  bool split = block->small ? remaining >= kMinBlockBytes : remaining > kSmallRequestBytes;
  if (split) {
    auto rest = std::make_unique<Block>(Block{block->address + size, remaining, block->small});
    rest->prev = block;
    rest->next = block->next;
    if (block->next) block->next->prev = rest.get();
    block->next = rest.get();
    block->size = size;
    pool(block->small).insert(rest.get());
    stats_.cachedBytes += remaining;
    blocks_[rest->address] = std::move(rest);
  }
  block->allocated = true;
  stats_.inUseBytes += block->size;
  stats_.peakInUseBytes = std::max(stats_.peakInUseBytes, stats_.inUseBytes);
  return block->address;
}

void CachingAllocator::free(uint64_t address) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = blocks_.find(address);
  KILN_INTERNAL_CHECK(it != blocks_.end() && it->second->allocated,
                      "caching allocator: freeing an address it did not hand out (or freeing it twice)");
  Block* block = it->second.get();
  block->allocated = false;
  stats_.inUseBytes -= block->size;
  stats_.cachedBytes += block->size;
  FreeList& list = pool(block->small);
  // Merge with free neighbours: the merged block keeps the lower address.
  if (Block* next = block->next; next && !next->allocated) {
    list.erase(next);
    block->size += next->size;
    block->next = next->next;
    if (next->next) next->next->prev = block;
    blocks_.erase(next->address);
  }
  if (Block* prev = block->prev; prev && !prev->allocated) {
    list.erase(prev);
    prev->size += block->size;
    prev->next = block->next;
    if (block->next) block->next->prev = prev;
    blocks_.erase(block->address);
    block = prev;
  }
  list.insert(block);
}

void CachingAllocator::emptyCache() {
  std::lock_guard<std::mutex> lock(mutex_);
  releaseFreeSegments();
}

// A free block with no neighbours is a whole raw segment nobody uses: give it back.
void CachingAllocator::releaseFreeSegments() {
  for (FreeList* list : {&freeSmall_, &freeLarge_}) {
    for (auto it = list->begin(); it != list->end();) {
      Block* block = *it;
      if (block->prev || block->next) {
        ++it;
        continue;
      }
      it = list->erase(it);
      stats_.cachedBytes -= block->size;
      ++stats_.rawFrees;
      raw_.free(block->address);
      blocks_.erase(block->address);
    }
  }
}

std::string CachingAllocator::outOfMemory(size_t requested, size_t segment) const {
  return "out of device memory: tried to allocate " + formatBytes(requested) + " (" + std::to_string(requested) +
         " bytes, in a new " + formatBytes(segment) + " segment); " + formatBytes(stats_.inUseBytes) + " in use, " +
         formatBytes(stats_.cachedBytes) +
         " cached and not releasable (the cache of free segments was emptied and the allocation retried)";
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace kiln
