// The copy bandwidth a backend's memory reaches, measured in the same run as a benchmark, so
// kernels' GB/s can be quoted as a fraction of it (machines and clocks vary; the ratio does not).
#pragma once

#include <cstddef>
#include <string>

#include "ir/status.h"
#include "runtime/backend.h"

namespace kiln {

struct CopyBandwidth {
  double gbps = 0;      // bytes read + bytes written per second, 1e9 bytes per GB
  size_t bytes = 0;     // size of the copied buffer
  double medianMs = 0;  // one copy
  std::string how;      // "device-to-device cuMemcpyDtoDAsync" / "memcpy on 16 threads"
};

// Copies a `bytes` buffer `reps` times (after a warm-up) and reports the median. Cuda: a
// device-to-device copy timed with events; Cpu: memcpy split over the CPU backend's thread pool,
// wall clock. Interp has no memory of its own: an error.
Expected<CopyBandwidth> measureCopyBandwidth(Backend backend, size_t bytes, int reps);

}  // namespace kiln
