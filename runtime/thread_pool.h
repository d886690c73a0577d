// A thread pool that splits a range of independent work items across cores, on OpenMP threads.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>

namespace kiln {

// `threads` threads in all (defaultSize() unless told): the calling thread works too. The threads
// are the calling thread's OpenMP team, the same threads oneDNN runs its primitives on
// (runtime/onednn.h): with a pool of kiln's own, the OpenMP threads a oneDNN call left
// spin-waiting kept its cores from the kernels that followed (on 2 cores an Adam update after a
// matmul took 1.34 ms instead of 0.73). Results are deterministic because parallelFor hands every
// item to exactly one thread and nothing is combined across threads; only the timing varies.
// In a child of fork() everything runs on the calling thread (libgomp's threads stay behind).
class ThreadPool {
 public:
  explicit ThreadPool(unsigned threads = defaultSize());
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // The threads a pool takes unless told: OMP_NUM_THREADS where it is set (the variable oneDNN and
  // PyTorch read, and mpirun -x passes to each rank), else every core.
  static unsigned defaultSize();

  // The process-wide pool the CPU backend runs kernels on.
  static ThreadPool& shared();

  unsigned size() const { return threads_; }

  // Calls fn(begin, end) on disjoint chunks covering [0, n), each at least `grain` items long
  // (except the last), and returns when all are done. Chunk boundaries depend only on n, grain
  // and size(), never on timing. A call from inside fn (or with one chunk) runs inline. Calls on
  // one pool from several threads take turns.
  void parallelFor(int64_t n, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& fn);

  // Sizes the calling thread's OpenMP team to this pool, so the libraries it calls (oneDNN) use
  // as many threads as its kernels do: a placed device's share of the cores, not all of them.
  void bindLibrariesOfCallingThread() const;

 private:
  unsigned threads_;
  std::mutex callMutex_;
};

}  // namespace kiln
