// Measuring a data-parallel step for kiln bench (bench_data_parallel.h).
#include "tools/bench_data_parallel.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "runtime/collectives/all_reduce_step.h"
#include "runtime/collectives/communicator.h"
#include "tools/bench_report.h"

namespace kiln::cli {

namespace {

// What one mode's runs measured: step times, and per bucket its reductions' and waits' times.
struct ModeRuns {
  std::vector<double> stepMs, reductionMsPerStep, waitedMsPerStep;
  std::map<std::string, std::vector<double>> reductionMs, waitedMs;

  void record(double ms, const std::vector<CollectiveTiming>& timings) {
    stepMs.push_back(ms);
    double reduced = 0, waited = 0;
    for (const CollectiveTiming& t : timings) {
      reductionMs[t.kernel].push_back(t.milliseconds);
      waitedMs[t.kernel].push_back(t.waitedMilliseconds);
      reduced += t.milliseconds, waited += t.waitedMilliseconds;
    }
    reductionMsPerStep.push_back(reduced);
    waitedMsPerStep.push_back(waited);
  }
};

constexpr CollectiveMode kModes[] = {CollectiveMode::Skipped, CollectiveMode::Synchronous, CollectiveMode::Overlapped};

// The modes take turns run by run, so that load changing over time (other processes on the
// machine) weighs on all three alike; every run starts with a barrier, so no rank's step time
// includes waiting for a rank still busy with the previous run.
Expected<std::map<CollectiveMode, ModeRuns>> runModes(const std::function<Status(ExecuteOptions)>& runStep, int warmup,
                                                      int reps, collectives::Communicator& comm) {
  std::map<CollectiveMode, ModeRuns> out;
  for (int r = 0; r < warmup + reps; ++r) {
    for (CollectiveMode mode : kModes) {
      double ms = 0;
      std::vector<CollectiveTiming> timings;
      ExecuteOptions options;
      options.collectives = mode;
      options.stepMilliseconds = &ms;
      options.collectiveTimings = &timings;
      KILN_TRY(comm.barrier("the start of a kiln bench run"));
      KILN_TRY(runStep(options));
      if (r >= warmup) out[mode].record(ms, timings);
    }
  }
  return out;
}

// Every figure replaced by its mean over the ranks (in one all-reduce).
Status averageOverRanks(DataParallelFigures& f, collectives::Communicator& comm) {
  std::vector<double*> fields = {&f.stepMs, &f.stepSyncMs, &f.computeMs, &f.allReduceMs, &f.waitedMs};
  for (BucketFigures& b : f.buckets) fields.insert(fields.end(), {&b.syncMs, &b.overlappedMs, &b.waitedMs});
  std::vector<double> values;
  for (double* p : fields) values.push_back(*p);
  KILN_TRY(comm.allReduce(values.data(), static_cast<int64_t>(values.size()), DType::F64, collectives::ReduceKind::Mean,
                          "kiln bench's figures"));
  for (size_t i = 0; i < fields.size(); ++i) *fields[i] = values[i];
  return {};
}

std::string bytesText(int64_t bytes) {
  if (bytes < 10 * 1024) return fmt::format("{} B", bytes);
  if (bytes < 10 * 1024 * 1024) return fmt::format("{:.1f} KiB", bytes / 1024.0);
  return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024.0));
}

std::string jsonNumber(std::optional<double> v) { return v ? fmt::format("{:.4f}", *v) : "null"; }

}  // namespace

double DataParallelFigures::exposedMs() const { return std::max(0.0, stepMs - computeMs); }
double DataParallelFigures::exposedSyncMs() const { return std::max(0.0, stepSyncMs - computeMs); }
namespace {
// The fraction of the all-reduce time R not on the critical path, given what of it is.
std::optional<double> hidden(const DataParallelFigures& f, double exposed) {
  if (f.ranks < 2 || f.allReduceMs <= 0) return std::nullopt;
  return std::clamp((f.allReduceMs - exposed) / f.allReduceMs, 0.0, 1.0);
}
}  // namespace

std::optional<double> DataParallelFigures::overlap() const { return hidden(*this, exposedMs()); }
std::optional<double> DataParallelFigures::overlapByWait() const {
  return hostWaits ? hidden(*this, waitedMs) : std::nullopt;
}

bool hasAllReduce(const codegen::BlockPlan& plan) {
  for (const codegen::KernelGroup& g : plan.groups)
    if (collectives::allReduceOf(g)) return true;
  return false;
}

