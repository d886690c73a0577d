// cuLaunchKernel: the launch configuration checked as the real driver checks it, the parameter
// buffer packed by the .entry's layout, and a run of the interpreter (gpusim::launch) queued on the
// stream. A launch fault becomes the context's sticky error when the work runs (streams.cpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "gpusim/driver/state.h"

namespace gpusim::driver {

namespace {

constexpr uint64_t kDefaultBudget = 1'000'000'000;  // warp instructions per launch
constexpr uint32_t kMaxGridX = 2147483647, kMaxGridYZ = 65535;
constexpr uint32_t kMaxBlockXY = 1024, kMaxBlockZ = 64;

std::string dims(Dim3 d) {
  return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + ")";
}

// "a .f32 at 0, x .u64 at 8": the kernel's parameters as the buffer lays them out.
std::string paramLayout(const ptx::Function& fn) {
  std::string s;
  for (const ptx::Param& p : fn.params)
    s += (s.empty() ? "" : ", ") + p.name + " " + ptx::typeName(p.type) + (p.size > ptx::typeBytes(p.type) ? "[]" : "") +
         " at " + std::to_string(p.offset);
  return s.empty() ? "none" : s;
}

// The limits every launch must meet: nonzero dimensions within the device's, a block no larger
// than the kernel's limit, and the shared memory the kernel may use (48 KB unless opted in).
CUresult checkConfiguration(const CUfunc_st& f, Dim3 grid, Dim3 block, uint32_t dynamicShared) {
  const std::string call = "cuLaunchKernel of " + f.name();
  if (grid.count() == 0 || block.count() == 0)
    return fail(CUDA_ERROR_INVALID_VALUE, call + ": grid " + dims(grid) + " and block " + dims(block) +
                                              " must have every dimension at least 1");
  if (grid.x > kMaxGridX || grid.y > kMaxGridYZ || grid.z > kMaxGridYZ)
    return fail(CUDA_ERROR_INVALID_VALUE, call + ": grid " + dims(grid) + " exceeds the device's 2147483647 x 65535 x 65535");
  if (block.x > kMaxBlockXY || block.y > kMaxBlockXY || block.z > kMaxBlockZ ||
      block.count() > kH100.maxThreadsPerBlock)
    return fail(CUDA_ERROR_INVALID_VALUE, call + ": block " + dims(block) + " has " + std::to_string(block.count()) +
                                              " threads; a block may have at most " +
                                              std::to_string(kH100.maxThreadsPerBlock) + " (1024 x 1024 x 64 per dimension)");
  const ptx::Function& fn = f.ptx();
  if (fn.reqntid[0] && (block.x != fn.reqntid[0] || block.y != std::max(fn.reqntid[1], 1u) ||
                        block.z != std::max(fn.reqntid[2], 1u)))
    return fail(CUDA_ERROR_INVALID_VALUE, call + ": block " + dims(block) + " differs from the kernel's .reqntid " +
                                              dims({fn.reqntid[0], std::max(fn.reqntid[1], 1u), std::max(fn.reqntid[2], 1u)}));
  if (int limit = maxThreadsPerBlock(f); block.count() > static_cast<uint64_t>(limit))
    return fail(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                call + ": block " + dims(block) + " has " + std::to_string(block.count()) + " threads, more than the " +
                    std::to_string(limit) + " the kernel allows (CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, from its " +
                    ".maxntid and its " + std::to_string(f.registers) + " registers per thread)");
  if (dynamicShared > static_cast<uint32_t>(f.maxDynamicShared)) {
    uint32_t staticShared = f.loaded->ptx.staticSharedBytes;
    bool optedIn = f.maxDynamicShared + staticShared != kH100.maxStaticSharedPerBlock;
    return fail(CUDA_ERROR_INVALID_VALUE,
                call + ": " + std::to_string(dynamicShared) + " bytes of dynamic shared memory (beside " +
                    std::to_string(staticShared) + " static) is more than the " + std::to_string(f.maxDynamicShared) +
                    (optedIn ? " the kernel opted in to"
                             : " a block may use without opting in (cuFuncSetAttribute with "
                               "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, up to 227 KB in all)"));
  }
  return CUDA_SUCCESS;
}

// The parameter buffer, from kernelParams (one pointer per .param, each read for the parameter's
// size) or from extra's CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE pair. Exactly one of them is given
// when the kernel has parameters.
CUresult packParams(const CUfunc_st& f, void** kernelParams, void** extra, std::vector<uint8_t>& buffer) {
  const ptx::Function& fn = f.ptx();
  const std::string call = "cuLaunchKernel of " + f.name();
  buffer.assign(fn.paramBytes, 0);
  if (kernelParams && extra)
    return fail(CUDA_ERROR_INVALID_VALUE, call + ": both kernelParams and extra are given; pass one of them");
  if (kernelParams) {
    for (size_t i = 0; i < fn.params.size(); ++i) {
      const ptx::Param& p = fn.params[i];
      if (!kernelParams[i])
        return fail(CUDA_ERROR_INVALID_VALUE, call + ": kernelParams[" + std::to_string(i) + "] (parameter " + p.name +
                                                  ") is null; each entry points at the parameter's value");
      std::memcpy(buffer.data() + p.offset, kernelParams[i], p.size);
    }
    return CUDA_SUCCESS;
  }
  if (!extra) {
    if (fn.params.empty()) return CUDA_SUCCESS;
    return fail(CUDA_ERROR_INVALID_VALUE, call + ": the kernel takes " + std::to_string(fn.params.size()) +
                                              " parameters (" + paramLayout(fn) + ") but neither kernelParams nor extra is given");
  }
  const void* pointer = nullptr;
  const size_t* size = nullptr;
  for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
      pointer = extra[i + 1];
    } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
      size = static_cast<const size_t*>(extra[i + 1]);
    } else {
      return fail(CUDA_ERROR_INVALID_VALUE, call + ": extra[" + std::to_string(i) +
                                                "] is not CU_LAUNCH_PARAM_BUFFER_POINTER, _BUFFER_SIZE or _END");
    }
  }
  if (!pointer || !size)
    return fail(CUDA_ERROR_INVALID_VALUE, call + ": extra must give both CU_LAUNCH_PARAM_BUFFER_POINTER and "
                                                 "CU_LAUNCH_PARAM_BUFFER_SIZE (a size_t*) before CU_LAUNCH_PARAM_END");
  if (*size != fn.paramBytes)
    return fail(CUDA_ERROR_INVALID_VALUE, call + ": extra's parameter buffer is " + std::to_string(*size) +
                                              " bytes; the kernel's parameters take " + std::to_string(fn.paramBytes) +
                                              " (" + paramLayout(fn) + ")");
  std::memcpy(buffer.data(), pointer, *size);
  return CUDA_SUCCESS;
}

