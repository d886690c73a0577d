// The threads of a placed executable's devices (runtime/placed_executable.h), started once and
// kept: device 0 runs on the calling thread, devices 1..N-1 each on a worker of its own, which
// sleeps between runs. Starting N-1 threads for every run cost more than a small model's step.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln {

class DeviceWorkers {
 public:
  explicit DeviceWorkers(int devices);
  ~DeviceWorkers();
  DeviceWorkers(const DeviceWorkers&) = delete;
  DeviceWorkers& operator=(const DeviceWorkers&) = delete;

  // Calls body(d) for every device d at once (device 0 on this thread) and returns when all have
  // returned. Runs from several threads take turns: one run's devices could otherwise wait on
  // tasks queued behind another run's on the same workers.
  void run(const std::function<void(int device)>& body);

 private:
  void workerLoop(int device);

  std::vector<std::thread> workers_;  // devices 1..N-1
  std::mutex runMutex_;               // one run at a time
  std::mutex mutex_;
  std::condition_variable wake_;      // workers: a run started, or stop
  std::condition_variable done_;      // the caller: a worker finished its part
  const std::function<void(int)>* body_ = nullptr;
  uint64_t generation_ = 0;  // counts runs; a worker runs each generation once
  int running_ = 0;          // workers still in the current run
  bool stop_ = false;
};

}  // namespace kiln
