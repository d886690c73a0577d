// A PTX module loaded onto the simulated device: decoded, and its .global/.const variables placed in
// device memory with their initial bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gpusim/exec/memory.h"
#include "gpusim/ptx/module.h"

namespace gpusim {

struct LoadedModule {
  ptx::Module ptx;
  // Per Module::variables index: the device address of a .global/.const variable, 0 otherwise.
  std::vector<uint64_t> variableAddress;
  DeviceMemory* memory = nullptr;

  ~LoadedModule();  // frees the variables' device memory
  // Index of the function named `name` in ptx.functions, or -1.
  int functionIndex(std::string_view name) const;
};

// Decodes `text` and places its variables. On failure returns nullptr and sets `log` to
// "line N: message" lines, as the JIT's error log reads.
std::unique_ptr<LoadedModule> loadModule(std::string_view text, DeviceMemory& memory, std::string& log);

}  // namespace gpusim
