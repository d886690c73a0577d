// Loading a PTX module onto the simulated device (loaded_module.h).
#include "gpusim/exec/loaded_module.h"

#include <cstring>

#include "gpusim/ptx/parser.h"

namespace gpusim {

LoadedModule::~LoadedModule() {
  if (!memory) return;
  for (uint64_t address : variableAddress)
    if (address) memory->free(address);
}

int LoadedModule::functionIndex(std::string_view name) const {
  for (size_t i = 0; i < ptx.functions.size(); ++i)
    if (ptx.functions[i].name == name) return static_cast<int>(i);
  return -1;
}

std::unique_ptr<LoadedModule> loadModule(std::string_view text, DeviceMemory& memory, std::string& log) {
  auto loaded = std::make_unique<LoadedModule>();
  if (!ptx::parseModule(text, loaded->ptx, log)) return nullptr;
  loaded->memory = &memory;
  loaded->variableAddress.assign(loaded->ptx.variables.size(), 0);
  for (size_t i = 0; i < loaded->ptx.variables.size(); ++i) {
    const ptx::Variable& v = loaded->ptx.variables[i];
    if (v.space != ptx::Space::Global && v.space != ptx::Space::Const) continue;
    // Module globals start zeroed (as the loader's .bss does), so every byte counts as written.
    uint64_t address = memory.allocate(v.size ? v.size : 1, "module global " + v.name, /*initialised=*/true);
    if (!address) {
      log += "error: out of device memory for module global " + v.name + "\n";
      return nullptr;
    }
    Allocation* a = memory.find(address, v.size ? v.size : 1);
    if (!v.init.empty()) std::memcpy(a->host(address), v.init.data(), std::min<size_t>(v.init.size(), v.size));
    loaded->variableAddress[i] = address;
  }
  return loaded;
}

}  // namespace gpusim
