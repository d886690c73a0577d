// Loading libcuda and its entry points (driver.h).
#include "runtime/cuda/driver.h"

#include <cstdlib>
#include <mutex>

#include <unistd.h>

#include "runtime/cuda/dynamic_library.h"

namespace kiln::cuda {

namespace {

// The versioned symbol a driver name stands for: cuda.h's macros are expanded first.
#define KILN_CUDA_SYMBOL_NAME(fn) KILN_CUDA_SYMBOL_NAME_EXPANDED(fn)
#define KILN_CUDA_SYMBOL_NAME_EXPANDED(fn) #fn

struct LoadedDriver {
  Expected<DynamicLibrary> library = Error("not loaded");
  DriverApi api;
  Status status;
  pid_t loadedBy = 0;  // the process that ran cuInit
};

constexpr const char* kNoDriverHint =
    "kiln runs on the GPU through the NVIDIA driver's libcuda.so.1, which this machine lacks (or "
    "$KILN_CUDA_DRIVER names a library that cannot be loaded); install the NVIDIA driver, or use "
    "--backend cpu (auto picks it when there is no GPU)";

std::string nameOf(const DriverApi& api, CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.cuGetErrorName) api.cuGetErrorName(result, &name);
  if (api.cuGetErrorString) api.cuGetErrorString(result, &text);
  // A stub library answers no names; the one result kiln explains itself is the stub's own.
  std::string s = name                                ? std::string(name)
                  : result == CUDA_ERROR_STUB_LIBRARY ? std::string("CUDA_ERROR_STUB_LIBRARY")
                                                      : "CUresult " + std::to_string(static_cast<int>(result));
  if (text) s += std::string(" (") + text + ")";
  return s;
}

Status load(LoadedDriver& d) {
  d.library = DynamicLibrary::open("the CUDA driver", candidatesOr("KILN_CUDA_DRIVER", {"libcuda.so.1", "libcuda.so"}),
                                   kNoDriverHint);
  if (!d.library) return d.library.error();
  std::string missing;
#define KILN_CUDA_LOOKUP(fn)                                                                     \
  d.api.fn = reinterpret_cast<decltype(d.api.fn)>((*d.library).symbol(KILN_CUDA_SYMBOL_NAME(fn))); \
  if (!d.api.fn) missing += std::string(missing.empty() ? "" : ", ") + KILN_CUDA_SYMBOL_NAME(fn);
  KILN_CUDA_DRIVER_FUNCTIONS(KILN_CUDA_LOOKUP)
#undef KILN_CUDA_LOOKUP
  if (!missing.empty())
    return Error("the CUDA driver " + (*d.library).path() + " lacks " + missing +
                 "; kiln needs a driver for CUDA 12 or newer (update the NVIDIA driver)");
  d.api.simulated = (*d.library).symbol("gpusimIsSimulator") != nullptr;
  d.api.gpusimLastReport = reinterpret_cast<const char* (*)()>((*d.library).symbol("gpusimLastReport"));
#define KILN_GPUSIM_LOOKUP(fn) d.api.fn = reinterpret_cast<decltype(d.api.fn)>((*d.library).symbol(#fn));
  KILN_GPUSIM_LOOKUP(gpusimKernelStatsCount)
  KILN_GPUSIM_LOOKUP(gpusimKernelStatsGet)
  KILN_GPUSIM_LOOKUP(gpusimKernelStatsReset)
#undef KILN_GPUSIM_LOOKUP
  if (d.api.cuDriverGetVersion(&d.api.version) != CUDA_SUCCESS) d.api.version = 0;
  CUresult init = d.api.cuInit(0);
  if (init != CUDA_SUCCESS) {
    std::string why = nameOf(d.api, init);
    if (init == CUDA_ERROR_NO_DEVICE)
      return Error("the CUDA driver found no GPU (cuInit: " + why + "); use --backend cpu");
    if (init == CUDA_ERROR_STUB_LIBRARY)
      return Error("libcuda at " + (*d.library).path() +
                   " is the toolkit's link stub, not a driver (cuInit: " + why + "); " + kNoDriverHint);
    return Error("the CUDA driver did not start (cuInit: " + why + "); use --backend cpu");
  }
  int devices = 0;
  if (CUresult r = d.api.cuDeviceGetCount(&devices); r != CUDA_SUCCESS || devices == 0)
    return Error("the CUDA driver found no GPU (cuDeviceGetCount: " +
                 (r == CUDA_SUCCESS ? std::string("0 devices") : nameOf(d.api, r)) + "); use --backend cpu");
  return {};
}

// Never destroyed: libcuda stays loaded until the process ends, so nothing that runs at exit
// (a Device, a cached allocation) can call into an unloaded driver.
LoadedDriver& loaded() {
  static LoadedDriver& d = *new LoadedDriver;
  static std::once_flag once;
  std::call_once(once, [] {
    d.loadedBy = getpid();
    d.status = load(d);
  });
  return d;
}

}  // namespace

Expected<const DriverApi*> driver() {
  LoadedDriver& d = loaded();
  if (!d.status) return d.status.error();
  // NVIDIA's driver refuses every call in a child forked after cuInit (CUDA_ERROR_NOT_INITIALIZED,
  // which names no cause): say what happened instead.
  if (pid_t self = getpid(); self != d.loadedBy)
    return Error("CUDA cannot be used in this process (" + std::to_string(self) + "): it was forked from process " +
                 std::to_string(d.loadedBy) + " after that one started the CUDA driver; fork before the parent first " +
                 "uses the GPU, or start workers with exec (a fresh process)");
  return &d.api;
}

const DriverApi& api() {
  LoadedDriver& d = loaded();
  KILN_INTERNAL_CHECK(d.status.ok(), "cuda::api() used before driver() succeeded");
  return d.api;
}

std::string resultName(CUresult result) { return nameOf(loaded().api, result); }

Status check(CUresult result, std::string_view call, std::string_view what) {
  if (result == CUDA_SUCCESS) return {};
  std::string message(call);
  message += " failed";
  if (!what.empty()) message += " for " + std::string(what);
  message += ": " + resultName(result);
  // The simulator says which kernel, PTX line, thread and address; real drivers say no more.
  if (const DriverApi& a = loaded().api; a.gpusimLastReport) {
    std::string report = a.gpusimLastReport();
    if (!report.empty()) message += "\n" + report;
  }
  return Error(message);
}

}  // namespace kiln::cuda
