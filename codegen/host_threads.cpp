// hostThreads: the CPU runtime's thread count, as codegen sees it.
#include "codegen/host_threads.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace kiln::codegen {

int64_t hostThreads() {
  static const int64_t threads = [] {
    if (const char* env = std::getenv("OMP_NUM_THREADS")) {
      long n = std::strtol(env, nullptr, 10);
      if (n > 0) return static_cast<int64_t>(n);
    }
    return static_cast<int64_t>(std::max(1u, std::thread::hardware_concurrency()));
  }();
  return threads;
}

}  // namespace kiln::codegen
