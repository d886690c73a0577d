// Finding the CUDA toolkit's libdevice and ptxas on disk (see cuda_toolkit.h for the search order).
#include "codegen/cuda_toolkit.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Program.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#ifndef KILN_DEFAULT_CUDA_HOME
#define KILN_DEFAULT_CUDA_HOME "/usr/local/cuda"
#endif

namespace kiln::codegen {

namespace fs = std::filesystem;

std::string cudaHome() {
  if (const char* env = std::getenv("KILN_CUDA_HOME"); env && *env) return env;
  std::error_code ec;
  if (*KILN_DEFAULT_CUDA_HOME && fs::is_directory(KILN_DEFAULT_CUDA_HOME, ec)) return KILN_DEFAULT_CUDA_HOME;
  return "/usr/local/cuda";
}

Expected<std::string> findLibdevice() {
  std::string home = cudaHome();
  fs::path path = fs::path(home) / "nvvm" / "libdevice" / "libdevice.10.bc";
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return path.string();
  return Error("libdevice not found at " + path.string() +
               " (kernels that use exp, log, tanh, erf, sin, cos or pow need it): install the CUDA toolkit "
               "or set KILN_CUDA_HOME to its root" +
               (std::getenv("KILN_CUDA_HOME") ? " (KILN_CUDA_HOME is set to '" + home + "')" : std::string()));
}

Expected<std::string> findPtxas() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("KILN_CUDA_HOME"); env && *env) dirs.push_back(std::string(env) + "/bin");
  if (*KILN_DEFAULT_CUDA_HOME) dirs.push_back(std::string(KILN_DEFAULT_CUDA_HOME) + "/bin");
  dirs.push_back("/usr/local/cuda/bin");
  for (const std::string& dir : dirs) {
    std::string candidate = dir + "/ptxas";
    if (llvm::sys::fs::can_execute(candidate)) return candidate;
  }
  if (auto onPath = llvm::sys::findProgramByName("ptxas")) return *onPath;
  std::string looked;
  for (const std::string& dir : dirs) looked += dir + ", ";
  return Error("ptxas not found (looked in " + looked + "and PATH): install the CUDA toolkit or set KILN_CUDA_HOME");
}

}  // namespace kiln::codegen
