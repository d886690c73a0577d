// Running calls of placed functions (runtime/placed_executable.h) stage by stage, several calls
// in flight at once: pipeline parallelism. Each call's inputs are given tensors or results of
// earlier calls (a training step's micro-batches pass their gradient accumulators along); every
// device runs its (call, stage) tasks in the order a schedule gives, each as soon as its inputs
// are there, so while device 1 works on micro-batch 0, device 0 already runs micro-batch 1.
//
// Schedules (per device, over the M calls and its stages in each, ordered by level):
//   FillDrain (GPipe): by (level, call): every call's first stage, then every call's next, ...
//     With one forward and one backward stage per device, all forwards, then all backwards.
//   OneForwardOneBackward (1F1B, PipeDream-flush): call by call, but the first stage of the next
//     `window` calls may run ahead; window = devices - the device's place in the pipeline (the
//     rank of its first stage's level), so the last device alternates one forward, one backward
//     and no device holds more than `window` calls' activations.
// Results equal running the calls one after another: tasks are pure functions of their inputs.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/status.h"
#include "ir/tensor.h"

namespace kiln {

class PlacedExecutable;

enum class PipelineSchedule { FillDrain, OneForwardOneBackward };
// "gpipe" / "1f1b"; nullopt for anything else.
std::optional<PipelineSchedule> parsePipelineSchedule(std::string_view name);
const char* pipelineScheduleName(PipelineSchedule schedule);

// Where a call's input comes from: given[index] (call < 0), or result `index` of an earlier call.
struct ChainSource {
  int call = -1;
  int index = 0;
};

struct ChainCall {
  const PlacedExecutable* exe = nullptr;  // all calls of a chain use the same number of devices
  std::vector<ChainSource> inputs;        // one per parameter of exe's function
};

// One (call, stage) task of a run: when it started, its transfers in and its compute.
struct StageRun {
  int call = 0;
  int stage = 0;
  int device = 0;
  std::string name;  // the stage function, "main.d1.s1"
  double startMs = 0;
  double transferMs = 0;
  double computeMs = 0;
  int64_t transferBytes = 0;
};

struct ChainStats {
  std::vector<StageRun> runs;  // every task, by call then stage
  double wallMs = 0;
  // Per device: the time it spent in tasks, and the fraction of the run it was idle (the bubble).
  std::vector<double> busyMs;
  double bubble() const;  // idle time over devices x wall time
};

// Runs `calls` on `given` under `schedule`; returns each call's results (the function's results,
// in order). The first failing task's error (by call, then stage) comes back after every device
// has stopped; nothing hangs.
Expected<std::vector<std::vector<Tensor>>> runChain(const std::vector<ChainCall>& calls, const std::vector<Tensor>& given,
                                                    PipelineSchedule schedule, ChainStats* stats = nullptr);

// The fill-drain bubble of N stages and M micro-batches: (N - 1) / (M + N - 1).
double fillDrainBubble(int stages, int microBatches);

}  // namespace kiln
