// allocateHostBytes and releaseHostBytes (include/kiln/tensor.h): aligned host memory, freed blocks
// of 1 MiB and more kept for the next allocation of their size.
#include <algorithm>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <new>

#include "kiln/tensor.h"

namespace kiln {

namespace {

// Blocks of 256 bytes and more start on a 256-byte boundary, as cudaMalloc's do and the CPU
// backend's buffer plans assume of their arenas (runtime/buffer_plan.h); smaller ones on 64.
constexpr size_t kLargeAlignment = 256;
constexpr size_t kSmallAlignment = 64;
constexpr size_t kKeptFrom = size_t{1} << 20;  // smaller blocks: malloc reuses them well already
constexpr size_t kKeptAtMost = size_t{1} << 30;

struct Block {
  void* address;
  size_t bytes;
};

// The kept blocks, oldest first; the oldest go first when a newly freed block would pass the cap.
class KeptBlocks {
 public:
  void* take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it)
      if (it->bytes == bytes) {
        void* address = it->address;
        kept_ -= bytes;
        blocks_.erase(std::next(it).base());
        return address;
      }
    return nullptr;
  }
  // Keeps `block`, or frees it when it alone passes the cap.
  void keep(Block block) {
    if (block.bytes > kKeptAtMost) return std::free(block.address);
    std::lock_guard<std::mutex> lock(mutex_);
    while (kept_ + block.bytes > kKeptAtMost) {
      std::free(blocks_.front().address);
      kept_ -= blocks_.front().bytes;
      blocks_.pop_front();
    }
    blocks_.push_back(block);
    kept_ += block.bytes;
  }

 private:
  std::mutex mutex_;
  std::deque<Block> blocks_;
  size_t kept_ = 0;
};

// Never destroyed: a tensor in another static may be freed after this file's statics are gone.
KeptBlocks& keptBlocks() {
  static auto* blocks = new KeptBlocks;
  return *blocks;
}

size_t alignmentFor(size_t bytes) { return bytes >= kLargeAlignment ? kLargeAlignment : kSmallAlignment; }
// The size actually allocated: at least one byte, a whole number of alignments.
size_t roundedUp(size_t bytes) {
  bytes = std::max<size_t>(bytes, 1);
  size_t alignment = alignmentFor(bytes);
  return (bytes + alignment - 1) / alignment * alignment;
}

}  // namespace

void* allocateHostBytes(size_t bytes) {
  size_t size = roundedUp(bytes);
  if (size >= kKeptFrom)
    if (void* block = keptBlocks().take(size)) return block;
  void* block = std::aligned_alloc(alignmentFor(size), size);
  if (!block) throw std::bad_alloc();
  return block;
}

void releaseHostBytes(void* block, size_t bytes) noexcept {
  if (!block) return;
  size_t size = roundedUp(bytes);
  if (size >= kKeptFrom) return keptBlocks().keep({block, size});
  std::free(block);
}

}  // namespace kiln
