// PTX loaded into the current context (cuModuleLoadDataEx: the driver JIT-compiles it for the
// GPU), and its kernels.
#pragma once

#include <cuda.h>

#include <string>

#include "ir/status.h"

namespace kiln::cuda {

class LoadedModule {
 public:
  // Fails with the driver's JIT error log (ptxas' messages, with PTX line numbers) when the PTX
  // does not compile for this GPU; `what` names the function it came from.
  static Expected<LoadedModule> load(const std::string& ptx, const std::string& what);
  LoadedModule(LoadedModule&& o) noexcept : module_(o.module_) { o.module_ = nullptr; }
  LoadedModule& operator=(LoadedModule&& o) noexcept;
  LoadedModule(const LoadedModule&) = delete;
  LoadedModule& operator=(const LoadedModule&) = delete;
  ~LoadedModule();

  Expected<CUfunction> function(const std::string& name) const;

 private:
  explicit LoadedModule(CUmodule m) : module_(m) {}
  CUmodule module_ = nullptr;
};

}  // namespace kiln::cuda
