// The simulated driver's state, shared by the files of gpusim/driver/: devices, contexts, streams,
// events, modules and graphs. The handles the application holds are pointers to these structs
// (cuda.h declares `typedef struct CUstream_st* CUstream` and leaves the struct to the driver).
//
// Work model: every stream has a worker thread running its queue in order; an operation may first
// wait for Markers (the completion of other operations, on any stream). Events, the legacy stream's
// implicit synchronisation and cuStreamWaitEvent are all expressed as such waits. A stream that is
// capturing sends its work to the capture's graph instead of its queue.
#pragma once

#include <cuda.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gpusim/exec/launch.h"
#include "gpusim/exec/loaded_module.h"
#include "gpusim/exec/memory.h"
#include "gpusim/exec/occupancy.h"

// Every cu* definition is an export; cuda.h has already declared it (under its versioned name), so
// a definition whose signature differs from cuda.h's is a compile error ("conflicting declaration
// of C function").
#define GPUSIM_EXPORT extern "C" __attribute__((visibility("default")))

namespace gpusim::driver {

struct Capture;

// The completion of one queued operation.
struct Marker {
  bool done = false;
  std::chrono::steady_clock::time_point when;  // when it completed (event timing)
};
using MarkerPtr = std::shared_ptr<Marker>;
void waitFor(const MarkerPtr& m);  // returns at once for nullptr
bool isDone(const MarkerPtr& m);
void markDone(const MarkerPtr& m);

// A unit of device work: a copy, a memset, a launch, a host function. It may run several times
// (graph replay). A non-success result is a launch fault: the context becomes sticky with it.
using Work = std::function<CUresult()>;

struct Device {
  int ordinal = 0;
  std::unique_ptr<DeviceMemory> memory;
  CUctx_st* primary = nullptr;
};

// Device-wide H100 SXM facts (notes/gpusim.md section 2); the per-SM and per-block limits are
// gpusim::kH100 (exec/occupancy.h).
constexpr uint64_t kTotalMemory = 80ull << 30;  // cuDeviceTotalMem: 80 GiB
constexpr int kConstantMemory = 64 * 1024;

// Lazily started (cuInit): the devices, KILN_GPUSIM_DEVICES of them (default 1).
std::vector<Device>& devices();
bool initialised();

// The calling thread's current context (cuCtxSetCurrent), or nullptr.
CUctx_st*& currentContext();

// Reports: the last failed call's or launch fault's explanation (gpusimLastReport), also printed on
// stderr as "gpusim: <report>". Returns `result` so calls can `return fail(code, "...")`.
CUresult fail(CUresult result, const std::string& report);
void recordLaunch(const KernelStats& stats);
CUresult resultOf(Fault fault);

// Checks that a call may act on a context: the driver is initialised, there is a current context
// (or `ctx` given), and no earlier launch fault made it sticky.
CUresult enter(CUctx_st*& ctx);
// The stream's context, or the current one for the legacy stream (nullptr / CU_STREAM_LEGACY).
CUresult enterStream(CUstream& stream, CUctx_st*& ctx);

// Queues `work` on `stream` after `waits` (and the legacy stream's implicit ordering), or adds it to
// the stream's capture. `done` receives the operation's marker (nullptr when captured).
CUresult submit(CUstream stream, Work work, const char* what, std::vector<MarkerPtr> waits = {},
                MarkerPtr* done = nullptr);
// The context's legacy default stream, started on first use.
CUstream legacyStream(CUctx_st* ctx);
// Stops the stream's worker once its queue has run, and deletes it.
void destroyStream(CUstream stream);
// Blocks until everything queued on `stream` so far has run (the legacy stream: and what it waits for).
void drain(CUstream stream);
// Blocks until every stream of the context is idle.
void drainContext(CUctx_st* ctx);

// Capture rules (graphs.cpp). A "potentially unsafe" call (synchronous copies, cuMemAlloc,
// cuCtxSynchronize) is refused while this thread (or any thread, in global mode) captures: the
// capture is invalidated and the call returns CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED.
CUresult checkCaptureSafe(const char* call);
bool isCapturing(CUstream stream);
// For calls illegal on a capturing stream (cuStreamSynchronize, cuStreamQuery): invalidates the
// capture and returns CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; CUDA_SUCCESS when not capturing.
CUresult refuseDuringCapture(CUstream stream, const char* call);
// Adds a node for `work` to the capture `stream` belongs to.
CUresult captureWork(CUstream stream, Work work, const char* what);
// Events and captures: recording on a capturing stream makes the event name the capture's current
// nodes (true: done); waiting on such an event joins the waiting stream to the capture (*handled).
bool recordIntoCapture(CUevent event, CUstream stream);
CUresult waitInCapture(CUstream stream, CUevent event, bool* handled);
void forgetEvent(CUevent event);
// The capturing streams of a context, for the legacy stream's implicit-sync rule.
bool contextCapturing(CUctx_st* ctx);
void invalidateCaptures(CUctx_st* ctx);

// cuMemAllocHost memory: host ranges the device may read and write asynchronously.
bool isPinned(const void* p, size_t bytes);

}  // namespace gpusim::driver

