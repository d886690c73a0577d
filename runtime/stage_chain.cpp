// runChain: one thread per device (the placed executable's, runtime/device_workers.h) working
// through its task list; a task waits (on one condition variable) until its inputs are published,
// copies what crosses devices, runs its stage's executable on the device's threads, and publishes
// its results.
#include "runtime/stage_chain.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>

#include "runtime/device_tensor.h"
#include "runtime/device_workers.h"
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
  int depth = 0;  // effective level: device crossings on the longest path to it, across calls
};

// Every task of the chain with its depth: a stage's depth is at least its own level and at least
// each source task's depth, plus one where the source is on another device. So every dependency
// goes to a task of smaller (depth, call, stage), and one of equal depth only on the same device.
std::vector<std::vector<Task>> tasksByDevice(const std::vector<ChainCall>& calls, int devices) {
  std::vector<std::vector<int>> depth(calls.size());
  for (size_t c = 0; c < calls.size(); ++c) {
    const passes::Partition& p = calls[c].exe->partition();
    depth[c].resize(p.stages.size());
    for (size_t s = 0; s < p.stages.size(); ++s) {  // stages come after their sources
      int d = p.stages[s].level;
      for (const passes::StageSource& in : p.stages[s].inputs) {
        if (in.stage >= 0) {
          d = std::max(d, depth[c][static_cast<size_t>(in.stage)] + (in.transfer ? 1 : 0));
          continue;
        }
        const ChainSource& from = calls[c].inputs[static_cast<size_t>(in.index)];
        if (from.call < 0) continue;
        const passes::Partition& q = calls[static_cast<size_t>(from.call)].exe->partition();
        const passes::StageSource& r = q.results[static_cast<size_t>(from.index)];
        if (r.stage < 0) continue;  // a parameter passed through: given ultimately
        bool crosses = q.stages[static_cast<size_t>(r.stage)].device != p.stages[s].device;
        d = std::max(d, depth[static_cast<size_t>(from.call)][static_cast<size_t>(r.stage)] + (crosses ? 1 : 0));
      }
      depth[c][s] = d;
    }
  }
  std::vector<std::vector<Task>> lists(static_cast<size_t>(devices));
  for (size_t c = 0; c < calls.size(); ++c) {
    const auto& stages = calls[c].exe->partition().stages;
    for (size_t s = 0; s < stages.size(); ++s)
      lists[static_cast<size_t>(stages[s].device)].push_back({static_cast<int>(c), static_cast<int>(s), depth[c][s]});
  }
  for (auto& list : lists)
    std::sort(list.begin(), list.end(), [](const Task& a, const Task& b) {
      return std::tuple(a.depth, a.call, a.stage) < std::tuple(b.depth, b.call, b.stage);
    });
  return lists;
}

// 1F1B's window on each device: devices - its place in the pipeline (the rank of the smallest
// depth of its tasks in the first call among the devices'), at least 1.
std::vector<int> oneForwardOneBackwardWindows(const std::vector<std::vector<Task>>& lists) {
  int devices = static_cast<int>(lists.size());
  std::vector<int> firstDepth(lists.size(), 1 << 30);
  for (size_t d = 0; d < lists.size(); ++d)
    for (const Task& t : lists[d])
      if (t.call == 0) firstDepth[d] = std::min(firstDepth[d], t.depth);
  std::vector<int> windows(lists.size());
  for (int d = 0; d < devices; ++d) {
    int rank = 0;
    for (int e = 0; e < devices; ++e)
      rank += std::pair(firstDepth[static_cast<size_t>(e)], e) < std::pair(firstDepth[static_cast<size_t>(d)], d);
    windows[static_cast<size_t>(d)] = std::max(1, devices - rank);
  }
  return windows;
}

// A stage's result: on the host (the CPU's stages), or on GPU `gpu` (cuda's, which stay there:
// a transfer to another GPU is one peer copy, and only the chain's own results come back).
struct ChainValue {
  Tensor host;
  DeviceTensor device;
  int gpu = -1;
};

