// runChain: one thread per device working through its task list; a task waits (on one condition
// variable) until its inputs are published, copies what crosses devices, runs its stage's
// executable on the device's threads, and publishes its results.
#include "runtime/stage_chain.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "runtime/executable.h"
#include "runtime/placed_executable.h"
#include "runtime/thread_pool.h"

namespace kiln {

std::optional<PipelineSchedule> parsePipelineSchedule(std::string_view name) {
  if (name == "gpipe") return PipelineSchedule::FillDrain;
  if (name == "1f1b") return PipelineSchedule::OneForwardOneBackward;
  return std::nullopt;
}

const char* pipelineScheduleName(PipelineSchedule schedule) {
  return schedule == PipelineSchedule::FillDrain ? "gpipe" : "1f1b";
}

double ChainStats::bubble() const {
  if (busyMs.empty() || wallMs <= 0) return 0;
  double busy = 0;
  for (double b : busyMs) busy += b;
  return std::max(0.0, 1 - busy / (wallMs * static_cast<double>(busyMs.size())));
}

double fillDrainBubble(int stages, int microBatches) {
  return static_cast<double>(stages - 1) / static_cast<double>(microBatches + stages - 1);
}

namespace {

using Clock = std::chrono::steady_clock;

// oneDNN (the CPU's matmuls and convolutions) runs on OpenMP threads, whose count is a setting of
// the calling thread: a device's thread sets it to the device's share of the cores while it runs
// its tasks, so library calls keep to the device's share too. Looked up, not linked: without an
// OpenMP runtime in the process there is nothing to limit.
class OpenMpThreadsOfThisThread {
 public:
  explicit OpenMpThreadsOfThisThread(int threads) {
    static auto* get = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
    static auto* set = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
    if (!get || !set) return;
    set_ = set;
    previous_ = get();
    set_(threads);
  }
  ~OpenMpThreadsOfThisThread() {
    if (set_) set_(previous_);
  }
  OpenMpThreadsOfThisThread(const OpenMpThreadsOfThisThread&) = delete;
  OpenMpThreadsOfThisThread& operator=(const OpenMpThreadsOfThisThread&) = delete;

 private:
  void (*set_)(int) = nullptr;
  int previous_ = 0;
};

double millisecondsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

struct Task {
  int call = 0;
  int stage = 0;
};

// Each device's tasks in the order `schedule` runs them.
std::vector<std::vector<Task>> taskLists(const std::vector<ChainCall>& calls, int devices, PipelineSchedule schedule) {
  std::vector<std::vector<Task>> lists(static_cast<size_t>(devices));
  if (schedule == PipelineSchedule::FillDrain) {
    std::vector<std::pair<std::pair<int, int>, Task>> keyed;  // (level, call) -> task, per device below
    for (int c = 0; c < static_cast<int>(calls.size()); ++c) {
      const auto& stages = calls[c].exe->partition().stages;
      for (int s = 0; s < static_cast<int>(stages.size()); ++s) keyed.push_back({{stages[s].level, c}, {c, s}});
    }
    std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [key, task] : keyed)
      lists[static_cast<size_t>(calls[task.call].exe->partition().stages[task.stage].device)].push_back(task);
    return lists;
  }
  // 1F1B: a device's place in the pipeline is the rank of its first stage's level among the
  // devices' (of the first call); it may run `window` calls' first stages ahead.
  const auto& first = calls.front().exe->partition().stages;
  std::vector<int> firstLevel(static_cast<size_t>(devices), 1 << 30);
  for (const auto& s : first) firstLevel[static_cast<size_t>(s.device)] = std::min(firstLevel[static_cast<size_t>(s.device)], s.level);
  for (int d = 0; d < devices; ++d) {
    int rank = 0;
    for (int e = 0; e < devices; ++e)
      rank += firstLevel[static_cast<size_t>(e)] < firstLevel[static_cast<size_t>(d)] ||
              (firstLevel[static_cast<size_t>(e)] == firstLevel[static_cast<size_t>(d)] && e < d);
    int window = std::max(1, devices - rank);
    // Per call, this device's stages in level order (the partition lists them so).
    std::vector<std::vector<Task>> perCall(calls.size());
    for (int c = 0; c < static_cast<int>(calls.size()); ++c) {
      const auto& stages = calls[c].exe->partition().stages;
      for (int s = 0; s < static_cast<int>(stages.size()); ++s)
        if (stages[s].device == d) perCall[static_cast<size_t>(c)].push_back({c, s});
    }
    auto& list = lists[static_cast<size_t>(d)];
    int calls_ = static_cast<int>(calls.size());
    for (int c = 0; c < std::min(window, calls_); ++c)
      if (!perCall[static_cast<size_t>(c)].empty()) list.push_back(perCall[static_cast<size_t>(c)].front());
    for (int c = 0; c < calls_; ++c) {
      const auto& mine = perCall[static_cast<size_t>(c)];
      if (mine.size() > 1) list.insert(list.end(), mine.begin() + 1, mine.end());
      int next = c + window;
      if (next < calls_ && !perCall[static_cast<size_t>(next)].empty()) list.push_back(perCall[static_cast<size_t>(next)].front());
    }
  }
  return lists;
}

class ChainRun {
 public:
  ChainRun(const std::vector<ChainCall>& calls, const std::vector<Tensor>& given) : calls_(calls), given_(given) {
    results_.resize(calls.size());
    for (size_t c = 0; c < calls.size(); ++c) results_[c].resize(calls[c].exe->partition().stages.size());
    devices_ = calls.front().exe->devices();
  }

