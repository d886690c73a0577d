// dlopen with the search order and error messages of dynamic_library.h.
#include "runtime/cuda/dynamic_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <sstream>

#include "codegen/cuda_toolkit.h"

namespace kiln::cuda {

namespace {

std::vector<std::string> splitPath(const char* list) {
  std::vector<std::string> dirs;
  if (!list) return dirs;
  std::stringstream in(list);
  for (std::string dir; std::getline(in, dir, ':');)
    if (!dir.empty()) dirs.push_back(dir);
  return dirs;
}

}  // namespace

std::vector<std::string> libraryDirs() {
  std::vector<std::string> dirs = splitPath(std::getenv("KILN_CUDA_LIBRARY_PATH"));
  dirs.push_back(codegen::cudaHome() + "/lib64");
  return dirs;
}

Expected<DynamicLibrary> DynamicLibrary::open(const std::string& what, const std::vector<std::string>& candidates,
                                              const std::string& hint) {
  std::vector<std::string> tried;
  std::string reasons;
  auto attempt = [&](const std::string& path) -> void* {
    // RTLD_LOCAL: two libraries never see each other's symbols (cuDNN's sublibraries find
    // their siblings through their own RUNPATH). RTLD_NODELETE: vendor libraries are not made to
    // be unloaded (cuBLASLt's static state would be lost mid-teardown, and LeakSanitizer reports
    // what it allocated), so dlclose leaves them mapped until the process ends.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!handle) {
      const char* error = dlerror();
      std::string why = error ? error : "not found";
      // dlerror() usually starts with the path itself.
      if (why.rfind(path + ": ", 0) == 0) why = why.substr(path.size() + 2);
      reasons += "\n  " + path + ": " + why;
    }
    return handle;
  };
  for (const std::string& candidate : candidates) {
    if (void* h = attempt(candidate)) return DynamicLibrary(h, candidate);
    if (candidate.find('/') != std::string::npos) continue;
    for (const std::string& dir : libraryDirs()) {
      std::string path = dir + "/" + candidate;
      if (void* h = attempt(path)) return DynamicLibrary(h, path);
    }
  }
  return Error("cannot load " + what + "; tried:" + reasons + "\n" + hint);
}

DynamicLibrary& DynamicLibrary::operator=(DynamicLibrary&& other) noexcept {
  if (this != &other) {
    if (handle_) dlclose(handle_);
    handle_ = other.handle_;
    path_ = std::move(other.path_);
    other.handle_ = nullptr;
  }
  return *this;
}

DynamicLibrary::~DynamicLibrary() {
  if (handle_) dlclose(handle_);
}

void* DynamicLibrary::symbol(const char* name) const { return handle_ ? dlsym(handle_, name) : nullptr; }

bool isOverridden(const char* overrideVariable) {
  const char* value = std::getenv(overrideVariable);
  return value && *value;
}

std::vector<std::string> candidatesOr(const char* overrideVariable, std::vector<std::string> defaults) {
  if (isOverridden(overrideVariable)) return {std::getenv(overrideVariable)};
  return defaults;
}

}  // namespace kiln::cuda
