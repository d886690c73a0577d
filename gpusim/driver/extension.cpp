// gpusim's own calls (gpusim/include/gpusim/gpusim.h): per-launch counters, "am I simulated", and
// what the vendor-library stand-ins need: host work on streams and host views of device memory.
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

GPUSIM_EXPORT int gpusimCurrentDevice(void) {
  CUctx_st* ctx = currentContext();
  return ctx ? ctx->device->ordinal : -1;
}

GPUSIM_EXPORT int gpusimLaunchHostWork(void* stream, const char* name, int (*fn)(int device, void* user), void* user,
                                       void (*release)(void* user)) {
  // The work may be copied (graph capture) and run many times: `user` lives until the last copy goes.
  std::shared_ptr<void> owned(user, [release](void* u) {
    if (release) release(u);
  });
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  auto s = static_cast<CUstream>(stream);
  CUctx_st* ctx = nullptr;
  if (CUresult r = enterStream(s, ctx)) return r;
  int device = ctx->device->ordinal;
  return submit(s, [fn, device, owned] { return static_cast<CUresult>(fn(device, owned.get())); },
                name ? name : "gpusimLaunchHostWork");
}

GPUSIM_EXPORT void* gpusimDeviceMemory(int device, uint64_t address, size_t bytes, int access, const char* what) {
  std::string call = what ? what : "gpusimDeviceMemory";
  if (device < 0 || static_cast<size_t>(device) >= devices().size()) {
    fail(CUDA_ERROR_INVALID_DEVICE, call + ": no device " + std::to_string(device));
    return nullptr;
  }
  gpusim::DeviceMemory& memory = *devices()[static_cast<size_t>(device)].memory;
  gpusim::Allocation* a = memory.find(address, std::max<size_t>(bytes, 1));
  if (!a) {
    fail(CUDA_ERROR_ILLEGAL_ADDRESS, call + ": " + std::to_string(bytes) + " bytes at " + gpusim::hex(address) +
                                         " are not inside one live allocation: " + memory.describe(address, bytes));
    return nullptr;
  }
  if ((access & GPUSIM_READ) && launchOptions().initcheck && !a->isWritten(address, bytes))
    fail(CUDA_SUCCESS, "initcheck: " + call + " reads " + std::to_string(bytes) + " bytes at " + gpusim::hex(address) +
                           " of which some were never written: " + memory.describe(address, bytes));
  if (access & GPUSIM_WRITE) a->markWritten(address, bytes);
  return a->host(address);
}

GPUSIM_EXPORT void gpusimReport(const char* report) { fail(CUDA_SUCCESS, report ? report : ""); }
