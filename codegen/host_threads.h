// How many threads the CPU runtime spreads a kernel's work items over, for codegen choices that
// trade work per item against items per thread (column_reduction.h).
#pragma once

#include <cstdint>

namespace kiln::codegen {

// OMP_NUM_THREADS's first number where it is set (the runtime's pool sizes itself from it too:
// runtime/thread_pool.cpp), else the host's hardware threads. Read once per process.
int64_t hostThreads();

}  // namespace kiln::codegen
