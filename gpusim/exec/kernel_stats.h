// What one kernel launch did, counted exactly as Nsight Compute counts it per warp-level request:
// the simulator's stand-in for timings (never reported as times).
#pragma once

#include <cstdint>
#include <string>

namespace gpusim {

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  uint64_t count() const { return uint64_t{x} * y * z; }
};

struct KernelStats {
  std::string name;
  Dim3 grid, block;
  uint32_t registersPerThread = 0;  // from the PTX's .reg declarations: an upper bound on ptxas'
  uint32_t staticSharedBytes = 0, dynamicSharedBytes = 0;
  uint32_t localBytesPerThread = 0;

  uint64_t warpInstructions = 0;    // inst_executed
  uint64_t threadInstructions = 0;  // thread_inst_executed (active lanes summed)

  // Global memory (ld/st/atom/red in .global or generic addresses that land there). A request is
  // one warp-level instruction; its sectors are the distinct 32-byte sectors its active lanes touch.
  uint64_t globalLoadRequests = 0, globalLoadSectors = 0, globalLoadBytes = 0;
  uint64_t globalStoreRequests = 0, globalStoreSectors = 0, globalStoreBytes = 0;
  uint64_t atomicRequests = 0;
  // Shared memory: wavefronts per request = the most distinct 4-byte words any one bank serves.
  uint64_t sharedRequests = 0, sharedWavefronts = 0;

  // Occupancy from registers, shared memory and the block size (H100 SXM limits).
  uint32_t blocksPerSm = 0;       // resident blocks per SM the resources allow
  double theoreticalOccupancy = 0;  // resident warps / 64
  double achievedOccupancy = 0;     // average over SMs given work, with the grid's tail
  double smCoverage = 0;            // fraction of the 132 SMs given at least one block

  // Bytes the lanes asked for / bytes of the sectors touched, loads and stores together (1 = ideal).
  double sectorEfficiency() const {
    uint64_t sectors = globalLoadSectors + globalStoreSectors;
    return sectors ? double(globalLoadBytes + globalStoreBytes) / (32.0 * double(sectors)) : 1.0;
  }
  double sharedWavefrontsPerRequest() const {
    return sharedRequests ? double(sharedWavefronts) / double(sharedRequests) : 1.0;
  }
};

}  // namespace gpusim
