// A small fixed-size thread pool that splits a range of independent work items across cores.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln {

// std::thread::hardware_concurrency() threads in all: the calling thread works too, so the pool
// starts one fewer. Results are deterministic because parallelFor hands every item to exactly one
// thread and nothing is combined across threads; only the timing varies.
class ThreadPool {
 public:
  explicit ThreadPool(unsigned threads = std::thread::hardware_concurrency());
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // The process-wide pool the CPU backend runs kernels on (started on first use).
  static ThreadPool& shared();

  unsigned size() const { return static_cast<unsigned>(workers_.size()) + 1; }

  // Calls fn(begin, end) on disjoint chunks covering [0, n), each at least `grain` items long
  // (except the last), and returns when all are done. Chunk boundaries depend only on n, grain
  // and size(), never on timing. A call from inside fn (or with one chunk) runs inline.
  void parallelFor(int64_t n, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& fn);

 private:
  struct Job {
    const std::function<void(int64_t, int64_t)>* fn = nullptr;
    int64_t n = 0, chunk = 0, chunks = 0;
    int64_t next = 0;      // next chunk to claim (under mutex_)
    int64_t finished = 0;  // chunks done (under mutex_)
  };
  void workerLoop();
  // Claims and runs chunks of the current job until none is left.
  void drain(std::unique_lock<std::mutex>& lock);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;  // workers: a job arrived or the pool is stopping
  std::condition_variable done_;  // caller: the last chunk finished
  std::mutex callMutex_;          // one parallelFor at a time; concurrent callers queue here
  Job job_;
  uint64_t generation_ = 0;
  bool stopping_ = false;
};

}  // namespace kiln
