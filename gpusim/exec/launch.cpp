// A kernel launch on the interpreter (launch.h): every block in order, then the occupancy figures.
#include "gpusim/exec/launch.h"

#include <algorithm>

#include "gpusim/exec/executor.h"
#include "gpusim/exec/occupancy.h"

namespace gpusim {

namespace {

void countOccupancy(KernelStats& s, uint64_t blocks) {
  uint32_t threads = static_cast<uint32_t>(s.block.count());
  uint32_t perSm = blocksPerSm(threads, s.registersPerThread, s.staticSharedBytes + s.dynamicSharedBytes);
  s.blocksPerSm = perSm;
  uint32_t warpsPerBlock = (threads + 31) / 32;
  s.theoreticalOccupancy = double(perSm * warpsPerBlock) / kH100.maxWarpsPerSm;
  uint64_t sms = kH100.smCount;
  s.smCoverage = double(std::min<uint64_t>(blocks, sms)) / double(sms);
  // Achieved: blocks are dealt to SMs in waves of perSm x 132; the resident warps averaged over
  // the waves, on the SMs that have work, as a fraction of 64.
  if (perSm == 0 || blocks == 0) {
    s.achievedOccupancy = 0;
    return;
  }
  uint64_t wave = uint64_t(perSm) * sms;
  uint64_t fullWaves = blocks / wave, tail = blocks % wave;
  double warpSum = double(fullWaves) * perSm * warpsPerBlock;
  uint64_t waves = fullWaves;
  if (tail) {
    // The tail wave: its blocks spread over min(tail, 132) SMs.
    uint64_t smsUsed = std::min<uint64_t>(tail, sms);
    warpSum += double(tail) / double(smsUsed) * warpsPerBlock;
    ++waves;
  }
  s.achievedOccupancy = warpSum / double(waves) / kH100.maxWarpsPerSm;
}

}  // namespace

LaunchResult launch(const LaunchRequest& request, DeviceMemory& memory, const LaunchOptions& options) {
  LaunchResult result;
  const ptx::Function& fn = request.module->ptx.functions[request.function];
  KernelStats& s = result.stats;
  s.name = fn.name;
  s.grid = request.grid;
  s.block = request.block;
  s.registersPerThread = registersPerThread(fn);
  s.staticSharedBytes = request.module->ptx.staticSharedBytes;
  s.dynamicSharedBytes = request.dynamicSharedBytes;
  Executor executor(request, memory, options, result);
  s.localBytesPerThread = executor.localBytesPerThread();
  for (uint32_t z = 0; z < request.grid.z; ++z)
    for (uint32_t y = 0; y < request.grid.y; ++y)
      for (uint32_t x = 0; x < request.grid.x; ++x)
        if (!executor.runBlock(Dim3{x, y, z})) goto done;
done:
  countOccupancy(s, request.grid.count());
  return result;
}

}  // namespace gpusim
