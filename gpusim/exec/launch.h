// Running one kernel launch on the interpreter: every block of the grid, each block's warps in
// lockstep, with the checkers (memcheck, racecheck, initcheck, synccheck) and the counters on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpusim/exec/kernel_stats.h"
#include "gpusim/exec/loaded_module.h"
#include "gpusim/exec/memory.h"

namespace gpusim {

// Why a launch failed, mapped by the driver onto CUresult codes.
enum class Fault : uint8_t {
  None,
  IllegalAddress,     // out of bounds, freed memory, wrong space: CUDA_ERROR_ILLEGAL_ADDRESS
  MisalignedAddress,  // CUDA_ERROR_MISALIGNED_ADDRESS
  InvalidAddressSpace,  // CUDA_ERROR_INVALID_ADDRESS_SPACE
  IllegalInstruction,   // CUDA_ERROR_ILLEGAL_INSTRUCTION (also divergent barriers, as hardware hangs)
  Trap,                 // trap instruction: CUDA_ERROR_LAUNCH_FAILED
  Timeout,              // instruction budget spent: CUDA_ERROR_LAUNCH_TIMEOUT
  CheckFailed,          // initcheck / racecheck / synccheck finding: CUDA_ERROR_LAUNCH_FAILED
};

struct LaunchRequest {
  const LoadedModule* module = nullptr;
  uint32_t function = 0;  // index in module->ptx.functions (an .entry)
  Dim3 grid, block;
  uint32_t dynamicSharedBytes = 0;
  std::vector<uint8_t> params;  // the parameter buffer, laid out as the .entry declares
};

struct LaunchOptions {
  uint64_t instructionBudget = 0;  // warp instructions per launch before Timeout; 0: unlimited
  bool initcheck = true;
  bool racecheck = true;
};

struct LaunchResult {
  Fault fault = Fault::None;
  // The sanitizer-style report: kernel, PTX line, block and thread, address, nearest allocation.
  std::string report;
  KernelStats stats;
};

LaunchResult launch(const LaunchRequest& request, DeviceMemory& memory, const LaunchOptions& options);

}  // namespace gpusim
