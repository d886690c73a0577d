// The simulated CUDA driver (libkiln_gpusim.so) as kiln's runtime meets it: dlopen'ed, every entry
// point looked up under the symbol cuda.h names (cuMemAlloc -> cuMemAlloc_v2), called through
// cuda.h's own function types. Hand-written PTX kernels are loaded, launched and checked; so are
// the errors a real driver gives (bad PTX, a missing kernel, bad launch configurations and
// parameters, an illegal address and the sticky error after it), stream capture and graph replay,
// events, and the per-launch counters of gpusim.h.
#ifdef KILN_GPUSIM_LIBRARY

#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gpusim/gpusim.h"
#include "runtime/cuda/driver.h"

namespace {

#define GPUSIM_SYMBOL_NAME(fn) GPUSIM_SYMBOL_NAME_EXPANDED(fn)
#define GPUSIM_SYMBOL_NAME_EXPANDED(fn) #fn

// Every entry point kiln looks up, then those only these tests call.
#define GPUSIM_TEST_FUNCTIONS(X)                                                                         \
  KILN_CUDA_DRIVER_FUNCTIONS(X)                                                                          \
  X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuFuncSetAttribute) X(cuStreamIsCapturing) X(cuGraphGetNodes)        \
  X(cuDevicePrimaryCtxReset) X(cuLaunchHostFunc) X(gpusimIsSimulator) X(gpusimLastReport) X(gpusimKernelStatsCount)         \
  X(gpusimKernelStatsGet) X(gpusimKernelStatsReset)

struct Api {
#define GPUSIM_POINTER(fn) decltype(&::fn) fn = nullptr;
  GPUSIM_TEST_FUNCTIONS(GPUSIM_POINTER)
#undef GPUSIM_POINTER
  std::string missing;  // the symbols dlsym did not find, or dlopen's error
};