  Status run(PipelineSchedule schedule, ChainStats* stats) {
    std::vector<std::vector<Task>> lists = taskLists(calls_, devices_, schedule);
    start_ = Clock::now();
    blockedOn_.assign(static_cast<size_t>(devices_), nullptr);
    finished_.assign(static_cast<size_t>(devices_), false);
    busy_.assign(static_cast<size_t>(devices_), 0.0);
    std::vector<std::thread> workers;
    for (int d = 1; d < devices_; ++d) workers.emplace_back([&, d] { runDevice(d, lists[static_cast<size_t>(d)]); });
    runDevice(0, lists[0]);
    for (std::thread& w : workers) w.join();
    if (failure_) return *failure_;
    if (stats) {
      stats->wallMs = millisecondsBetween(start_, Clock::now());
      std::sort(runs_.begin(), runs_.end(),
                [](const StageRun& a, const StageRun& b) { return std::pair(a.call, a.stage) < std::pair(b.call, b.stage); });
      stats->runs = runs_;
      stats->busyMs = busy_;
    }
    return {};
  }

  // A call's results, once run() has succeeded.
  std::vector<Tensor> callResults(int call) const {
    std::vector<Tensor> out;
    for (const passes::StageSource& s : calls_[call].exe->partition().results) out.push_back(stageValue(call, s));
    return out;
  }

 private:
  // The tensor a stage input of `call` reads (its results must be published).
  const Tensor& stageValue(int call, const passes::StageSource& s) const {
    if (s.stage >= 0) return (*results_[call][s.stage])[s.index];
    const ChainSource& c = calls_[call].inputs[s.index];
    if (c.call < 0) return given_[c.index];
    const passes::StageSource& r = calls_[c.call].exe->partition().results[c.index];
    return stageValue(c.call, r);
  }
  bool published(int call, const passes::StageSource& s) const {
    if (s.stage >= 0) return results_[call][s.stage].has_value();
    const ChainSource& c = calls_[call].inputs[s.index];
    return c.call < 0 || published(c.call, calls_[c.call].exe->partition().results[c.index]);
  }
  bool ready(const Task& t) const {
    const passes::Stage& stage = calls_[t.call].exe->partition().stages[t.stage];
    return std::all_of(stage.inputs.begin(), stage.inputs.end(),
                       [&](const passes::StageSource& s) { return published(t.call, s); });
  }

