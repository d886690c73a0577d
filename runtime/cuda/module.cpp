// Loading PTX through the driver's JIT (module.h).
#include "runtime/cuda/module.h"

#include <cstring>
#include <vector>

#include "runtime/cuda/driver.h"

namespace kiln::cuda {

Expected<LoadedModule> LoadedModule::load(const std::string& ptx, const std::string& what) {
  // The JIT's logs go to buffers of our own, so a failure can show ptxas' message.
  constexpr size_t kLogSize = 16 * 1024;
  std::vector<char> errorLog(kLogSize, '\0'), infoLog(kLogSize, '\0');
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_INFO_LOG_BUFFER,
                            CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {errorLog.data(), reinterpret_cast<void*>(kLogSize - 1), infoLog.data(),
                    reinterpret_cast<void*>(kLogSize - 1)};
  CUmodule module = nullptr;
  CUresult r = api().cuModuleLoadDataEx(&module, ptx.c_str(), 4, options, values);
  if (r != CUDA_SUCCESS) {
    std::string log(errorLog.data(), strnlen(errorLog.data(), kLogSize));
    return Error("the CUDA driver could not load the PTX of " + what + " (cuModuleLoadDataEx: " + resultName(r) + ")" +
                 (log.empty() ? std::string() : ":\n" + log) +
                 "\n(kiln compile --target cuda --emit ptx shows the PTX; --dump-dir keeps every stage)");
  }
  return LoadedModule(module);
}

LoadedModule& LoadedModule::operator=(LoadedModule&& o) noexcept {
  if (this != &o) {
    if (module_) api().cuModuleUnload(module_);
    module_ = o.module_;
    o.module_ = nullptr;
  }
  return *this;
}

LoadedModule::~LoadedModule() {
  if (module_) api().cuModuleUnload(module_);
}

Expected<CUfunction> LoadedModule::function(const std::string& name) const {
  CUfunction f = nullptr;
  KILN_CU(cuModuleGetFunction, name, &f, module_, name.c_str());
  return f;
}

}  // namespace kiln::cuda