// Loaded once per process, as kiln loads its driver.
const Api& api() {
  static const Api loaded = [] {
    Api a;
    void* library = dlopen(KILN_GPUSIM_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      a.missing = std::string("dlopen: ") + dlerror();
      return a;
    }
#define GPUSIM_LOOKUP(fn)                                                                 \
  a.fn = reinterpret_cast<decltype(a.fn)>(dlsym(library, GPUSIM_SYMBOL_NAME(fn)));        \
  if (!a.fn) a.missing += std::string(a.missing.empty() ? "" : ", ") + GPUSIM_SYMBOL_NAME(fn);
    GPUSIM_TEST_FUNCTIONS(GPUSIM_LOOKUP)
#undef GPUSIM_LOOKUP
    return a;
  }();
  return loaded;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The 1-based line of the first line of `text` holding `needle` after the line holding `after`.
int lineOf(const std::string& text, const std::string& needle, const std::string& after = "") {
  size_t from = after.empty() ? 0 : text.find(after);
  size_t at = text.find(needle, from);
  if (at == std::string::npos) return 0;
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

// saxpy: y[i] = a * x[i] + y[i] for i < n. copy: y[i] = x[stride * i] for every thread, no bounds
// check. small_block: at most 128 threads (.maxntid).
const std::string kPtx = R"(.version 7.8
.target sm_80
.address_size 64

.visible .entry saxpy(
  .param .u64 saxpy_x,
  .param .u64 saxpy_y,
  .param .f32 saxpy_a,
  .param .u32 saxpy_n
)
{
  .reg .pred %p<2>;
  .reg .b32 %r<5>;
  .reg .f32 %f<5>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [saxpy_x];
  ld.param.u64 %rd2, [saxpy_y];
  ld.param.f32 %f1, [saxpy_a];
  ld.param.u32 %r2, [saxpy_n];
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r1, %tid.x;
  mad.lo.s32 %r1, %r3, %r4, %r1;
  setp.ge.u32 %p1, %r1, %r2;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd3, %rd1;
  cvta.to.global.u64 %rd4, %rd2;
  mul.wide.u32 %rd5, %r1, 4;
  add.s64 %rd6, %rd3, %rd5;
  add.s64 %rd7, %rd4, %rd5;
  ld.global.f32 %f2, [%rd6];
  ld.global.f32 %f3, [%rd7];
  fma.rn.f32 %f4, %f1, %f2, %f3;
  st.global.f32 [%rd7], %f4;
DONE:
  ret;
}

.visible .entry copy(
  .param .u64 copy_x,
  .param .u64 copy_y,
  .param .u32 copy_stride
)
{
  .reg .b32 %r<6>;
  .reg .f32 %f<2>;
  .reg .b64 %rd<7>;
  ld.param.u64 %rd1, [copy_x];
  ld.param.u64 %rd2, [copy_y];
  ld.param.u32 %r4, [copy_stride];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.s32 %r1, %r1, %r2, %r3;
  mul.lo.s32 %r5, %r1, %r4;
  mul.wide.u32 %rd3, %r5, 4;
  cvta.to.global.u64 %rd4, %rd1;
  add.s64 %rd5, %rd4, %rd3;
  ld.global.nc.f32 %f1, [%rd5];
  mul.wide.u32 %rd3, %r1, 4;
  cvta.to.global.u64 %rd6, %rd2;
  add.s64 %rd6, %rd6, %rd3;
  st.global.f32 [%rd6], %f1;
  ret;
}

.visible .entry small_block()
.maxntid 128, 1, 1
{
  ret;
}
)";

class Driver : public ::testing::Test {
 protected:
  const Api& cu = api();
  CUdevice device = 0;
  CUcontext ctx = nullptr;
  CUmodule module = nullptr;

  void SetUp() override {
    ASSERT_EQ(cu.missing, "") << "libkiln_gpusim.so lacks entry points";
    ASSERT_EQ(cu.cuInit(0), CUDA_SUCCESS);
    ASSERT_EQ(cu.cuDeviceGet(&device, 0), CUDA_SUCCESS);
    ASSERT_EQ(cu.cuDevicePrimaryCtxRetain(&ctx, device), CUDA_SUCCESS);
    ASSERT_EQ(cu.cuCtxSetCurrent(ctx), CUDA_SUCCESS);
    cu.gpusimKernelStatsReset();
    ASSERT_EQ(cu.cuModuleLoadDataEx(&module, kPtx.c_str(), 0, nullptr, nullptr), CUDA_SUCCESS) << cu.gpusimLastReport();
  }
  // The reset clears a sticky error and frees what the test allocated, so tests stay independent
  // even when the whole binary runs in one process.
  void TearDown() override {
    if (!cu.missing.empty()) return;
    if (module) cu.cuModuleUnload(module);
    cu.cuDevicePrimaryCtxReset(device);
    cu.cuDevicePrimaryCtxRelease(device);
  }

  CUfunction kernel(const char* name) {
    CUfunction f = nullptr;
    EXPECT_EQ(cu.cuModuleGetFunction(&f, module, name), CUDA_SUCCESS) << cu.gpusimLastReport();
    return f;
  }
  CUdeviceptr upload(const std::vector<float>& v) {
    CUdeviceptr p = 0;
    EXPECT_EQ(cu.cuMemAlloc(&p, v.size() * sizeof(float)), CUDA_SUCCESS);
    EXPECT_EQ(cu.cuMemcpyHtoD(p, v.data(), v.size() * sizeof(float)), CUDA_SUCCESS);
    return p;
  }
  std::vector<float> download(CUdeviceptr p, size_t n) {
    std::vector<float> v(n);
    EXPECT_EQ(cu.cuMemcpyDtoH(v.data(), p, n * sizeof(float)), CUDA_SUCCESS) << cu.gpusimLastReport();
    return v;
  }
  std::string report() { return cu.gpusimLastReport(); }
};

std::vector<float> iota(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(i);
  return v;
}

TEST_F(Driver, ExportsEveryEntryPointKilnLooksUpAndClaimsAnH100) {
  EXPECT_EQ(cu.gpusimIsSimulator(), 1);
  int version = 0;
  EXPECT_EQ(cu.cuDriverGetVersion(&version), CUDA_SUCCESS);
  EXPECT_EQ(version, CUDA_VERSION);
  int major = 0, sms = 0;
  EXPECT_EQ(cu.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device), CUDA_SUCCESS);
  EXPECT_EQ(cu.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device), CUDA_SUCCESS);
  EXPECT_EQ(major, 9);
  EXPECT_EQ(sms, 132);
  const char* name = nullptr;
  EXPECT_EQ(cu.cuGetErrorName(CUDA_ERROR_ILLEGAL_ADDRESS, &name), CUDA_SUCCESS);
  EXPECT_STREQ(name, "CUDA_ERROR_ILLEGAL_ADDRESS");
}

