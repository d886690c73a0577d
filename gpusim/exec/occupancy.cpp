// The occupancy calculator (occupancy.h), as CUDA's occupancy API computes it.
#include "gpusim/exec/occupancy.h"

#include <algorithm>

#include "gpusim/ptx/module.h"

namespace gpusim {

namespace {
// Registers a kernel holds beyond its values' (ptxas keeps a couple for addressing and the stack).
constexpr uint32_t kReservedRegisters = 2;
}  // namespace

uint32_t registersPerThread(const ptx::Function& fn, const SmLimits& sm) {
  uint32_t declared = 0;
  for (ptx::Type t : fn.registerTypes) {
    if (t == ptx::Type::Pred || t == ptx::Type::None) continue;
    declared += (ptx::typeBytes(t) + 3) / 4;
  }
  // What is live at once, plus the few registers ptxas keeps for itself; never more than declared.
  uint32_t estimate = std::min(declared, fn.liveRegisterWords + kReservedRegisters);
  return std::min(estimate, sm.maxRegistersPerThread);
}

uint32_t blocksPerSm(uint32_t threadsPerBlock, uint32_t registersPerThread, uint32_t sharedBytes, const SmLimits& sm) {
  if (threadsPerBlock == 0 || threadsPerBlock > sm.maxThreadsPerBlock) return 0;
  uint32_t warps = (threadsPerBlock + 31) / 32;
  uint32_t byWarps = sm.maxWarpsPerSm / warps;
  uint32_t byRegisters = sm.maxBlocksPerSm;
  if (registersPerThread > 0) {
    if (registersPerThread > sm.maxRegistersPerThread) return 0;
    uint32_t perWarp = (registersPerThread * 32 + sm.registerAllocationUnit - 1) / sm.registerAllocationUnit *
                       sm.registerAllocationUnit;
    byRegisters = sm.registersPerSm / (perWarp * warps);
  }
  uint32_t byShared = sm.maxBlocksPerSm;
  uint32_t perBlock = (sharedBytes + sm.sharedAllocationUnit - 1) / sm.sharedAllocationUnit * sm.sharedAllocationUnit +
                      sm.sharedReservedPerBlock;
  if (sharedBytes > sm.maxSharedPerBlockOptIn) return 0;
  byShared = sm.sharedPerSm / perBlock;
  return std::min({byWarps, byRegisters, byShared, sm.maxBlocksPerSm});
}

}  // namespace gpusim
