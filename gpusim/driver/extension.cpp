// gpusim's own calls (gpusim/include/gpusim/gpusim.h): per-launch counters and "am I simulated".
#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>

#include "gpusim/driver/state.h"
#include "gpusim/gpusim.h"

namespace gpusim::driver {

namespace {

std::mutex& statsMutex() {
  static std::mutex& m = *new std::mutex;
  return m;
}
std::vector<KernelStats>& statsLog() {
  static std::vector<KernelStats>& v = *new std::vector<KernelStats>;
  return v;
}

void copyDim(const Dim3& d, uint32_t out[3]) {
  out[0] = d.x;
  out[1] = d.y;
  out[2] = d.z;
}

}  // namespace

void recordLaunch(const KernelStats& stats) {
  std::lock_guard<std::mutex> lock(statsMutex());
  statsLog().push_back(stats);
}

}  // namespace gpusim::driver

using namespace gpusim::driver;

GPUSIM_EXPORT int gpusimIsSimulator(void) { return 1; }

GPUSIM_EXPORT size_t gpusimKernelStatsCount(void) {
  std::lock_guard<std::mutex> lock(statsMutex());
  return statsLog().size();
}

GPUSIM_EXPORT int gpusimKernelStatsGet(size_t i, GpusimKernelStats* caller, size_t callerSize) {
  std::lock_guard<std::mutex> lock(statsMutex());
  if (!caller || i >= statsLog().size()) return -1;
  const gpusim::KernelStats& s = statsLog()[i];
  GpusimKernelStats full{};
  GpusimKernelStats* out = &full;
  std::strncpy(out->name, s.name.c_str(), sizeof out->name - 1);
  copyDim(s.grid, out->grid);
  copyDim(s.block, out->block);
  out->registers_per_thread = s.registersPerThread;
  out->static_shared_bytes = s.staticSharedBytes;
  out->dynamic_shared_bytes = s.dynamicSharedBytes;
  out->local_bytes_per_thread = s.localBytesPerThread;
  out->warp_instructions = s.warpInstructions;
  out->thread_instructions = s.threadInstructions;
  out->global_load_requests = s.globalLoadRequests;
  out->global_load_sectors = s.globalLoadSectors;
  out->global_load_bytes = s.globalLoadBytes;
  out->global_store_requests = s.globalStoreRequests;
  out->global_store_sectors = s.globalStoreSectors;
  out->global_store_bytes = s.globalStoreBytes;
  out->atomic_requests = s.atomicRequests;
  out->shared_requests = s.sharedRequests;
  out->shared_wavefronts = s.sharedWavefronts;
  out->blocks_per_sm = s.blocksPerSm;
  out->theoretical_occupancy = s.theoreticalOccupancy;
  out->achieved_occupancy = s.achievedOccupancy;
  out->sm_coverage = s.smCoverage;
  out->sector_efficiency = s.sectorEfficiency();
  out->shared_wavefronts_per_request = s.sharedWavefrontsPerRequest();
  std::memcpy(caller, &full, std::min(callerSize, sizeof full));
  return 0;
}

GPUSIM_EXPORT void gpusimKernelStatsReset(void) {
  std::lock_guard<std::mutex> lock(statsMutex());
  statsLog().clear();
}
