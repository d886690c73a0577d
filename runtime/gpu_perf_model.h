// A performance model of one kernel on an H100 SXM, built from what the GPU simulator counts (the
// sectors its requests touch, its instructions, its blocks and occupancy) and the GPU's published
// figures. It says how long the kernel would take if the model's assumptions held, and the
// roofline bound no kernel can beat. It is a model, not a measurement: docs/gpu-performance.md
// lists what it assumes and what it ignores.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kiln {

// The figures the model uses. Published ones are NVIDIA's for the H100 SXM5; the rest are stated
// assumptions (docs/gpu-performance.md).
struct GpuSpec {
  std::string name;
  int multiprocessors = 0;
  int maxWarpsPerSm = 0;
  int schedulersPerSm = 0;          // warp instructions issued per SM per cycle, at most
  double clockHz = 0;               // boost clock
  double dramBytesPerSecond = 0;    // HBM peak
  double sustainedDramFraction = 0; // the share of the peak a streaming kernel reaches (assumed)
  double l2BytesPerSecond = 0;      // L2 <-> SM bandwidth (assumed)
  double fp32FlopsPerSecond = 0;    // without tensor cores (kiln's generated kernels use none)
  double dramLatencySeconds = 0;    // a load's round trip to HBM (assumed)
  int requestsInFlightPerWarp = 0;  // memory-level parallelism of one warp (assumed)
};

// NVIDIA H100 SXM5 80 GB: 132 SMs, 1.98 GHz, 3.35 TB/s HBM3, 67 TFLOP/s FP32.
GpuSpec h100Sxm();
// NVIDIA H200 SXM 141 GB: the H100's chip (132 SMs, 1.98 GHz, 67 TFLOP/s FP32) with 4.8 TB/s of
// HBM3e, of which a copy sustained 86% on the H200 kiln ran on (bench/RESULTS.md); the other
// assumed figures are the H100's.
GpuSpec h200Sxm();
// The spec `kiln bench --model NAME` names ("h100", "h200"), or nothing; and the names.
std::optional<GpuSpec> gpuSpecNamed(const std::string& name);
std::string gpuSpecNames();

// One kernel's launches in a step, as the simulator counted them.
struct KernelCounters {
  uint64_t launches = 0;
  uint64_t blocks = 0, threadsPerBlock = 0;      // of one launch
  uint64_t warpInstructions = 0;                 // over all launches
  uint64_t loadRequests = 0, loadSectors = 0, loadBytes = 0;
  uint64_t storeRequests = 0, storeSectors = 0, storeBytes = 0;
  uint64_t sharedRequests = 0, sharedWavefronts = 0;
  double achievedOccupancy = 0;  // resident warps / maxWarpsPerSm on the SMs given blocks, 0..1
  double smCoverage = 0;         // share of the SMs given at least one block, 0..1
  // What the kernel must move at least (its inputs read once, its outputs written once, over all
  // launches) and the FLOPs it must do (matmul and convolution multiply-adds; 0 for the rest).
  uint64_t footprintBytes = 0;
  double flops = 0;
};

struct ModelledKernel {
  double modelledSeconds = 0;
  double rooflineSeconds = 0;
  // Which term set the modelled time: "dram", "latency" (too few requests in flight to cover
  // the memory's latency), "l2", "issue" or "compute".
  std::string bound;
  double sectorEfficiency = 1;             // bytes asked for / bytes of the sectors touched
  double sharedWavefrontsPerRequest = 1;   // 1 when conflict-free (and when shared memory is unused)
};

ModelledKernel modelKernel(const KernelCounters& counters, const GpuSpec& gpu);

}  // namespace kiln
