// CachingAllocator over a fake raw allocator (a bump pointer with a byte limit): reuse, best fit,
// splitting and merging, the small and large pools, the out-of-memory retry and its error text,
// emptyCache, stats, DeviceBuffer and concurrent use.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "runtime/caching_allocator.h"

namespace kiln {
namespace {

constexpr size_t KiB = 1024, MiB = 1024 * 1024;

// Hands out fresh, never reused addresses; out of memory (0) past `limit` live bytes.
class FakeRawAllocator : public RawAllocator {
 public:
  explicit FakeRawAllocator(size_t limit = SIZE_MAX) : limit_(limit) {}

  Expected<uint64_t> allocate(size_t bytes) override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++calls;
    if (failWith) return Error(*failWith);
    if (bytes > limit_ - liveBytes()) return uint64_t{0};
    uint64_t address = next_;
    next_ += (bytes + 2 * MiB - 1) / (2 * MiB) * (2 * MiB) + 2 * MiB;  // a gap: segments never touch
    live[address] = bytes;
    return address;
  }
  void free(uint64_t address) override {
    std::lock_guard<std::mutex> lock(mutex_);
    EXPECT_EQ(live.erase(address), 1u) << "freeing an address the raw allocator did not give";
  }
  size_t liveBytes() const {
    size_t n = 0;
    for (const auto& [address, bytes] : live) n += bytes;
    return n;
  }

  std::map<uint64_t, size_t> live;
  std::optional<std::string> failWith;
  int calls = 0;

