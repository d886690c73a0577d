// kiln bench for a data-parallel step (one with all_reduce ops, run under mpirun -np N): how long
// the computation takes, how long and how many bytes the reductions take, and how much of the
// reduction time the overlap hides behind computation.
//
// How overlap is measured. Every rank runs the step the same number of times in each of three
// modes (runtime/executable.h, CollectiveMode), the modes taking turns run by run, with a barrier
// before every run:
//   compute   all_reduce skipped: C, the step's computation alone;
//   sync      each reduction completes before the next kernel: the reductions' own durations
//             (summed per step: R, the all-reduce time) and the step time C + R + overheads;
//   overlap   reductions started early and waited for late (what kiln train runs): step time T.
// The reduction time left on the step's critical path is E = max(0, T - C) (it includes any
// slowdown the reductions cause to computation, such as cores taken from kernels), so the
// fraction hidden is overlap = (R - E) / R, clamped to [0, 1]. Medians of the runs; each figure
// is then averaged across ranks. E is a difference of two step times, so it is only as good as
// their noise: where the host itself waits for reductions (the CPU backend), W, its time blocked
// per step, gives a second, direct figure, (R - W) / R (it misses the slowdown of kernels that
// share cores with the reduction thread). On CUDA the host never waits; only E applies.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "codegen/kernel_plan.h"
#include "runtime/executable.h"

namespace kiln::cli {

struct BucketFigures {
  std::string kernel;          // the all_reduce's kernel
  int64_t bytes = 0;           // reduced per step
  double syncMs = 0;           // the reduction alone (synchronous runs)
  double overlappedMs = 0;     // the reduction while computation goes on (overlapped runs)
  double waitedMs = 0;         // host blocked waiting for it (overlapped runs; 0 on CUDA)
};

struct DataParallelFigures {
  int ranks = 1;
  std::vector<BucketFigures> buckets;  // in the plan's order
  int64_t bytes = 0;                   // all buckets, per step
  double stepMs = 0;                   // T: overlapped
  double stepSyncMs = 0;               // synchronous
  double computeMs = 0;                // C: reductions skipped
  double allReduceMs = 0;              // R: the buckets' synchronous durations, per step
  double waitedMs = 0;                 // W: per step, overlapped
  bool hostWaits = false;              // the backend's host blocks on reductions (CPU), so W means something
  double exposedMs() const;            // E = max(0, T - C)
  double exposedSyncMs() const;        // max(0, stepSyncMs - C)
  // (R - E) / R in [0, 1]; none when nothing crosses ranks.
  std::optional<double> overlap() const;
  // (R - W) / R in [0, 1]; none when nothing crosses ranks or the host does not wait.
  std::optional<double> overlapByWait() const;
};

// Whether `plan` (top level) has all_reduce kernels.
bool hasAllReduce(const codegen::BlockPlan& plan);

// Runs `runStep` warmup + reps times in each mode on every rank, as above. Every rank must call
// it (it synchronises the ranks and averages their figures). `hostWaits`: see DataParallelFigures.
Expected<DataParallelFigures> measureDataParallel(const codegen::BlockPlan& plan,
                                                  const std::function<Status(ExecuteOptions)>& runStep, int warmup,
                                                  int reps, bool hostWaits);

// The table section kiln bench prints after the kernels, and its JSON lines (`common`: the fields
// every line of the case carries, as "\"case\": ..., " without braces).
void printDataParallel(const DataParallelFigures& figures);
void printDataParallelJson(const DataParallelFigures& figures, const std::string& common);

}  // namespace kiln::cli