LaunchOptions readLaunchOptions() {
  LaunchOptions o;
  o.instructionBudget = kDefaultBudget;
  if (const char* env = std::getenv("KILN_GPUSIM_BUDGET"); env && *env) {
    char* end = nullptr;
    double v = std::strtod(env, &end);  // "1e9" as well as "1000000000"
    if (*end != '\0' || !(v >= 0) || v > 1e18 || v != std::floor(v))
      std::fprintf(stderr, "gpusim: KILN_GPUSIM_BUDGET='%s' is not a whole number of warp instructions; using 1e9\n", env);
    else
      o.instructionBudget = static_cast<uint64_t>(v);
  }
  if (const char* env = std::getenv("KILN_GPUSIM_CHECKS"); env && *env) {
    if (std::strcmp(env, "memcheck") == 0)
      o.initcheck = o.racecheck = false;
    else if (std::strcmp(env, "all") != 0)
      std::fprintf(stderr, "gpusim: KILN_GPUSIM_CHECKS='%s' is neither 'all' nor 'memcheck'; using all\n", env);
  }
  return o;
}

}  // namespace

const LaunchOptions& launchOptions() {
  static const LaunchOptions options = readLaunchOptions();
  return options;
}

}  // namespace gpusim::driver

using namespace gpusim::driver;

GPUSIM_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                                      unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                                      unsigned int sharedMemBytes, CUstream hStream, void** kernelParams, void** extra) {
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  CUctx_st* ctx = nullptr;
  if (CUresult r = enterStream(hStream, ctx)) return r;
  if (f->module->ctx != ctx)
    return fail(CUDA_ERROR_INVALID_HANDLE, "cuLaunchKernel of " + f->name() + ": the kernel's module was loaded in another context");
  gpusim::LaunchRequest request;
  request.module = f->loaded.get();
  request.function = f->index;
  request.grid = {gridDimX, gridDimY, gridDimZ};
  request.block = {blockDimX, blockDimY, blockDimZ};
  request.dynamicSharedBytes = sharedMemBytes;
  if (CUresult r = checkConfiguration(*f, request.grid, request.block, sharedMemBytes)) return r;
  if (CUresult r = packParams(*f, kernelParams, extra, request.params)) return r;
  // The work holds the decoded module: cuModuleUnload right after the launch (or before a graph
  // replays it) leaves it alive until the last launch is done.
  return submit(hStream, [loaded = f->loaded, request = std::move(request), memory = ctx->device->memory.get()] {
    gpusim::LaunchResult result = gpusim::launch(request, *memory, launchOptions());
    if (result.fault == gpusim::Fault::None) {
      recordLaunch(result.stats);
      return CUDA_SUCCESS;
    }
    CUresult r = resultOf(result.fault);
    const char* name = nullptr;
    cuGetErrorName(r, &name);
    return fail(r, std::string(name ? name : "launch failure") + " in kernel " + result.stats.name + ": " + result.report);
  }, "cuLaunchKernel");
}
