// Shared libraries opened at run time (dlopen): the CUDA driver, cuBLASLt, cuDNN and NCCL. kiln
// links none of them, so one binary runs on machines with and without a GPU and says clearly
// which library it could not find and where it looked.
#pragma once

#include <string>
#include <vector>

#include "ir/status.h"

namespace kiln::cuda {

class DynamicLibrary {
 public:
  // Tries each candidate in order: a bare soname ("libcublasLt.so.13") goes through the dynamic
  // loader's own search (LD_LIBRARY_PATH, the ld.so cache), then through each folder of
  // libraryDirs(); a path with a '/' is opened as it is. The error names `what`, every place
  // tried with dlopen's reason, and `hint` (what the user can do about it).
  static Expected<DynamicLibrary> open(const std::string& what, const std::vector<std::string>& candidates,
                                       const std::string& hint);

  DynamicLibrary(DynamicLibrary&& other) noexcept : handle_(other.handle_), path_(std::move(other.path_)) {
    other.handle_ = nullptr;
  }
  DynamicLibrary& operator=(DynamicLibrary&& other) noexcept;
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;
  ~DynamicLibrary();

  // The symbol's address, or null if the library lacks it.
  void* symbol(const char* name) const;
  // What was opened ("libcuda.so.1" or a full path).
  const std::string& path() const { return path_; }

 private:
  DynamicLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  void* handle_ = nullptr;
  std::string path_;
};

// The library the environment variable `overrideVariable` names (KILN_CUDA_DRIVER,
// KILN_CUBLASLT_LIBRARY: the GPU simulator and its stand-ins), or else `defaults`.
std::vector<std::string> candidatesOr(const char* overrideVariable, std::vector<std::string> defaults);
// Whether `overrideVariable` names a library.
bool isOverridden(const char* overrideVariable);

// Looks `name` up in `library` into the function pointer `fn`, adding the name to the
// comma-separated `missing` when the library lacks it (for tables of entry points).
template <class Fn>
void lookupSymbol(const DynamicLibrary& library, const char* name, Fn& fn, std::string& missing) {
  fn = reinterpret_cast<Fn>(library.symbol(name));
  if (!fn) missing += std::string(missing.empty() ? "" : ", ") + name;
}

// Extra folders searched for CUDA's libraries after the loader's own search: $KILN_CUDA_LIBRARY_PATH
// (colon-separated), then $KILN_CUDA_HOME/lib64 (or the build-time toolkit's), so a toolkit
// outside the loader's path, or NVIDIA's pip wheels (site-packages/nvidia/*/lib), can be named.
std::vector<std::string> libraryDirs();

}  // namespace kiln::cuda
