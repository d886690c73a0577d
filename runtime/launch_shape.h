// How many blocks and threads a generated GPU kernel is launched with. Kernels loop over their
// work items with a grid stride (codegen/nvptx_target.cpp), so any grid is correct; this picks one
// that fills the GPU without launching blocks that would find no work.
#pragma once

#include <cstdint>

namespace kiln {

struct LaunchShape {
  uint32_t blocks = 0;
  uint32_t threadsPerBlock = 0;
};

// `workItems` items of `lanes` threads each (1, or 32 for a warp-per-row kernel) on a GPU with
// `multiprocessors` SMs, of which each holds `blocksPerMultiprocessor` blocks of this kernel at once
// (the occupancy calculator's answer). Enough blocks for one thread per lane of every item, capped
// at what runs at once (a full wave: more blocks would only queue); at least one block. Zero work
// items give zero blocks: nothing to launch.
LaunchShape launchShape(int64_t workItems, int lanes, int multiprocessors, int blocksPerMultiprocessor,
                        uint32_t threadsPerBlock = 256);

}  // namespace kiln