 private:
  std::mutex mutex_;
  size_t limit_;
  uint64_t next_ = 0x7f0000000000;
};

uint64_t allocate(CachingAllocator& a, size_t bytes) {
  auto address = a.allocate(bytes);
  EXPECT_TRUE(address.ok()) << address.error().str();
  return address.ok() ? *address : 0;
}

TEST(CachingAllocator, ReusesAFreedBlockWithoutARawAllocation) {
  FakeRawAllocator raw;
  CachingAllocator a(raw);
  uint64_t first = allocate(a, 1000);
  a.free(first);
  EXPECT_EQ(allocate(a, 1000), first);
  EXPECT_EQ(a.stats().rawAllocations, 1u);
  EXPECT_EQ(raw.calls, 1);
}

TEST(CachingAllocator, SmallRequestsAreRoundedAndCarvedFromOneSegment) {
  FakeRawAllocator raw;
  CachingAllocator a(raw);
  uint64_t p = allocate(a, 1), q = allocate(a, 512), r = allocate(a, 513), z = allocate(a, 0);
  EXPECT_EQ(q, p + 512);
  EXPECT_EQ(r, q + 512);
  EXPECT_EQ(z, r + 1024);  // 513 rounds to 1024; a zero-byte request still gets its own block
  AllocatorStats s = a.stats();
  EXPECT_EQ(s.rawAllocations, 1u);
  EXPECT_EQ(raw.live.begin()->second, CachingAllocator::kSmallSegmentBytes);
  EXPECT_EQ(s.inUseBytes, 512u + 512 + 1024 + 512);
  EXPECT_EQ(s.cachedBytes, 2 * MiB - s.inUseBytes);
  EXPECT_EQ(s.reservedBytes(), 2 * MiB);
}

TEST(CachingAllocator, TakesTheSmallestFreeBlockThatFits) {
  FakeRawAllocator raw;
  CachingAllocator a(raw);
  uint64_t big = allocate(a, 4 * KiB);
  uint64_t fence1 = allocate(a, 512);
  uint64_t small = allocate(a, 1 * KiB);
  uint64_t fence2 = allocate(a, 512);
  a.free(big);
  a.free(small);
  EXPECT_EQ(allocate(a, 1 * KiB), small);       // not the 4 KiB block, nor the segment's tail
  EXPECT_EQ(allocate(a, 3 * KiB), big);         // split: the first 3 KiB of the 4 KiB block
  EXPECT_EQ(allocate(a, 1 * KiB), big + 3 * KiB);  // and its remaining 1 KiB
  (void)fence1, (void)fence2;
}

TEST(CachingAllocator, FreedNeighboursMergeIntoOneBlock) {
  FakeRawAllocator raw;
  CachingAllocator a(raw);
  uint64_t x = allocate(a, 1 * KiB), y = allocate(a, 1 * KiB), z = allocate(a, 1 * KiB);
  uint64_t fence = allocate(a, 512);
  a.free(x);
  a.free(z);
  a.free(y);  // merges with both neighbours
  EXPECT_EQ(allocate(a, 3 * KiB), x);
  a.free(fence);
  EXPECT_EQ(a.stats().rawAllocations, 1u);
}

TEST(CachingAllocator, LargeRequestsGetTheirOwnSegmentsRoundedTo2MiB) {
  FakeRawAllocator raw;
  CachingAllocator a(raw);
  uint64_t p = allocate(a, 3 * MiB);
  EXPECT_EQ(raw.live.at(p), 4 * MiB);
  // The 1 MiB left is not worth a block of its own in the large pool: the block is all 4 MiB.
  EXPECT_EQ(a.stats().inUseBytes, 4 * MiB);
  EXPECT_EQ(a.stats().cachedBytes, 0u);
  a.free(p);
  // A small request never takes a large block: a new small segment.
  allocate(a, 512);
  EXPECT_EQ(a.stats().rawAllocations, 2u);
  // A large request does: 1.5 MiB from the cached 4 MiB block, split as the 2.5 MiB left are
  // over 1 MiB; then 2 MiB from those, not split as 0.5 MiB would be left.
  uint64_t q = allocate(a, 1 * MiB + 512 * KiB);
  EXPECT_EQ(q, p);
  EXPECT_EQ(a.stats().rawAllocations, 2u);
  uint64_t r = allocate(a, 2 * MiB);
  EXPECT_EQ(r, p + 1 * MiB + 512 * KiB);
  EXPECT_EQ(a.stats().rawAllocations, 2u);
}

TEST(CachingAllocator, OutOfMemoryEmptiesTheCacheAndRetriesOnce) {
  FakeRawAllocator raw(8 * MiB);
  CachingAllocator a(raw);
  a.free(allocate(a, 512));      // a 2 MiB small segment, now wholly free and cached
  a.free(allocate(a, 3 * MiB));  // a 4 MiB large segment, cached
  EXPECT_EQ(raw.liveBytes(), 6 * MiB);
  // 7 MiB needs an 8 MiB segment: only after both cached segments are returned.
  uint64_t p = allocate(a, 7 * MiB);
  EXPECT_NE(p, 0u);
  AllocatorStats s = a.stats();
  EXPECT_EQ(s.oomRetries, 1u);
  EXPECT_EQ(s.rawFrees, 2u);
  EXPECT_EQ(s.rawAllocations, 3u);
  EXPECT_EQ(s.inUseBytes, 8 * MiB);
  EXPECT_EQ(s.cachedBytes, 0u);
  EXPECT_EQ(raw.live.size(), 1u);
}

TEST(CachingAllocator, OutOfMemoryAfterTheRetrySaysWhatWasRequestedUsedAndCached) {
  FakeRawAllocator raw(8 * MiB);
  CachingAllocator a(raw);
  uint64_t held = allocate(a, 512);  // pins its 2 MiB segment: it cannot be returned
  a.free(allocate(a, 1000));         // a second block of the same segment, cached
  auto failed = a.allocate(7 * MiB);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().message(),
            "out of device memory: tried to allocate 7.3 MB (7340032 bytes, in a new 8.4 MB segment); 512 B in use, "
            "2.1 MB cached and not releasable (the cache of free segments was emptied and the allocation retried)");
  EXPECT_EQ(a.stats().oomRetries, 1u);
  EXPECT_EQ(raw.calls, 3);  // the small segment, then the 8 MiB try and its retry
  a.free(held);
  // With the small segment free, the same request now succeeds (through another retry).
  EXPECT_TRUE(a.allocate(7 * MiB).ok());
}

TEST(CachingAllocator, OtherRawErrorsArePassedOnWithTheRequest) {
  FakeRawAllocator raw;
  raw.failWith = "cuMemAlloc: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)";
  CachingAllocator a(raw);
  auto failed = a.allocate(1500);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().message(),
            "device allocation of 1.5 KB failed: cuMemAlloc: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access "
            "was encountered)");
  EXPECT_EQ(a.stats().oomRetries, 0u);
  EXPECT_FALSE(a.allocate(size_t{1} << 63).ok());
}

