// The simulated device's memory: every allocation (cuMemAlloc, module globals) at an address of its
// own, never reused, so an access through a stale or wild pointer is told apart from a good one.
//
// Address windows: device allocations live at kGlobalBase and up. Generic addresses of a block's
// shared memory and of a thread's local memory are kSharedWindow + offset and kLocalWindow + offset,
// so a generic load can be classified and a shared or local address used as a global one is caught.
// Every allocation keeps one "written" bit per byte for initcheck.
#pragma once

#include <atomic>
#include <cstdlib>
#include <cstdint>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

namespace gpusim {

constexpr uint64_t kGlobalBase = 0x0000'7A00'0000'0000ull;
constexpr uint64_t kSharedWindow = 0x0000'0100'0000'0000ull;
constexpr uint64_t kLocalWindow = 0x0000'0200'0000'0000ull;
constexpr uint64_t kWindowSize = 0x0000'0100'0000'0000ull;  // 1 TiB per window

// calloc'ed storage: large allocations stay untouched (and unbacked) until a kernel or copy writes.
struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

// One allocation. `data` is released on free; the record stays so a later access is reported as a
// use after free of this allocation, with its label.
struct Allocation {
  uint64_t base = 0;
  uint64_t size = 0;
  std::string label;  // "cuMemAlloc of 4096 bytes", "module global k0_constant"
  std::unique_ptr<uint8_t[], FreeDeleter> data;
  std::unique_ptr<std::atomic<uint64_t>[], FreeDeleter> written;  // initcheck: one bit per byte
  std::atomic<bool> freed{false};

  bool contains(uint64_t address, uint64_t bytes) const {
    return address >= base && bytes <= size && address - base <= size - bytes;
  }
  uint8_t* host(uint64_t address) { return data.get() + (address - base); }
  void markWritten(uint64_t address, uint64_t bytes);
  // Whether every byte of [address, address + bytes) was written (by a copy, memset or kernel).
  bool isWritten(uint64_t address, uint64_t bytes) const;
};

// "0x7a0000001c00": an address as every report prints it.
std::string hex(uint64_t address);

class DeviceMemory {
 public:
  explicit DeviceMemory(uint64_t capacity) : capacity_(capacity) {}

  // A new allocation of `bytes` (256-byte aligned, as cuMemAlloc), or 0 when the capacity is
  // exhausted. `initialised` marks every byte written (module globals with initialisers).
  uint64_t allocate(uint64_t bytes, std::string label, bool initialised = false);
  // Frees the allocation starting at `address`; false if no live allocation starts there.
  bool free(uint64_t address);

  // The live allocation holding [address, address + bytes), or nullptr.
  Allocation* find(uint64_t address, uint64_t bytes);
  // For reports: the allocation (live or freed) nearest to `address`, or nullptr if none.
  const Allocation* nearest(uint64_t address) const;
  // "0x7a0000001000 is 16 bytes past the end of cuMemAlloc of 4096 bytes at 0x7a0000000000 (live)"
  std::string describe(uint64_t address, uint64_t bytes) const;

  uint64_t used() const { return used_.load(); }
  uint64_t capacity() const { return capacity_; }

 private:
  mutable std::shared_mutex mutex_;
  std::map<uint64_t, std::unique_ptr<Allocation>> allocations_;  // by base, freed ones included
  uint64_t next_ = kGlobalBase;
  uint64_t capacity_;
  std::atomic<uint64_t> used_{0};
};

}  // namespace gpusim
