// The H100 performance model (runtime/gpu_perf_model.h) on counters of the shapes the simulator
// reports: which term bounds each kind of kernel, and by how much.
#include <gtest/gtest.h>

#include "runtime/gpu_perf_model.h"

namespace kiln {
namespace {

// A streaming kernel over `bytes` (half read, half written) with 128-bit lanes, perfectly
// coalesced, on `blocks` blocks of 256 threads at `occupancy`.
KernelCounters streaming(uint64_t bytes, uint64_t blocks, double occupancy, double smCoverage) {
  KernelCounters c;
  c.launches = 1;
  c.blocks = blocks;
  c.threadsPerBlock = 256;
  c.loadBytes = c.storeBytes = bytes / 2;
  c.loadRequests = c.storeRequests = bytes / 2 / 512;
  c.loadSectors = c.storeSectors = bytes / 2 / 32;
  c.warpInstructions = bytes / 512 * 8;  // a few instructions per request
  c.achievedOccupancy = occupancy;
  c.smCoverage = smCoverage;
  c.footprintBytes = bytes;
  return c;
}

TEST(GpuPerfModel, ACoalescedKernelFillingTheDeviceRunsAtTheSustainedBandwidth) {
  GpuSpec gpu = h100Sxm();
  ModelledKernel m = modelKernel(streaming(64u << 20, 132 * 8, 1.0, 1.0), gpu);
  EXPECT_EQ(m.bound, "dram");
  EXPECT_DOUBLE_EQ(m.rooflineSeconds, (64u << 20) / gpu.dramBytesPerSecond);
  EXPECT_NEAR(m.modelledSeconds / m.rooflineSeconds, 1 / gpu.sustainedDramFraction, 1e-9);
  EXPECT_DOUBLE_EQ(m.sectorEfficiency, 1.0);
  EXPECT_DOUBLE_EQ(m.sharedWavefrontsPerRequest, 1.0);
}

TEST(GpuPerfModel, TheH200DiffersInItsMemoryAndTheCopyMeasuredOnIt) {
  GpuSpec h100 = h100Sxm(), h200 = h200Sxm();
  EXPECT_EQ(h200.multiprocessors, h100.multiprocessors);
  EXPECT_DOUBLE_EQ(h200.fp32FlopsPerSecond, h100.fp32FlopsPerSecond);
  KernelCounters c = streaming(64u << 20, 132 * 8, 1.0, 1.0);
  ModelledKernel on100 = modelKernel(c, h100), on200 = modelKernel(c, h200);
  EXPECT_EQ(on200.bound, "dram");
  EXPECT_NEAR(on200.modelledSeconds / on100.modelledSeconds, (3.35 * 0.9) / (4.8 * 0.86), 1e-9);
  EXPECT_EQ(gpuSpecNamed("h200")->name, h200.name);
  EXPECT_EQ(gpuSpecNamed("h100")->name, h100.name);
  EXPECT_FALSE(gpuSpecNamed("a100"));
}

TEST(GpuPerfModel, OneWarpCannotCoverTheMemoryLatency) {
  KernelCounters c = streaming(64u << 20, 1, 1.0 / 64, 1.0 / 132);
  c.threadsPerBlock = 32;
  ModelledKernel m = modelKernel(c, h100Sxm());
  EXPECT_EQ(m.bound, "latency");
  // One warp with two 512-byte requests in flight over 600 ns: ~1.7 GB/s, ~2000x the roofline.
  EXPECT_GT(m.modelledSeconds / m.rooflineSeconds, 1000);
}

TEST(GpuPerfModel, WastedSectorsCostDramTime) {
  KernelCounters c = streaming(64u << 20, 132 * 8, 1.0, 1.0);
  ModelledKernel coalesced = modelKernel(c, h100Sxm());
  c.storeSectors *= 3;  // stores touch 4 sectors for each one they fill: half the bytes wasted overall
  ModelledKernel scattered = modelKernel(c, h100Sxm());
  EXPECT_DOUBLE_EQ(scattered.sectorEfficiency, 0.5);
  EXPECT_NEAR(scattered.modelledSeconds / coalesced.modelledSeconds, 2.0, 1e-9);
  EXPECT_DOUBLE_EQ(scattered.rooflineSeconds, coalesced.rooflineSeconds);
}

TEST(GpuPerfModel, FlopsAndInstructionsBoundWhatDoesLittleMemoryTraffic) {
  GpuSpec gpu = h100Sxm();
  KernelCounters matmul = streaming(1u << 20, 132 * 8, 1.0, 1.0);
  matmul.flops = 2.0 * 4096 * 4096 * 4096;
  ModelledKernel m = modelKernel(matmul, gpu);
  EXPECT_EQ(m.bound, "compute");
  EXPECT_DOUBLE_EQ(m.rooflineSeconds, matmul.flops / gpu.fp32FlopsPerSecond);

  KernelCounters busy = streaming(1u << 20, 132 * 8, 1.0, 1.0);
  busy.warpInstructions = 1e9;
  EXPECT_EQ(modelKernel(busy, gpu).bound, "issue");

  KernelCounters conflicts = busy;
  conflicts.sharedRequests = 100;
  conflicts.sharedWavefronts = 250;
  EXPECT_DOUBLE_EQ(modelKernel(conflicts, gpu).sharedWavefrontsPerRequest, 2.5);
}

}  // namespace
}  // namespace kiln