  void runDevice(int device, const std::vector<Task>& tasks) {
    OpenMpThreadsOfThisThread libraryThreads(static_cast<int>(calls_.front().exe->threads(device).size()));
    for (const Task& task : tasks) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        blockedOn_[static_cast<size_t>(device)] = &task;
        checkDeadlock(task);
        published_.wait(lock, [&] { return failure_.has_value() || ready(task); });
        blockedOn_[static_cast<size_t>(device)] = nullptr;
        if (failure_) break;
      }
      const passes::Stage& stage = calls_[task.call].exe->partition().stages[task.stage];
      StageRun time{task.call, task.stage, device, stage.function->name()};
      auto began = Clock::now();
      time.startMs = millisecondsBetween(start_, began);
      // Transfers: a copy of its own for every input living on another device.
      std::vector<Tensor> copies;
      copies.reserve(stage.inputs.size());
      std::vector<TensorView> views;
      for (const passes::StageSource& source : stage.inputs) {
        const Tensor& v = stageValue(task.call, source);
        if (!source.transfer) {
          views.emplace_back(v);
          continue;
        }
        copies.emplace_back(v.type());
        std::memcpy(copies.back().data(), v.data(), v.byteSize());
        time.transferBytes += static_cast<int64_t>(v.byteSize());
        views.emplace_back(copies.back());
      }
      auto computing = Clock::now();
      time.transferMs = millisecondsBetween(began, computing);
      Expected<std::vector<Tensor>> out = std::vector<Tensor>{};
      if (const Executable* exe = calls_[task.call].exe->stageExecutable(static_cast<size_t>(task.stage))) {
        ExecuteOptions options;
        options.threads = &calls_[task.call].exe->threads(device);
        out = exe->run(std::span<const TensorView>(views), options);
      }
      time.computeMs = millisecondsBetween(computing, Clock::now());
      std::lock_guard<std::mutex> lock(mutex_);
      busy_[static_cast<size_t>(device)] += time.transferMs + time.computeMs;
      runs_.push_back(time);
      if (!out) {
        fail(out.error(), task);
        break;
      }
      results_[task.call][task.stage] = std::move(*out);
      published_.notify_all();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    finished_[static_cast<size_t>(device)] = true;
    if (!tasks.empty()) checkDeadlock(tasks.back());
  }

  // Every device either done or waiting for a task whose inputs will never come would be a
  // schedule that cannot finish: an error, never a hang (the schedules above cannot produce one).
  // Under mutex_.
  void checkDeadlock(const Task& at) {
    for (size_t d = 0; d < blockedOn_.size(); ++d)
      if (!finished_[d] && (!blockedOn_[d] || ready(*blockedOn_[d]))) return;
    if (std::all_of(finished_.begin(), finished_.end(), [](bool f) { return f; })) return;
    fail(Error("the pipeline schedule cannot finish: every device waits for another (a kiln bug)"), at);
  }

  // Keeps the first failing task's error (by call, then stage), so the message does not depend
  // on timing; wakes every device to stop. Under mutex_.
  void fail(Error error, const Task& task) {
    if (!failure_ || std::pair(task.call, task.stage) < failedAt_) failure_ = std::move(error), failedAt_ = {task.call, task.stage};
    published_.notify_all();
  }

  const std::vector<ChainCall>& calls_;
  const std::vector<Tensor>& given_;
  int devices_ = 1;
  std::vector<std::vector<std::optional<std::vector<Tensor>>>> results_;  // [call][stage]
  std::mutex mutex_;
  std::condition_variable published_;
  std::optional<Error> failure_;
  std::pair<int, int> failedAt_;
  std::vector<const Task*> blockedOn_;  // per device: the task it waits for, if it waits
  std::vector<char> finished_;           // per device: its list is done (or it stopped)
  Clock::time_point start_;
  std::vector<StageRun> runs_;
  std::vector<double> busy_;
};

}  // namespace

Expected<std::vector<std::vector<Tensor>>> runChain(const std::vector<ChainCall>& calls, const std::vector<Tensor>& given,
                                                    PipelineSchedule schedule, ChainStats* stats) {
  if (calls.empty()) return std::vector<std::vector<Tensor>>{};
  for (const ChainCall& c : calls) {
    KILN_INTERNAL_CHECK(c.exe->devices() == calls.front().exe->devices(), "runChain: calls on different device counts");
    KILN_INTERNAL_CHECK(c.inputs.size() == c.exe->placedFunction().params().size(), "runChain: one source per parameter");
  }
  ChainRun run(calls, given);
  KILN_TRY(run.run(schedule, stats));
  std::vector<std::vector<Tensor>> out;
  for (int c = 0; c < static_cast<int>(calls.size()); ++c) out.push_back(run.callResults(c));
  return out;
}

}  // namespace kiln