struct CUctx_st {
  gpusim::driver::Device* device = nullptr;
  std::atomic<int> sticky{CUDA_SUCCESS};  // a launch fault: every later call returns it
  std::mutex mutex;                        // guards the members below
  int retained = 0;
  std::vector<CUstream_st*> streams;  // created streams (not the legacy one)
  CUstream_st* legacy = nullptr;      // the legacy default stream, started on first use
  std::set<uint64_t> allocations;     // cuMemAlloc'ed, freed at cuDevicePrimaryCtxReset
};

struct CUstream_st {
  CUctx_st* ctx = nullptr;
  bool legacy = false;    // the NULL stream
  bool blocking = true;   // synchronises with the legacy stream (not CU_STREAM_NON_BLOCKING)
  unsigned flags = 0;

  struct Queued {
    std::vector<gpusim::driver::MarkerPtr> waits;
    gpusim::driver::Work work;
    gpusim::driver::MarkerPtr done;
  };
  std::mutex mutex;  // guards queue, stopping, last
  std::condition_variable cv;
  std::deque<Queued> queue;
  bool stopping = false;
  gpusim::driver::MarkerPtr last;  // the most recently queued operation's marker
  std::thread worker;

  // Capture state, guarded by the capture mutex (graphs.cpp).
  gpusim::driver::Capture* capture = nullptr;
  std::vector<uint32_t> tips;  // the graph nodes the stream's next node depends on
};

struct CUevent_st {
  CUctx_st* ctx = nullptr;
  unsigned flags = 0;
  std::mutex mutex;
  gpusim::driver::MarkerPtr marker;  // the last record, nullptr if never recorded
  // Recorded during a capture: the nodes a stream waiting on it depends on (capture mutex).
  gpusim::driver::Capture* capture = nullptr;
  std::vector<uint32_t> captureNodes;
};

struct CUfunc_st {
  CUmod_st* module = nullptr;
  std::shared_ptr<gpusim::LoadedModule> loaded;  // launches hold it too: unload waits for none
  uint32_t index = 0;                            // in loaded->ptx.functions
  uint32_t registers = 0;    // per thread: the .reg declarations in 32-bit words, at most 255
  int maxDynamicShared = 0;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
  int carveout = -1;         // CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
  const gpusim::ptx::Function& ptx() const { return loaded->ptx.functions[index]; }
  const std::string& name() const { return ptx().name; }
};

struct CUmod_st {
  CUctx_st* ctx = nullptr;
  std::shared_ptr<gpusim::LoadedModule> loaded;
  std::vector<std::unique_ptr<CUfunc_st>> functions;  // the .entry kernels
};

namespace gpusim::driver {
// CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: 1024, or less by .maxntid/.reqntid and registers.
int maxThreadsPerBlock(const CUfunc_st& f);
// Resident blocks per SM (gpusim::blocksPerSm) for a block of `blockSize` threads using
// `dynamicShared` bytes beside the module's static shared memory; 0 if such a block cannot run.
int blocksPerSm(const CUfunc_st& f, int blockSize, size_t dynamicShared);
// Launch settings from KILN_GPUSIM_BUDGET and KILN_GPUSIM_CHECKS (gpusim.h), read once, at cuInit.
const LaunchOptions& launchOptions();
}  // namespace gpusim::driver
