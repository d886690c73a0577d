// The simulated device's memory (memory.h).
#include "gpusim/exec/memory.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace gpusim {

namespace {
constexpr uint64_t kAlignment = 256;  // cuMemAlloc's alignment
constexpr uint64_t kGap = 4096;       // never-mapped bytes between allocations, so overruns land nowhere
}  // namespace

std::string hex(uint64_t address) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, address);
  return buf;
}

void Allocation::markWritten(uint64_t address, uint64_t bytes) {
  uint64_t first = address - base, last = first + bytes;
  for (uint64_t i = first; i < last;) {
    uint64_t word = i / 64, bit = i % 64;
    uint64_t n = std::min<uint64_t>(64 - bit, last - i);
    uint64_t mask = (n == 64 ? ~0ull : ((1ull << n) - 1)) << bit;
    if ((written[word].load(std::memory_order_relaxed) & mask) != mask) written[word].fetch_or(mask, std::memory_order_relaxed);
    i += n;
  }
}

bool Allocation::isWritten(uint64_t address, uint64_t bytes) const {
  uint64_t first = address - base, last = first + bytes;
  for (uint64_t i = first; i < last;) {
    uint64_t word = i / 64, bit = i % 64;
    uint64_t n = std::min<uint64_t>(64 - bit, last - i);
    uint64_t mask = (n == 64 ? ~0ull : ((1ull << n) - 1)) << bit;
    if ((written[word].load(std::memory_order_relaxed) & mask) != mask) return false;
    i += n;
  }
  return true;
}

uint64_t DeviceMemory::allocate(uint64_t bytes, std::string label, bool initialised) {
  if (bytes == 0) bytes = 1;
  uint64_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (used_.load() + rounded > capacity_) return 0;
  auto a = std::make_unique<Allocation>();
  a->size = bytes;
  a->label = std::move(label);
  uint64_t words = (rounded + 63) / 64;
  a->data.reset(static_cast<uint8_t*>(std::calloc(rounded, 1)));
  a->written.reset(static_cast<std::atomic<uint64_t>*>(std::calloc(words, sizeof(uint64_t))));
  if (!a->data || !a->written) return 0;  // the host itself is out of memory: report it as the device's
  if (initialised)
    for (uint64_t i = 0; i < words; ++i) a->written[i].store(~0ull, std::memory_order_relaxed);
  std::unique_lock lock(mutex_);
  a->base = next_;
  next_ += rounded + kGap;
  used_ += rounded;
  uint64_t base = a->base;
  allocations_.emplace(base, std::move(a));
  return base;
}

bool DeviceMemory::free(uint64_t address) {
  std::unique_lock lock(mutex_);
  auto it = allocations_.find(address);
  if (it == allocations_.end() || it->second->freed.load()) return false;
  Allocation& a = *it->second;
  a.freed.store(true);
  used_ -= (a.size + kAlignment - 1) / kAlignment * kAlignment;
  // The record stays for use-after-free reports; large allocations give their bytes back (find()
  // never returns a freed allocation, so nothing reads them again).
  if (a.size >= (1u << 20)) {
    a.data.reset();
    a.written.reset();
  }
  return true;
}

Allocation* DeviceMemory::find(uint64_t address, uint64_t bytes) {
  std::shared_lock lock(mutex_);
  auto it = allocations_.upper_bound(address);
  if (it == allocations_.begin()) return nullptr;
  --it;
  Allocation* a = it->second.get();
  if (a->freed.load(std::memory_order_relaxed) || !a->contains(address, bytes)) return nullptr;
  return a;
}

const Allocation* DeviceMemory::nearest(uint64_t address) const {
  std::shared_lock lock(mutex_);
  if (allocations_.empty()) return nullptr;
  auto after = allocations_.upper_bound(address);
  const Allocation* best = nullptr;
  uint64_t bestDistance = ~0ull;
  auto consider = [&](const Allocation* a) {
    uint64_t d = address < a->base ? a->base - address : (address >= a->base + a->size ? address - (a->base + a->size) : 0);
    if (d < bestDistance) bestDistance = d, best = a;
  };
  if (after != allocations_.end()) consider(after->second.get());
  if (after != allocations_.begin()) consider(std::prev(after)->second.get());
  return best;
}

std::string DeviceMemory::describe(uint64_t address, uint64_t bytes) const {
  if (address >= kSharedWindow && address < kSharedWindow + kWindowSize)
    return hex(address) + " is a generic address in the shared-memory window, not global memory";
  if (address >= kLocalWindow && address < kLocalWindow + kWindowSize)
    return hex(address) + " is a generic address in the local-memory window, not global memory";
  const Allocation* a = nearest(address);
  if (!a) return hex(address) + " is not in any allocation (none exist)";
  std::string where = a->label + " at " + hex(a->base) + " (" + std::to_string(a->size) + " bytes, " +
                      (a->freed.load() ? "freed" : "live") + ")";
  if (a->freed.load() && address >= a->base && address < a->base + a->size)
    return hex(address) + " is inside freed memory: " + std::to_string(address - a->base) + " bytes into " + where;
  if (address < a->base) return hex(address) + " is " + std::to_string(a->base - address) + " bytes before " + where;
  const uint64_t end = a->base + a->size;
  if (address >= end) return hex(address) + " is " + std::to_string(address - end) + " bytes past the end of " + where;
  if (address + bytes > end)
    return hex(address) + " (" + std::to_string(bytes) + " bytes) runs " + std::to_string(address + bytes - end) +
           " bytes past the end of " + where;
  return hex(address) + " is " + std::to_string(address - a->base) + " bytes into " + where;
}

}  // namespace gpusim