// Where a stage input is: a given tensor (host) or a published ChainValue.
struct ValueRef {
  const Tensor* host = nullptr;
  const DeviceTensor* device = nullptr;
  int gpu = -1;
  const TensorType& type() const { return host ? host->type() : device->type(); }
};

class ChainRun {
 public:
  ChainRun(const std::vector<ChainCall>& calls, const std::vector<Tensor>& given) : calls_(calls), given_(given) {
    results_.resize(calls.size());
    for (size_t c = 0; c < calls.size(); ++c) results_[c].resize(calls[c].exe->partition().stages.size());
    devices_ = calls.front().exe->devices();
    uploads_.resize(static_cast<size_t>(devices_));
  }

  Status run(PipelineSchedule schedule, ChainStats* stats) {
    lists_ = tasksByDevice(calls_, devices_);
    std::vector<std::vector<Task>>& lists = lists_;
    for (const auto& list : lists_) done_.emplace_back(list.size(), false);
    schedule_ = schedule;
    windows_ = oneForwardOneBackwardWindows(lists);
    start_ = Clock::now();
    waiting_.assign(static_cast<size_t>(devices_), false);
    finished_.assign(static_cast<size_t>(devices_), false);
    busy_.assign(static_cast<size_t>(devices_), 0.0);
    calls_.front().exe->workers().run([&](int d) { runDevice(d, lists[static_cast<size_t>(d)]); });
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

  // A call's results, once run() has succeeded (from a GPU: copied back).
  Expected<std::vector<Tensor>> callResults(int call) const {
    std::vector<Tensor> out;
    for (const passes::StageSource& s : calls_[call].exe->partition().results) {
      ValueRef v = stageValue(call, s);
      if (v.host) {
        out.push_back(*v.host);
        continue;
      }
      auto host = downloadFromGpu(v.gpu, *v.device);
      if (!host) return host.error();
      out.push_back(std::move(*host));
    }
    return out;
  }

 private:
  // What a stage input of `call` reads (its results must be published).
  ValueRef stageValue(int call, const passes::StageSource& s) const {
    if (s.stage >= 0) {
      const ChainValue& v = (*results_[call][s.stage])[s.index];
      return v.gpu < 0 ? ValueRef{&v.host, nullptr, -1} : ValueRef{nullptr, &v.device, v.gpu};
    }
    const ChainSource& c = calls_[call].inputs[s.index];
    if (c.call < 0) return {&given_[c.index], nullptr, -1};
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

  // The next task device `device` runs, or none yet. Fill-drain: the list's first, in its order
  // (by depth, then call: every micro-batch's forward stage before any backward one). 1F1B: the
  // ready task of the oldest micro-batch, but a micro-batch not yet started here starts only while
  // fewer than the window are in flight here (started, not finished). Under mutex_.
  std::optional<size_t> pick(int device, const std::vector<Task>& tasks, const std::vector<char>& done) const {
    if (schedule_ == PipelineSchedule::FillDrain) {
      for (size_t i = 0; i < tasks.size(); ++i)
        if (!done[i]) return ready(tasks[i]) ? std::optional<size_t>(i) : std::nullopt;
      return std::nullopt;
    }
    std::map<int, std::pair<int, int>> perCall;  // call -> (tasks done here, tasks here)
    for (size_t i = 0; i < tasks.size(); ++i) {
      auto& [finished, all] = perCall[tasks[i].call];
      finished += done[i] ? 1 : 0;
      ++all;
    }
    int inFlight = 0;
    for (const auto& [call, counts] : perCall) inFlight += counts.first > 0 && counts.first < counts.second;
    std::optional<size_t> best;
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (done[i] || !ready(tasks[i])) continue;
      bool starts = perCall.at(tasks[i].call).first == 0;
      if (starts && inFlight >= windows_[static_cast<size_t>(device)]) continue;
      auto key = [&](size_t j) { return std::tuple(tasks[j].call, tasks[j].depth, tasks[j].stage); };
      if (!best || key(i) < key(*best)) best = i;
    }
    return best;
  }

  void runDevice(int device, const std::vector<Task>& tasks) {
    OpenMpThreadsOfThisThread libraryThreads(static_cast<int>(calls_.front().exe->threads(device).size()));
    std::vector<char>& done = done_[static_cast<size_t>(device)];
    for (size_t n = 0; n < tasks.size(); ++n) {
      size_t next = 0;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        std::optional<size_t> chosen;
        waiting_[static_cast<size_t>(device)] = true;
        published_.wait(lock, [&] {
          if (failure_) return true;
          chosen = pick(device, tasks, done);
          if (!chosen) checkDeadlock();
          return chosen.has_value() || failure_.has_value();
        });
        waiting_[static_cast<size_t>(device)] = false;
        if (failure_) break;
        next = *chosen;
        done[next] = true;
      }
      const Task& task = tasks[next];
      const passes::Stage& stage = calls_[task.call].exe->partition().stages[task.stage];
      StageRun time{task.call, task.stage, device, stage.function->name()};
      auto began = Clock::now();
      time.startMs = millisecondsBetween(start_, began);
      const Executable* exe = calls_[task.call].exe->stageExecutable(static_cast<size_t>(task.stage));
      Expected<std::vector<ChainValue>> out = std::vector<ChainValue>{};
      if (exe && exe->target() == codegen::Target::Cuda) {
        out = runOnGpu(*exe, device, task, stage, time, began);
      } else if (exe) {
        out = runOnHost(*exe, device, task, stage, time, began);
      }
      std::lock_guard<std::mutex> lock(mutex_);
      busy_[static_cast<size_t>(device)] += time.transferMs + time.computeMs;
      runs_.push_back(time);
      if (!out) {
        fail(out.error(), {task.call, task.stage});
        break;
      }
      results_[task.call][task.stage] = std::move(*out);
      published_.notify_all();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    finished_[static_cast<size_t>(device)] = true;
    checkDeadlock();
    published_.notify_all();
  }

  // A stage on the CPU: a copy of its own for every input living on another device (the transfer),
  // then the stage's executable on the device's threads.
  Expected<std::vector<ChainValue>> runOnHost(const Executable& exe, int device, const Task& task, const passes::Stage& stage,
                                              StageRun& time, Clock::time_point began) const {
    std::vector<Tensor> copies;
    copies.reserve(stage.inputs.size());
    std::vector<TensorView> views;
    for (const passes::StageSource& source : stage.inputs) {
      const Tensor& v = *stageValue(task.call, source).host;
      if (!source.transfer) {
        views.emplace_back(v);
        continue;
      }
      copies.push_back(Tensor::uninitialized(v.type()));
      std::memcpy(copies.back().data(), v.data(), v.byteSize());
      time.transferBytes += static_cast<int64_t>(v.byteSize());
      views.emplace_back(copies.back());
    }
    auto computing = Clock::now();
    time.transferMs = millisecondsBetween(began, computing);
    ExecuteOptions options;
    options.threads = &calls_[task.call].exe->threads(device);
    auto out = exe.run(std::span<const TensorView>(views), options);
    time.computeMs = millisecondsBetween(computing, Clock::now());
    if (!out) return out.error();
    std::vector<ChainValue> values(out->size());
    for (size_t i = 0; i < out->size(); ++i) values[i].host = std::move((*out)[i]);
    return values;
  }

  // A stage on device `device`'s GPU: given inputs uploaded, inputs from another GPU copied peer
  // to peer (the transfer, on this GPU's transfer stream while the source GPU goes on), results
  // left on this GPU for the stages after it.
  Expected<std::vector<ChainValue>> runOnGpu(const Executable& exe, int device, const Task& task, const passes::Stage& stage,
                                             StageRun& time, Clock::time_point began) const {
    const int gpu = calls_[task.call].exe->gpu(device);
    std::vector<DeviceTensor> inputs;
    for (const passes::StageSource& source : stage.inputs) {
      ValueRef v = stageValue(task.call, source);
      if (v.gpu == gpu) {  // made on this GPU: read in place
        inputs.push_back(*v.device);
        continue;
      }
      auto on = v.host ? uploadOnce(device, gpu, *v.host) : copyToGpu(gpu, *v.device, v.gpu);
      if (!on) return on.error();
      if (source.transfer) time.transferBytes += static_cast<int64_t>(v.type().byteSize());
      inputs.push_back(std::move(*on));
    }
    auto computing = Clock::now();
    time.transferMs = millisecondsBetween(began, computing);
    auto out = exe.runOnDevice(inputs);
    time.computeMs = millisecondsBetween(computing, Clock::now());
    if (!out) return out.error();
    std::vector<ChainValue> values(out->size());
    for (size_t i = 0; i < out->size(); ++i) values[i].device = std::move((*out)[i]), values[i].gpu = gpu;
    return values;
  }

  // A given tensor on device `device`'s GPU: uploaded by the first of its tasks that reads it (a
  // parameter every micro-batch reads goes up once per run, not once per micro-batch). Only the
  // device's own thread touches its cache.
  Expected<DeviceTensor> uploadOnce(int device, int gpu, const Tensor& host) const {
    auto& cache = uploads_[static_cast<size_t>(device)];
    if (auto it = cache.find(&host); it != cache.end()) return it->second;
    auto up = uploadToGpu(gpu, host);
    if (!up) return up.error();
    return cache.emplace(&host, std::move(*up)).first->second;
  }

  // Every device either done or waiting with nothing it may run, and no task running, would be a
  // schedule that cannot finish: an error, never a hang (the schedules above cannot produce one:
  // fill-drain's order is one in which every task's sources come first). Under mutex_; a waiting
  // device rechecks each time it wakes, so the last one to wait sees it.
  void checkDeadlock() {
    for (size_t d = 0; d < waiting_.size(); ++d) {
      if (finished_[d]) continue;
      if (!waiting_[d] || pick(static_cast<int>(d), lists_[d], done_[d])) return;  // running, or about to
    }
    if (std::all_of(finished_.begin(), finished_.end(), [](char f) { return f; })) return;
    fail(Error("the pipeline schedule cannot finish: every device waits for another (a kiln bug)"), {1 << 30, 0});
  }

  // Keeps the first failing task's error (by call, then stage), so the message does not depend
  // on timing; wakes every device to stop. Under mutex_.
  void fail(Error error, std::pair<int, int> at) {
    if (!failure_ || at < failedAt_) failure_ = std::move(error), failedAt_ = at;
    published_.notify_all();
  }

  const std::vector<ChainCall>& calls_;
  const std::vector<Tensor>& given_;
  int devices_ = 1;
  std::vector<std::vector<std::optional<std::vector<ChainValue>>>> results_;  // [call][stage]
  mutable std::vector<std::map<const Tensor*, DeviceTensor>> uploads_;  // per device: given tensors on its GPU
  std::mutex mutex_;
  std::condition_variable published_;
  std::optional<Error> failure_;
  std::pair<int, int> failedAt_;
  PipelineSchedule schedule_ = PipelineSchedule::FillDrain;
  std::vector<int> windows_;             // 1F1B: per device
  std::vector<std::vector<Task>> lists_;  // per device: its tasks
  std::vector<std::vector<char>> done_;   // per device: which of them it has taken (under mutex_)
  std::vector<char> waiting_;            // per device: waiting with nothing it may run
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
  for (int c = 0; c < static_cast<int>(calls.size()); ++c) {
    auto results = run.callResults(c);
    if (!results) return results.error();
    out.push_back(std::move(*results));
  }
  return out;
}

}  // namespace kiln
