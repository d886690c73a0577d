// The grid of a generated kernel (launch_shape.h).
#include "runtime/launch_shape.h"

#include <algorithm>

namespace kiln {

LaunchShape launchShape(int64_t workItems, int lanes, int multiprocessors, int blocksPerMultiprocessor,
                        uint32_t threadsPerBlock) {
  if (workItems <= 0) return {0, threadsPerBlock};
  int64_t threads = workItems * std::max(lanes, 1);
  int64_t needed = (threads + threadsPerBlock - 1) / threadsPerBlock;
  int64_t wave = int64_t{std::max(multiprocessors, 1)} * std::max(blocksPerMultiprocessor, 1);
  int64_t blocks = std::clamp<int64_t>(std::min(needed, wave), 1, INT32_MAX);
  return {static_cast<uint32_t>(blocks), threadsPerBlock};
}

}  // namespace kiln
