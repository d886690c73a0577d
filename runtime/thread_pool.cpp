// The CPU backend's thread pool: each parallelFor is an OpenMP parallel region whose threads
// claim chunks from a shared counter.
#include "runtime/thread_pool.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <exception>

namespace kiln {

namespace {
// Set on a pool's threads while they run chunks, so a nested parallelFor runs inline.
thread_local bool insideParallelFor = false;
}  // namespace

ThreadPool::ThreadPool(unsigned threads) : threads_(std::max(1u, threads)) {}

ThreadPool& ThreadPool::shared() {
  static ThreadPool pool;
  return pool;
}

void ThreadPool::bindLibrariesOfCallingThread() const { omp_set_num_threads(static_cast<int>(threads_)); }

void ThreadPool::parallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  int64_t chunks = std::min<int64_t>((n + grain - 1) / grain, size());
  if (chunks <= 1 || insideParallelFor) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> call(callMutex_);
  const int64_t chunk = (n + chunks - 1) / chunks;
  chunks = (n + chunk - 1) / chunk;
  // Chunks are claimed, not assigned by thread number: OpenMP may start fewer threads than asked.
  std::atomic<int64_t> next = 0;
  std::exception_ptr failure;
  std::mutex failureMutex;
#pragma omp parallel num_threads(static_cast<int>(chunks))
  {
    insideParallelFor = true;
    for (int64_t c = next++; c < chunks; c = next++) {
      try {
        fn(c * chunk, std::min(n, c * chunk + chunk));
      } catch (...) {  // an exception may not leave a parallel region
        std::lock_guard<std::mutex> lock(failureMutex);
        if (!failure) failure = std::current_exception();
      }
    }
    insideParallelFor = false;
  }
  if (failure) std::rethrow_exception(failure);
}

}  // namespace kiln