TEST(CachingAllocator, EmptyCacheReturnsOnlyWhollyFreeSegments) {
  FakeRawAllocator raw;
  CachingAllocator a(raw);
  uint64_t kept = allocate(a, 512);  // small segment in use
  a.free(allocate(a, 3 * MiB));      // large segment, free
  a.free(allocate(a, 5 * MiB));      // another, free
  EXPECT_EQ(raw.live.size(), 3u);
  a.emptyCache();
  EXPECT_EQ(raw.live.size(), 1u);
  AllocatorStats s = a.stats();
  EXPECT_EQ(s.rawFrees, 2u);
  EXPECT_EQ(s.inUseBytes, 512u);
  EXPECT_EQ(s.cachedBytes, 2 * MiB - 512);
  a.free(kept);
  a.emptyCache();
  EXPECT_TRUE(raw.live.empty());
  EXPECT_EQ(a.stats().reservedBytes(), 0u);
}

TEST(CachingAllocator, PeakInUseIsTheHighWaterMark) {
  FakeRawAllocator raw;
  CachingAllocator a(raw);
  uint64_t p = allocate(a, 10 * KiB), q = allocate(a, 20 * KiB);
  a.free(p);
  a.free(q);
  allocate(a, 1 * KiB);
  EXPECT_EQ(a.stats().peakInUseBytes, 30 * KiB);
  EXPECT_EQ(a.stats().inUseBytes, 1 * KiB);
}

TEST(CachingAllocator, DeviceBufferFreesItselfAndMoves) {
  FakeRawAllocator raw;
  CachingAllocator a(raw);
  {
    auto buffer = a.allocateBuffer(100);
    ASSERT_TRUE(buffer.ok());
    EXPECT_EQ(buffer->bytes(), 100u);
    DeviceBuffer moved = std::move(*buffer);
    EXPECT_FALSE(*buffer);
    EXPECT_TRUE(moved);
    EXPECT_EQ(a.stats().inUseBytes, 512u);
  }
  EXPECT_EQ(a.stats().inUseBytes, 0u);
  DeviceBuffer b = std::move(*a.allocateBuffer(100));
  b.reset();
  EXPECT_EQ(a.stats().inUseBytes, 0u);
}

TEST(CachingAllocator, DestructorReturnsEverySegment) {
  FakeRawAllocator raw;
  {
    CachingAllocator a(raw);
    allocate(a, 100);
    allocate(a, 3 * MiB);
    uint64_t p = allocate(a, 2 * KiB);
    a.free(p);
  }
  EXPECT_TRUE(raw.live.empty());
}

TEST(CachingAllocator, ConcurrentAllocationsNeverOverlap) {
  FakeRawAllocator raw;
  CachingAllocator a(raw);
  std::mutex m;
  std::map<uint64_t, size_t> live;  // every block handed out and not yet freed, across threads
  bool overlap = false;
  auto worker = [&](unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<std::pair<uint64_t, size_t>> mine;
    for (int i = 0; i < 2000; ++i) {
      if (!mine.empty() && rng() % 2) {
        auto [address, bytes] = mine.back();
        mine.pop_back();
        {
          std::lock_guard<std::mutex> lock(m);
          live.erase(address);
        }
        a.free(address);
        continue;
      }
      size_t bytes = rng() % 8 == 0 ? 1 * MiB + rng() % (3 * MiB) : 1 + rng() % (64 * KiB);
      auto address = a.allocate(bytes);
      ASSERT_TRUE(address.ok());
      std::lock_guard<std::mutex> lock(m);
      auto next = live.lower_bound(*address);
      if (next != live.end() && next->first < *address + bytes) overlap = true;
      if (next != live.begin() && std::prev(next)->first + std::prev(next)->second > *address) overlap = true;
      live[*address] = bytes;
      mine.emplace_back(*address, bytes);
    }
    for (auto [address, bytes] : mine) {
      {
        std::lock_guard<std::mutex> lock(m);
        live.erase(address);
      }
      a.free(address);
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 4; ++t) threads.emplace_back(worker, t);
  for (std::thread& t : threads) t.join();
  EXPECT_FALSE(overlap);
  EXPECT_EQ(a.stats().inUseBytes, 0u);
  EXPECT_EQ(a.stats().reservedBytes(), raw.liveBytes());
}

}  // namespace
}  // namespace kiln
