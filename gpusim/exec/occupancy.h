// The H100 SXM's per-SM limits and the occupancy calculator built on them, shared by the driver
// (cuOccupancyMaxActiveBlocksPerMultiprocessor, cuFuncGetAttribute) and the launch counters.
#pragma once

#include <cstdint>

namespace gpusim {

namespace ptx {
struct Function;
}

struct SmLimits {
  uint32_t smCount = 132;
  uint32_t maxWarpsPerSm = 64;
  uint32_t maxThreadsPerSm = 2048;
  uint32_t maxBlocksPerSm = 32;
  uint32_t registersPerSm = 65536;
  uint32_t registerAllocationUnit = 256;  // registers are allocated per warp in units of 256
  uint32_t maxRegistersPerThread = 255;
  uint32_t sharedPerSm = 228 * 1024;
  uint32_t sharedReservedPerBlock = 1024;  // sm_90 reserves 1 KB of shared memory per block
  uint32_t sharedAllocationUnit = 128;
  uint32_t maxSharedPerBlockOptIn = 227 * 1024;
  uint32_t maxStaticSharedPerBlock = 48 * 1024;
  uint32_t maxThreadsPerBlock = 1024;
  uint32_t maxRegistersPerBlock = 65536;
};

inline const SmLimits kH100{};

// 32-bit registers a thread of `fn` holds, estimated as ptxas allocates them: the most register
// words live at once (ptx/liveness.h: predicates excluded, 64-bit registers count twice, 128-bit
// ones four times) plus two, never more than its .reg declarations hold, and at most 255.
uint32_t registersPerThread(const ptx::Function& fn, const SmLimits& sm = kH100);

// Blocks of `threadsPerBlock` threads, `registersPerThread` registers each and `sharedBytes` of
// shared memory (static + dynamic) that fit on one SM at once; 0 if one block does not fit.
uint32_t blocksPerSm(uint32_t threadsPerBlock, uint32_t registersPerThread, uint32_t sharedBytes,
                     const SmLimits& sm = kH100);

}  // namespace gpusim
