#include "runtime/device_workers.h"

namespace kiln {

DeviceWorkers::DeviceWorkers(int devices) {
  for (int d = 1; d < devices; ++d) workers_.emplace_back([this, d] { workerLoop(d); });
}

DeviceWorkers::~DeviceWorkers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& w : workers_) w.join();
}

void DeviceWorkers::run(const std::function<void(int device)>& body) {
  std::lock_guard<std::mutex> turn(runMutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    body_ = &body;
    running_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  wake_.notify_all();
  body(0);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return running_ == 0; });
  body_ = nullptr;
}

void DeviceWorkers::workerLoop(int device) {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    const std::function<void(int)>* body = body_;
    lock.unlock();
    (*body)(device);
    lock.lock();
    if (--running_ == 0) done_.notify_one();
  }
}

}  // namespace kiln