TEST_F(Driver, AChildForkedAfterCuInitCannotUseCuda) {
  // As NVIDIA documents for its driver: the child of a fork after cuInit gets
  // CUDA_ERROR_NOT_INITIALIZED from every call, cuInit included; the parent carries on.
  pid_t pid = fork();
  if (pid == 0) {
    int count = 0;
    CUdeviceptr p = 0;
    bool refused = cu.cuInit(0) == CUDA_ERROR_NOT_INITIALIZED &&
                   cu.cuDeviceGetCount(&count) == CUDA_ERROR_NOT_INITIALIZED &&
                   cu.cuCtxSetCurrent(ctx) == CUDA_ERROR_NOT_INITIALIZED &&
                   cu.cuMemAlloc(&p, 64) == CUDA_ERROR_NOT_INITIALIZED;
    _exit(refused ? 0 : 1);
  }
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a CUDA call succeeded in the forked child";
  int count = 0;
  EXPECT_EQ(cu.cuDeviceGetCount(&count), CUDA_SUCCESS);
  EXPECT_EQ(count, 1);
}

TEST_F(Driver, CopiesAndMemsetsRoundTrip) {
  std::vector<float> host = iota(1000, 0.5f);
  CUdeviceptr a = upload(host), b = 0;
  ASSERT_EQ(cu.cuMemAlloc(&b, host.size() * sizeof(float)), CUDA_SUCCESS);
  CUstream s = nullptr;
  ASSERT_EQ(cu.cuStreamCreate(&s, 0), CUDA_SUCCESS);
  EXPECT_EQ(cu.cuMemcpyDtoDAsync(b, a, host.size() * sizeof(float), s), CUDA_SUCCESS);
  EXPECT_EQ(cu.cuMemsetD8Async(a, 0, 8, s), CUDA_SUCCESS);
  std::vector<float> back(host.size());
  EXPECT_EQ(cu.cuMemcpyDtoHAsync(back.data(), b, back.size() * sizeof(float), s), CUDA_SUCCESS);
  EXPECT_EQ(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_EQ(back, host);
  std::vector<float> zeroed = download(a, 3);
  EXPECT_EQ(zeroed, (std::vector<float>{0, 0, 1.0f}));
  // A copy past the end is refused at the call, naming the allocation; the context lives on.
  EXPECT_EQ(cu.cuMemcpyHtoDAsync(b + 4, host.data(), host.size() * sizeof(float), s), CUDA_ERROR_INVALID_VALUE);
  EXPECT_TRUE(contains(report(), "cuMemAlloc of 4000 bytes")) << report();
  EXPECT_EQ(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  size_t free = 0, total = 0;
  EXPECT_EQ(cu.cuMemGetInfo(&free, &total), CUDA_SUCCESS);
  EXPECT_EQ(total, size_t{80} << 30);
  EXPECT_LT(free, total);
  EXPECT_EQ(cu.cuStreamDestroy(s), CUDA_SUCCESS);
  EXPECT_EQ(cu.cuMemFree(a), CUDA_SUCCESS);
  EXPECT_EQ(cu.cuMemFree(b), CUDA_SUCCESS);
}

// cuMemcpyPeerAsync (kiln's transfers between GPUs) copies between two contexts' memories and
// checks each side against its own context's allocations (one simulated GPU here: a context is
// its own peer; placement/cuda.test runs it across 2 and 3).
TEST_F(Driver, PeerCopiesCheckEachSideAgainstItsContext) {
  std::vector<float> host = iota(256, 1.5f);
  CUdeviceptr a = upload(host), b = 0;
  size_t bytes = host.size() * sizeof(float);
  ASSERT_EQ(cu.cuMemAlloc(&b, bytes), CUDA_SUCCESS);
  CUstream s = nullptr;
  ASSERT_EQ(cu.cuStreamCreate(&s, 0), CUDA_SUCCESS);
  EXPECT_EQ(cu.cuMemcpyPeerAsync(b, ctx, a, ctx, bytes, s), CUDA_SUCCESS);
  EXPECT_EQ(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_EQ(download(b, host.size()), host);
  EXPECT_EQ(cu.cuMemcpyPeerAsync(b + 8, ctx, a, ctx, bytes, s), CUDA_ERROR_INVALID_VALUE);
  EXPECT_TRUE(contains(report(), "cuMemcpyPeerAsync: the destination range")) << report();
  EXPECT_EQ(cu.cuMemcpyPeerAsync(b, nullptr, a, ctx, bytes, s), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(cu.cuStreamDestroy(s), CUDA_SUCCESS);
  EXPECT_EQ(cu.cuMemFree(a), CUDA_SUCCESS);
  EXPECT_EQ(cu.cuMemFree(b), CUDA_SUCCESS);
}

TEST_F(Driver, SaxpyRunsWithKernelParams) {
  const uint32_t n = 1000;
  std::vector<float> x = iota(n, 1.0f), y = iota(n, 0.25f);
  CUdeviceptr dx = upload(x), dy = upload(y);
  float a = 2.0f;
  uint32_t count = n;
  void* params[] = {&dx, &dy, &a, &count};
  CUfunction saxpy = kernel("saxpy");
  ASSERT_EQ(cu.cuLaunchKernel(saxpy, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS)
      << report();
  std::vector<float> got = download(dy, n);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(got[i], std::fma(a, x[i], y[i])) << i;

  int regs = 0, maxThreads = 0, blocks = 0;
  EXPECT_EQ(cu.cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, saxpy), CUDA_SUCCESS);
  // The most words live at once, 9 (at add.s64 %rd6: %f1, %rd3, %rd4, %rd5 and the new %rd6), plus
  // the 2 ptxas keeps: fewer than the 26 that .b32 %r<5>, .f32 %f<5> and .b64 %rd<8> declare.
  EXPECT_EQ(regs, 9 + 2);
  EXPECT_EQ(cu.cuFuncGetAttribute(&maxThreads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, saxpy), CUDA_SUCCESS);
  EXPECT_EQ(maxThreads, 1024);
  EXPECT_EQ(cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, saxpy, 256, 0), CUDA_SUCCESS);
  ASSERT_EQ(cu.gpusimKernelStatsCount(), 1u);
  GpusimKernelStats stats;
  ASSERT_EQ(cu.gpusimKernelStatsGet(0, &stats, sizeof stats), 0);
  EXPECT_STREQ(stats.name, "saxpy");
  EXPECT_EQ(stats.grid[0], 4u);
  EXPECT_EQ(stats.block[0], 256u);
  EXPECT_EQ(stats.registers_per_thread, static_cast<uint32_t>(regs));
  EXPECT_EQ(stats.blocks_per_sm, static_cast<uint32_t>(blocks));
  EXPECT_EQ(cu.gpusimKernelStatsGet(1, &stats, sizeof stats), -1);
}

TEST_F(Driver, ExtraParameterBufferIsCheckedAgainstTheEntry) {
  const uint32_t n = 64;
  std::vector<float> x = iota(n, 1.0f), y(n, 1.0f);
  CUdeviceptr dx = upload(x), dy = upload(y);
  struct {
    CUdeviceptr x, y;
    float a;
    uint32_t n;
  } args{dx, dy, 3.0f, n};
  static_assert(sizeof args == 24);
  size_t size = sizeof args;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &args, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  CUfunction saxpy = kernel("saxpy");
  ASSERT_EQ(cu.cuLaunchKernel(saxpy, 1, 1, 1, 64, 1, 1, 0, nullptr, nullptr, extra), CUDA_SUCCESS) << report();
  std::vector<float> got = download(dy, n);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(got[i], 3.0f * x[i] + 1.0f) << i;

  size = 32;
  EXPECT_EQ(cu.cuLaunchKernel(saxpy, 1, 1, 1, 64, 1, 1, 0, nullptr, nullptr, extra), CUDA_ERROR_INVALID_VALUE);
  EXPECT_TRUE(contains(report(), "is 32 bytes; the kernel's parameters take 24")) << report();
  EXPECT_TRUE(contains(report(), "saxpy_a .f32 at 16")) << report();
  size = 24;
  void* params[] = {&dx, &dy, &args.a, &args.n};
  EXPECT_EQ(cu.cuLaunchKernel(saxpy, 1, 1, 1, 64, 1, 1, 0, nullptr, params, extra), CUDA_ERROR_INVALID_VALUE);
  EXPECT_TRUE(contains(report(), "both kernelParams and extra")) << report();
  EXPECT_EQ(cu.cuLaunchKernel(saxpy, 1, 1, 1, 64, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_TRUE(contains(report(), "neither kernelParams nor extra")) << report();
  void* withNull[] = {&dx, nullptr, &args.a, &args.n};
  EXPECT_EQ(cu.cuLaunchKernel(saxpy, 1, 1, 1, 64, 1, 1, 0, nullptr, withNull, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_TRUE(contains(report(), "kernelParams[1] (parameter saxpy_y) is null")) << report();
  void* noSize[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &args, CU_LAUNCH_PARAM_END};
  EXPECT_EQ(cu.cuLaunchKernel(saxpy, 1, 1, 1, 64, 1, 1, 0, nullptr, nullptr, noSize), CUDA_ERROR_INVALID_VALUE);
  // A kernel without parameters needs neither; none of the refusals touched the context.
  EXPECT_EQ(cu.cuLaunchKernel(kernel("small_block"), 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cu.cuCtxSynchronize(), CUDA_SUCCESS);
}

TEST_F(Driver, LaunchConfigurationLimits) {
  CUfunction f = kernel("small_block");
  auto launch = [&](unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shared = 0) {
    return cu.cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, nullptr, nullptr, nullptr);
  };
  EXPECT_EQ(launch(1, 1, 1, 2048, 1, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_TRUE(contains(report(), "at most 1024")) << report();
  EXPECT_EQ(launch(1, 1, 1, 32, 32, 2), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(launch(1, 1, 1, 1, 1, 65), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(launch(0, 1, 1, 32, 1, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(launch(1, 1, 1, 32, 0, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(launch(1, 65536, 1, 32, 1, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(launch(1, 1, 65536, 32, 1, 1), CUDA_ERROR_INVALID_VALUE);
  // .maxntid 128: a larger block is too many resources for this kernel.
  EXPECT_EQ(launch(1, 1, 1, 256, 1, 1), CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  EXPECT_TRUE(contains(report(), "more than the 128 the kernel allows")) << report();
  int maxThreads = 0;
  EXPECT_EQ(cu.cuFuncGetAttribute(&maxThreads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f), CUDA_SUCCESS);
  EXPECT_EQ(maxThreads, 128);
  // Dynamic shared memory: 48 KB without opting in, up to 227 KB after.
  EXPECT_EQ(launch(1, 1, 1, 128, 1, 1, 48 * 1024), CUDA_SUCCESS);
  EXPECT_EQ(launch(1, 1, 1, 128, 1, 1, 48 * 1024 + 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_TRUE(contains(report(), "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES")) << report();
  EXPECT_EQ(cu.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 228 * 1024), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cu.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 100 * 1024), CUDA_SUCCESS);
  EXPECT_EQ(launch(1, 1, 1, 128, 1, 1, 100 * 1024), CUDA_SUCCESS);
  EXPECT_EQ(launch(1, 1, 1, 128, 1, 1, 100 * 1024 + 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_TRUE(contains(report(), "opted in to")) << report();
  EXPECT_EQ(launch(2147483648u, 1, 1, 32, 1, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cu.cuCtxSynchronize(), CUDA_SUCCESS);  // none of the refusals touched the context
}

TEST_F(Driver, MissingKernelNameIsNotFound) {
  CUfunction f = nullptr;
  EXPECT_EQ(cu.cuModuleGetFunction(&f, module, "saxpy_v2"), CUDA_ERROR_NOT_FOUND);
  EXPECT_TRUE(contains(report(), "no kernel named 'saxpy_v2'")) << report();
  EXPECT_TRUE(contains(report(), "saxpy, copy, small_block")) << report();
}

TEST_F(Driver, BadPtxFillsTheErrorLogWithItsLine) {
  const std::string bad = ".version 7.8\n.target sm_80\n.address_size 64\n\n.visible .entry broken()\n{\n"
                          "  .reg .b32 %r<2>;\n  frobnicate.u32 %r1, %r1;\n  ret;\n}\n";
  char log[1024] = "untouched";
  char info[1024] = "untouched";
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_INFO_LOG_BUFFER,
                            CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {log, reinterpret_cast<void*>(uintptr_t{sizeof log}), info,
                    reinterpret_cast<void*>(uintptr_t{sizeof info})};
  CUmodule m = nullptr;
  EXPECT_EQ(cu.cuModuleLoadDataEx(&m, bad.c_str(), 4, options, values), CUDA_ERROR_INVALID_PTX);
  std::string text = log;
  std::string expected = "line " + std::to_string(lineOf(bad, "frobnicate")) + ": error:";
  EXPECT_TRUE(contains(text, expected)) << text;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(values[1]), text.size() + 1);  // the bytes written, NUL included
  EXPECT_STREQ(info, "");
  // The context is fine: a good module still loads.
  CUmodule good = nullptr;
  EXPECT_EQ(cu.cuModuleLoadDataEx(&good, kPtx.c_str(), 0, nullptr, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cu.cuModuleUnload(good), CUDA_SUCCESS);
}

TEST_F(Driver, OutOfBoundsStoreIsAStickyIllegalAddress) {
  const size_t n = 256;
  CUdeviceptr x = upload(iota(2 * n, 1.0f)), y = upload(std::vector<float>(n, 0.0f));
  uint32_t stride = 1;
  void* params[] = {&x, &y, &stride};
  CUfunction empty = kernel("small_block");
  // 512 threads copy 512 floats of x into a 256-float y: warp 8's store is the first out of bounds.
  ASSERT_EQ(cu.cuLaunchKernel(kernel("copy"), 2, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cu.cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
  std::string r = report();
  EXPECT_TRUE(contains(r, "CUDA_ERROR_ILLEGAL_ADDRESS in kernel copy")) << r;
  EXPECT_TRUE(contains(r, "invalid global write of 4 bytes")) << r;
  EXPECT_TRUE(contains(r, "kernel copy, PTX line " + std::to_string(lineOf(kPtx, "st.global.f32", "entry copy("))))
      << r;
  EXPECT_TRUE(contains(r, "block (1,0,0), thread (0,0,0)")) << r;
  EXPECT_EQ(cu.gpusimKernelStatsCount(), 0u);  // a faulted launch is not counted
  // Dead context: every later call returns the same error.
  CUdeviceptr more = 0;
  EXPECT_EQ(cu.cuMemAlloc(&more, 64), CUDA_ERROR_ILLEGAL_ADDRESS);
  std::vector<float> host(n);
  EXPECT_EQ(cu.cuMemcpyDtoH(host.data(), y, n * sizeof(float)), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(cu.cuLaunchKernel(empty, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_ERROR_ILLEGAL_ADDRESS);
  CUfunction f = nullptr;
  EXPECT_EQ(cu.cuModuleGetFunction(&f, module, "copy"), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(cu.cuStreamSynchronize(nullptr), CUDA_ERROR_ILLEGAL_ADDRESS);
  // A primary context reset brings the device back.
  EXPECT_EQ(cu.cuDevicePrimaryCtxReset(device), CUDA_SUCCESS);
  EXPECT_EQ(cu.cuMemAlloc(&more, 64), CUDA_SUCCESS);
}

TEST_F(Driver, CapturedLaunchReplaysAsAGraph) {
  const uint32_t n = 300;
  std::vector<float> x = iota(n, 1.0f), y(n, 1.0f);
  CUdeviceptr dx = upload(x), dy = upload(y);
  float a = 0.5f;
  uint32_t count = n;
  void* params[] = {&dx, &dy, &a, &count};
  CUstream s = nullptr;
  ASSERT_EQ(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cu.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  EXPECT_EQ(cu.cuStreamIsCapturing(s, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  ASSERT_EQ(cu.cuLaunchKernel(kernel("saxpy"), 2, 1, 1, 256, 1, 1, 0, s, params, nullptr), CUDA_SUCCESS);
  a = 100.0f;  // the parameters were taken at capture
  CUgraph graph = nullptr;
  ASSERT_EQ(cu.cuStreamEndCapture(s, &graph), CUDA_SUCCESS);
  size_t nodes = 0;
  EXPECT_EQ(cu.cuGraphGetNodes(graph, nullptr, &nodes), CUDA_SUCCESS);
  EXPECT_EQ(nodes, 1u);
  EXPECT_EQ(download(dy, n), y);  // captured, not run
  CUgraphExec exec = nullptr;
  ASSERT_EQ(cu.cuGraphInstantiate(&exec, graph, 0), CUDA_SUCCESS);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(cu.cuGraphLaunch(exec, s), CUDA_SUCCESS);
  EXPECT_EQ(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  std::vector<float> got = download(dy, n);
  for (uint32_t i = 0; i < n; ++i) {
    float expected = y[i];
    for (int k = 0; k < 3; ++k) expected = std::fma(0.5f, x[i], expected);
    ASSERT_EQ(got[i], expected) << i;
  }
  EXPECT_EQ(cu.gpusimKernelStatsCount(), 3u);
  EXPECT_EQ(cu.cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(cu.cuGraphDestroy(graph), CUDA_SUCCESS);
  EXPECT_EQ(cu.cuStreamDestroy(s), CUDA_SUCCESS);
}

TEST_F(Driver, SynchronousCopyInvalidatesACapture) {
  CUdeviceptr p = upload(std::vector<float>(16, 1.0f));
  CUstream s = nullptr;
  ASSERT_EQ(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cu.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  std::vector<float> host(16);
  EXPECT_EQ(cu.cuMemcpyDtoH(host.data(), p, 64), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(cu.cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CUgraph graph = nullptr;
  EXPECT_EQ(cu.cuStreamEndCapture(s, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(graph, nullptr);
  EXPECT_EQ(cu.cuStreamDestroy(s), CUDA_SUCCESS);
}

TEST_F(Driver, EventsTimeALaunch) {
  const uint32_t n = 4096;
  CUdeviceptr x = upload(iota(n, 1.0f)), y = upload(std::vector<float>(n, 0.0f));
  uint32_t stride = 1;
  void* params[] = {&x, &y, &stride};
  CUstream s = nullptr;
  ASSERT_EQ(cu.cuStreamCreate(&s, 0), CUDA_SUCCESS);
  CUevent start = nullptr, end = nullptr, untimed = nullptr;
  ASSERT_EQ(cu.cuEventCreate(&start, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  ASSERT_EQ(cu.cuEventCreate(&end, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  ASSERT_EQ(cu.cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  float ms = -1;
  EXPECT_EQ(cu.cuEventElapsedTime(&ms, start, end), CUDA_ERROR_INVALID_HANDLE);  // never recorded
  ASSERT_EQ(cu.cuEventRecord(start, s), CUDA_SUCCESS);
  ASSERT_EQ(cu.cuLaunchKernel(kernel("copy"), n / 256, 1, 1, 256, 1, 1, 0, s, params, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cu.cuEventRecord(end, s), CUDA_SUCCESS);
  ASSERT_EQ(cu.cuEventRecord(untimed, s), CUDA_SUCCESS);
  ASSERT_EQ(cu.cuEventSynchronize(end), CUDA_SUCCESS);
  EXPECT_EQ(cu.cuEventElapsedTime(&ms, start, end), CUDA_SUCCESS);
  EXPECT_GE(ms, 0.0f);
  EXPECT_EQ(cu.cuEventElapsedTime(&ms, start, untimed), CUDA_ERROR_INVALID_HANDLE);
  // Another stream waits for the event: its copy sees the kernel's output.
  CUstream other = nullptr;
  ASSERT_EQ(cu.cuStreamCreate(&other, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_EQ(cu.cuStreamWaitEvent(other, end, 0), CUDA_SUCCESS);
  std::vector<float> got(n);
  EXPECT_EQ(cu.cuMemcpyDtoHAsync(got.data(), y, n * sizeof(float), other), CUDA_SUCCESS);
  EXPECT_EQ(cu.cuStreamSynchronize(other), CUDA_SUCCESS);
  EXPECT_EQ(got, iota(n, 1.0f));
  for (CUevent e : {start, end, untimed}) EXPECT_EQ(cu.cuEventDestroy(e), CUDA_SUCCESS);
  EXPECT_EQ(cu.cuStreamDestroy(other), CUDA_SUCCESS);
  EXPECT_EQ(cu.cuStreamDestroy(s), CUDA_SUCCESS);
}

TEST_F(Driver, KernelStatsCountSectorsPerRequest) {
  const uint32_t n = 4096;
  CUdeviceptr x = upload(iota(2 * n, 1.0f)), y = upload(std::vector<float>(n, 0.0f));
  uint32_t coalesced = 1, strided = 2;
  void* params[] = {&x, &y, &coalesced};
  void* stridedParams[] = {&x, &y, &strided};
  CUfunction copy = kernel("copy");
  ASSERT_EQ(cu.cuLaunchKernel(copy, n / 256, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cu.cuLaunchKernel(copy, n / 256, 1, 1, 256, 1, 1, 0, nullptr, stridedParams, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cu.cuCtxSynchronize(), CUDA_SUCCESS) << report();
  ASSERT_EQ(cu.gpusimKernelStatsCount(), 2u);
  GpusimKernelStats s;
  ASSERT_EQ(cu.gpusimKernelStatsGet(0, &s, sizeof s), 0);
  EXPECT_STREQ(s.name, "copy");
  const uint64_t warps = n / 32;
  EXPECT_EQ(s.global_load_requests, warps);
  EXPECT_EQ(s.global_load_sectors, warps * 4);  // 32 lanes x 4 bytes: 4 sectors
  EXPECT_EQ(s.global_load_bytes, uint64_t{n} * 4);
  EXPECT_EQ(s.global_store_requests, warps);
  EXPECT_EQ(s.global_store_sectors, warps * 4);
  EXPECT_EQ(s.sector_efficiency, 1.0);
  EXPECT_EQ(s.atomic_requests, 0u);
  EXPECT_EQ(s.shared_requests, 0u);
  EXPECT_GT(s.warp_instructions, 0u);
  EXPECT_EQ(s.thread_instructions, s.warp_instructions * 32);  // no divergence, full warps
  int blocks = 0;
  EXPECT_EQ(cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, copy, 256, 0), CUDA_SUCCESS);
  EXPECT_EQ(s.blocks_per_sm, static_cast<uint32_t>(blocks));
  EXPECT_EQ(blocks, 8);  // 8 warps a block: the 64-warp limit, before the registers' 10 (22 a thread)
  EXPECT_DOUBLE_EQ(s.theoretical_occupancy, 1.0);
  EXPECT_DOUBLE_EQ(s.sm_coverage, 16.0 / 132.0);
  // x[2 i]: each load request touches 8 sectors for 128 bytes; the stores stay ideal.
  ASSERT_EQ(cu.gpusimKernelStatsGet(1, &s, sizeof s), 0);
  EXPECT_STREQ(s.name, "copy");
  EXPECT_EQ(s.global_load_sectors, warps * 8);
  EXPECT_DOUBLE_EQ(s.sector_efficiency, 2.0 * n * 4 / (32.0 * (warps * 8 + warps * 4)));
  cu.gpusimKernelStatsReset();
  EXPECT_EQ(cu.gpusimKernelStatsCount(), 0u);
}

// The queued launch holds the decoded module: unloading right after launching is allowed.
TEST_F(Driver, UnloadRightAfterLaunch) {
  const uint32_t n = 512;
  CUdeviceptr x = upload(iota(n, 2.0f)), y = upload(std::vector<float>(n, 0.0f));
  uint32_t stride = 1;
  void* params[] = {&x, &y, &stride};
  CUstream s = nullptr;
  ASSERT_EQ(cu.cuStreamCreate(&s, 0), CUDA_SUCCESS);
  // The stream is held up until the module is gone, so the kernel surely runs after the unload.
  std::atomic<bool> unloaded{false};
  ASSERT_EQ(cu.cuLaunchHostFunc(s, [](void* flag) {
    while (!static_cast<std::atomic<bool>*>(flag)->load()) std::this_thread::yield();
  }, &unloaded), CUDA_SUCCESS);
  ASSERT_EQ(cu.cuLaunchKernel(kernel("copy"), n / 128, 1, 1, 128, 1, 1, 0, s, params, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cu.cuModuleUnload(module), CUDA_SUCCESS);
  module = nullptr;
  unloaded = true;
  EXPECT_EQ(cu.cuStreamSynchronize(s), CUDA_SUCCESS) << report();
  EXPECT_EQ(download(y, n), iota(n, 2.0f));
  EXPECT_EQ(cu.cuStreamDestroy(s), CUDA_SUCCESS);
}

}  // namespace

#endif  // KILN_GPUSIM_LIBRARY
