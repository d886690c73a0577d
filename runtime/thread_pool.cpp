// The CPU backend's thread pool: each parallelFor is an OpenMP parallel region whose threads
// claim chunks from a shared counter.
#include "runtime/thread_pool.h"

#include <omp.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <thread>

namespace kiln {

namespace {
// Set on a pool's threads while they run chunks, so a nested parallelFor runs inline.
thread_local bool insideParallelFor = false;

// libgomp's threads do not survive fork(): in the child, a parallel region of more than one
// thread waits for them forever. A child of any process (one that ran kiln, or anything else on
// OpenMP: oneDNN, PyTorch) therefore runs kiln's kernels, and sizes its libraries, on one thread,
// as PyTorch's data-loader workers do. Registered when the library loads, before any fork.
std::atomic<bool> forkedChild = false;
void afterForkInChild() {
  forkedChild = true;
  omp_set_num_threads(1);
}
[[maybe_unused]] const int registeredAtFork = pthread_atfork(nullptr, nullptr, afterForkInChild);
}  // namespace

ThreadPool::ThreadPool(unsigned threads) : threads_(std::max(1u, threads)) {}

unsigned ThreadPool::defaultSize() {
  if (std::getenv("OMP_NUM_THREADS")) return static_cast<unsigned>(std::max(1, omp_get_max_threads()));
  return std::max(1u, std::thread::hardware_concurrency());
}

ThreadPool& ThreadPool::shared() {
  static ThreadPool pool;
  return pool;
}

void ThreadPool::bindLibrariesOfCallingThread() const {
  omp_set_num_threads(forkedChild ? 1 : static_cast<int>(threads_));
}

void ThreadPool::parallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  int64_t chunks = std::min<int64_t>((n + grain - 1) / grain, size());
  if (chunks <= 1 || insideParallelFor || forkedChild) {
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
