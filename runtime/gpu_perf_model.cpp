// The H100 model: the terms that bound a kernel's time, from its counters (gpu_perf_model.h).
#include "runtime/gpu_perf_model.h"

#include <algorithm>

namespace kiln {

GpuSpec h100Sxm() {
  GpuSpec g;
  g.name = "NVIDIA H100 SXM5 80GB";
  g.multiprocessors = 132;
  g.maxWarpsPerSm = 64;
  g.schedulersPerSm = 4;
  g.clockHz = 1.98e9;
  g.dramBytesPerSecond = 3.35e12;
  g.sustainedDramFraction = 0.9;   // a large copy reaches ~3.0 TB/s of the 3.35
  g.l2BytesPerSecond = 8.0e12;     // not published; about 2.4x HBM
  g.fp32FlopsPerSecond = 66.9e12;  // 132 SMs x 128 FP32 lanes x 2 (FMA) x 1.98 GHz
  g.dramLatencySeconds = 600e-9;
  g.requestsInFlightPerWarp = 2;
  return g;
}

GpuSpec h200Sxm() {
  GpuSpec g = h100Sxm();
  g.name = "NVIDIA H200 SXM 141GB";
  g.dramBytesPerSecond = 4.8e12;
  // Measured, not assumed: kiln's device-to-device copy reached 4128 GB/s on the lent H200
  // (bench/RESULTS.md), 86% of the peak.
  g.sustainedDramFraction = 0.86;
  return g;
}

std::optional<GpuSpec> gpuSpecNamed(const std::string& name) {
  if (name == "h100") return h100Sxm();
  if (name == "h200") return h200Sxm();
  return std::nullopt;
}

std::string gpuSpecNames() { return "h100, h200"; }

namespace {
double ratio(double a, double b, double ifNone) { return b > 0 ? a / b : ifNone; }
}  // namespace

ModelledKernel modelKernel(const KernelCounters& c, const GpuSpec& g) {
  ModelledKernel m;
  double sectors = static_cast<double>(c.loadSectors + c.storeSectors);
  double sectorBytes = 32 * sectors;
  double askedBytes = static_cast<double>(c.loadBytes + c.storeBytes);
  double requests = static_cast<double>(c.loadRequests + c.storeRequests);
  m.sectorEfficiency = ratio(askedBytes, sectorBytes, 1.0);
  m.sharedWavefrontsPerRequest =
      ratio(static_cast<double>(c.sharedWavefronts), static_cast<double>(c.sharedRequests), 1.0);

  // DRAM moves what the kernel must move, inflated by the share of each sector it wastes; reading
  // the same data again (a row kernel's second pass) is assumed to hit in L1 or L2, and costs L2
  // bandwidth and issue slots instead. Never more than every sector touched.
  double footprint = c.footprintBytes > 0 ? static_cast<double>(c.footprintBytes) : askedBytes;
  double dramBytes = std::min(sectorBytes, footprint / std::max(m.sectorEfficiency, 1e-9));

  // Little's law: the bandwidth a launch can draw is the bytes it has in flight over the latency.
  double activeSms = std::max(1.0, c.smCoverage * g.multiprocessors);
  double warpsLaunched = std::max(1.0, static_cast<double>(c.blocks * c.threadsPerBlock) / 32);
  double residentWarps =
      std::clamp(c.achievedOccupancy * g.maxWarpsPerSm * activeSms, 1.0, warpsLaunched);
  double bytesPerRequest = ratio(sectorBytes, requests, 0.0);
  double inFlight = residentWarps * g.requestsInFlightPerWarp * bytesPerRequest;
  double sustained = g.sustainedDramFraction * g.dramBytesPerSecond;
  double latencyBandwidth = inFlight / g.dramLatencySeconds;
  bool latencyBound = latencyBandwidth < sustained;
  double dram = dramBytes > 0 ? dramBytes / std::min(sustained, latencyBandwidth) : 0;

  double l2 = sectorBytes / g.l2BytesPerSecond;
  double issueSlots = std::min(residentWarps, activeSms * g.schedulersPerSm);
  double issue = static_cast<double>(c.warpInstructions) / (issueSlots * g.clockHz);
  double compute = c.flops / g.fp32FlopsPerSecond;

  m.modelledSeconds = dram;
  m.bound = latencyBound ? "latency" : "dram";
  for (auto [seconds, name] : {std::pair{l2, "l2"}, {issue, "issue"}, {compute, "compute"}})
    if (seconds > m.modelledSeconds) {
      m.modelledSeconds = seconds;
      m.bound = name;
    }
  m.rooflineSeconds = std::max(footprint / g.dramBytesPerSecond, compute);
  return m;
}

}  // namespace kiln