Expected<DataParallelFigures> measureDataParallel(const codegen::BlockPlan& plan,
                                                  const std::function<Status(ExecuteOptions)>& runStep, int warmup,
                                                  int reps, bool hostWaits) {
  auto world = collectives::worldCommunicator();
  if (!world) return world.error();
  collectives::Communicator& comm = **world;
  auto runs = runModes(runStep, warmup, reps, comm);
  if (!runs) return runs.error();
  ModeRuns& compute = (*runs)[CollectiveMode::Skipped];
  ModeRuns& sync = (*runs)[CollectiveMode::Synchronous];
  ModeRuns& overlapped = (*runs)[CollectiveMode::Overlapped];

  DataParallelFigures f;
  f.ranks = comm.size();
  f.hostWaits = hostWaits;
  for (const codegen::Step& step : plan.steps) {
    if (step.kind != codegen::Step::Kind::Kernel) continue;
    const codegen::KernelGroup& g = plan.groups[static_cast<size_t>(step.group)];
    if (!collectives::allReduceOf(g)) continue;
    BucketFigures b{g.name, static_cast<int64_t>(g.results[0]->type().byteSize())};
    b.syncMs = median(sync.reductionMs[g.name]);
    b.overlappedMs = median(overlapped.reductionMs[g.name]);
    b.waitedMs = median(overlapped.waitedMs[g.name]);
    f.bytes += b.bytes;
    f.buckets.push_back(b);
  }
  f.stepMs = median(overlapped.stepMs);
  f.stepSyncMs = median(sync.stepMs);
  f.computeMs = median(compute.stepMs);
  f.allReduceMs = median(sync.reductionMsPerStep);
  f.waitedMs = median(overlapped.waitedMsPerStep);
  if (f.ranks > 1) KILN_TRY(averageOverRanks(f, comm));
  return f;
}

void printDataParallel(const DataParallelFigures& f) {
  if (f.ranks < 2) {
    fmt::print("data parallel: 1 rank, so each all_reduce is the identity and nothing crosses ranks (run under "
               "mpirun -np N)\n");
    return;
  }
  fmt::print("data parallel over {} ranks (medians, then the mean over ranks):\n", f.ranks);
  fmt::print("{:<28} {:>10} {:>14} {:>14} {:>11}\n", "all_reduce", "bytes", "alone", "overlapped", "waited");
  for (const BucketFigures& b : f.buckets)
    fmt::print("{:<28} {:>10} {:>11.4f} ms {:>11.4f} ms {:>8.4f} ms\n", b.kernel, bytesText(b.bytes), b.syncMs,
               b.overlappedMs, b.waitedMs);
  fmt::print("per step: {} all_reduce{}, {}; step {:.4f} ms overlapped, {:.4f} ms synchronous, {:.4f} ms compute alone\n",
             f.buckets.size(), f.buckets.size() == 1 ? "" : "s", bytesText(f.bytes), f.stepMs, f.stepSyncMs, f.computeMs);
  auto percent = [](std::optional<double> v) { return v ? fmt::format("{:.0f}%", 100 * *v) : std::string("-"); };
  fmt::print("all-reduce {:.4f} ms per step; exposed {:.4f} ms overlapped ({:.4f} ms synchronous): overlap {} of the "
             "all-reduce time hidden behind compute\n",
             f.allReduceMs, f.exposedMs(), f.exposedSyncMs(), percent(f.overlap()));
  if (f.hostWaits)
    fmt::print("host waited {:.4f} ms per step for reductions: overlap {} by that measure\n", f.waitedMs,
               percent(f.overlapByWait()));
}

void printDataParallelJson(const DataParallelFigures& f, const std::string& common) {
  for (const BucketFigures& b : f.buckets)
    fmt::print("{{{}\"section\": \"data_parallel\", \"kernel\": \"{}\", \"ranks\": {}, \"bytes\": {}, \"sync_ms\": {:.6f}, "
               "\"overlapped_ms\": {:.6f}, \"wait_ms\": {:.6f}}}\n",
               common, jsonEscape(b.kernel), f.ranks, b.bytes, b.syncMs, b.overlappedMs, b.waitedMs);
  fmt::print("{{{}\"section\": \"data_parallel\", \"kernel\": \"step\", \"ranks\": {}, \"buckets\": {}, \"bytes\": {}, "
             "\"step_ms\": {:.6f}, \"step_sync_ms\": {:.6f}, \"compute_ms\": {:.6f}, \"allreduce_ms\": {:.6f}, "
             "\"exposed_ms\": {:.6f}, \"exposed_sync_ms\": {:.6f}, \"wait_ms\": {:.6f}, \"overlap\": {}, "
             "\"overlap_by_wait\": {}}}\n",
             common, f.ranks, f.buckets.size(), f.bytes, f.stepMs, f.stepSyncMs, f.computeMs, f.allReduceMs,
             f.exposedMs(), f.exposedSyncMs(), f.waitedMs, jsonNumber(f.overlap()), jsonNumber(f.overlapByWait()));
}

}  // namespace kiln::cli
