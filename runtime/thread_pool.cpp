// The CPU backend's thread pool: a shared job that workers and the caller take chunks from.
#include "runtime/thread_pool.h"

#include <algorithm>

namespace kiln {

namespace {
// Set on pool threads, and on a caller while it runs chunks, so nested parallelFor runs inline
// instead of deadlocking on the busy pool.
thread_local bool insideParallelFor = false;
}  // namespace

ThreadPool::ThreadPool(unsigned threads) {
  threads = std::max(1u, threads);
  for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

ThreadPool& ThreadPool::shared() {
  static ThreadPool pool;
  return pool;
}

void ThreadPool::drain(std::unique_lock<std::mutex>& lock) {
  while (job_.fn && job_.next < job_.chunks) {
    int64_t c = job_.next++;
    const auto* fn = job_.fn;
    int64_t begin = c * job_.chunk, end = std::min(job_.n, begin + job_.chunk);
    lock.unlock();
    (*fn)(begin, end);
    lock.lock();
    if (++job_.finished == job_.chunks) done_.notify_all();
  }
}

void ThreadPool::workerLoop() {
  insideParallelFor = true;
  std::unique_lock<std::mutex> lock(mutex_);
  uint64_t seen = 0;
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
    if (stopping_) return;
    seen = generation_;
    drain(lock);
  }
}

void ThreadPool::parallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  int64_t chunks = std::min<int64_t>((n + grain - 1) / grain, size());
  if (chunks <= 1 || insideParallelFor || workers_.empty()) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> call(callMutex_);
  std::unique_lock<std::mutex> lock(mutex_);
  int64_t chunk = (n + chunks - 1) / chunks;
  job_ = Job{&fn, n, chunk, (n + chunk - 1) / chunk, 0, 0};
  ++generation_;
  wake_.notify_all();
  insideParallelFor = true;
  drain(lock);
  insideParallelFor = false;
  done_.wait(lock, [&] { return job_.finished == job_.chunks; });
  job_ = Job{};
}

}  // namespace kiln
