// libkiln_gpusim_nccl.so: NCCL 2's C ABI (nccl.h) over the GPU simulator: communicators from a
// unique id (ncclGetUniqueId, ncclCommInitRank, ncclCommInitAll), all-reduce (sum, prod, max,
// min, avg) and broadcast of 8-, 32- and 64-bit integers and f16/bf16/f32/f64, group calls,
// asynchronous errors, abort and destroy.
//
// Transport: a POSIX shared-memory segment named by the unique id, which every rank maps, in one
// process (ranks on the simulator's devices, KILN_GPUSIM_DEVICES) or in many (one rank per
// process under mpirun, the id carried by the caller as NCCL's is). A collective is host work
// queued on the caller's stream (gpusimLaunchHostWork), so it runs concurrently with other streams
// and in stream order: each rank copies a chunk of its buffer into its slot of the segment, all
// wait at a barrier, each reduces the slots in rank order (so every rank gets the same bits),
// and all wait again before the next chunk. A rank waiting at a barrier watches for an abort
// (ncclCommAbort on any rank ends the wait on every rank) and for peers that exited (their
// process is gone): then the collective leaves its output as it was and the communicator's
// asynchronous error names the rank (ncclCommGetAsyncError, ncclGetLastError). Like NCCL, it has
// no timeout of its own: the caller polls and aborts.
#include <cuda.h>
#include <fcntl.h>
#include <nccl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gpusim/standins/standin_support.h"


namespace {

using gpusim::standins::Element;

constexpr int kMaxRanks = 64;
constexpr size_t kChunkBytes = size_t{1} << 20;  // each rank's slot: a collective moves this much per round
constexpr uint32_t kMagic = 0x6B6E636C;            // "kncl"

// The segment's header; the ranks' slots follow it.
struct Shared {
  std::atomic<uint32_t> magic;
  std::atomic<int32_t> joined;       // ranks that attached
  std::atomic<uint32_t> arrived;     // at the current barrier
  std::atomic<uint32_t> generation;  // barriers completed
  std::atomic<int32_t> abortedBy;    // 1 + the rank that aborted, or 0
  std::atomic<int32_t> pids[kMaxRanks];
  std::atomic<uint32_t> reached[kMaxRanks];  // barriers each rank has reached
};

size_t segmentBytes(int ranks) { return (sizeof(Shared) + 255) / 256 * 256 + static_cast<size_t>(ranks) * kChunkBytes; }

// One rank's view of the communicator. Queued collectives hold it too, so an abort or destroy
// while they run frees it only when they are done.
struct State {
  int rank = 0, ranks = 0, device = -1;
  std::string name;  // the segment's
  Shared* shared = nullptr;
  size_t bytes = 0;
  std::atomic<bool> aborted{false};
  std::atomic<int> asyncError{ncclSuccess};
  uint32_t barriersReached = 0;  // by this rank
  std::mutex mutex;
  std::string lastError;
  std::string waitingFor;  // while a barrier waits long: the ranks that have not reached it

  ~State() {
    if (shared) munmap(shared, bytes);
  }
  uint8_t* slot(int r) const {
    return reinterpret_cast<uint8_t*>(shared) + (sizeof(Shared) + 255) / 256 * 256 + static_cast<size_t>(r) * kChunkBytes;
  }
  void fail(ncclResult_t result, const std::string& why) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (lastError.empty()) lastError = why;
    }
    int expected = ncclSuccess;
    asyncError.compare_exchange_strong(expected, result);
  }
};

}  // namespace

struct ncclComm {
  std::shared_ptr<State> state;
};

namespace {

thread_local std::string lastCallError;  // ncclGetLastError(nullptr): the calling thread's

ncclResult_t refuse(ncclResult_t result, const std::string& why) {
  lastCallError = why;
  gpusimReport(("NCCL stand-in: " + why).c_str());
  return result;
}

// Waits until every rank reached this barrier. False when the communicator was aborted (here or on
// any rank) or a peer's process is gone; the state's asynchronous error then says which.
bool barrier(State& s) {
  Shared& sh = *s.shared;
  sh.reached[s.rank].store(++s.barriersReached);
  uint32_t generation = sh.generation.load();
  if (sh.arrived.fetch_add(1) + 1 == static_cast<uint32_t>(s.ranks)) {
    sh.arrived.store(0);
    sh.generation.fetch_add(1);
    return true;
  }
  auto sleep = std::chrono::microseconds(5);
  auto start = std::chrono::steady_clock::now(), lastPeerCheck = start;
  while (sh.generation.load() == generation) {
    if (s.aborted.load()) return false;
    if (int by = sh.abortedBy.load()) {
      s.fail(ncclRemoteError, "rank " + std::to_string(by - 1) + " aborted the communicator");
      return false;
    }
    auto now = std::chrono::steady_clock::now();
    if (now - lastPeerCheck > std::chrono::milliseconds(20)) {
      lastPeerCheck = now;
      if (now - start > std::chrono::milliseconds(500)) {  // name who is late, for ncclGetLastError
        std::string late;
        for (int r = 0; r < s.ranks; ++r)
          if (sh.reached[r].load() < s.barriersReached) late += (late.empty() ? "" : ", ") + std::to_string(r);
        std::lock_guard<std::mutex> lock(s.mutex);
        s.waitingFor = "rank " + std::to_string(s.rank) + " waits for rank(s) " + late + " to reach the collective";
      }
      for (int r = 0; r < s.ranks; ++r) {
        int pid = sh.pids[r].load();
        if (pid > 0 && kill(pid, 0) != 0 && errno == ESRCH) {
          s.fail(ncclRemoteError, "rank " + std::to_string(r) + " (process " + std::to_string(pid) + ") has exited");
          return false;
        }
      }
    }
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, std::chrono::microseconds(200));
  }
  std::lock_guard<std::mutex> lock(s.mutex);
  s.waitingFor.clear();
  return true;
}

Element floatElement(ncclDataType_t t) {
  switch (t) {
    case ncclFloat16: return Element::F16;
    case ncclBfloat16: return Element::BF16;
    case ncclFloat32: return Element::F32;
    case ncclFloat64: return Element::F64;
    default: return Element::None;
  }
}

size_t typeBytes(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8: return 1;
    case ncclFloat16:
    case ncclBfloat16: return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64: return 8;
    default: return 0;
  }
}

// Integers as the wrapping arithmetic of their type, computed in 64 bits.
int64_t loadInt(const uint8_t* p, ncclDataType_t t) {
  switch (t) {
    case ncclInt8: return static_cast<int8_t>(*p);
    case ncclUint8: return *p;
    case ncclInt32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case ncclUint32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    default: { int64_t v; std::memcpy(&v, p, 8); return v; }
  }
}
void storeInt(uint8_t* p, ncclDataType_t t, int64_t v) { std::memcpy(p, &v, typeBytes(t)); }  // little-endian

template <class T>
T combine(ncclRedOp_t op, T a, T b) {
  switch (op) {
    case ncclProd: return a * b;
    case ncclMax: return std::isnan(static_cast<double>(a)) ? a : (b > a || std::isnan(static_cast<double>(b)) ? b : a);
    case ncclMin: return std::isnan(static_cast<double>(a)) ? a : (b < a || std::isnan(static_cast<double>(b)) ? b : a);
    default: return a + b;  // sum, and avg before its division
  }
}

// Element i of the chunk reduced over the ranks' slots, in rank order, into `out`.
void reduceElement(const State& s, size_t offset, ncclDataType_t type, ncclRedOp_t op, uint8_t* out) {
  Element e = floatElement(type);
  if (e != Element::None) {
    double v = gpusim::standins::load(s.slot(0) + offset, e);
    for (int r = 1; r < s.ranks; ++r) v = combine(op, v, gpusim::standins::load(s.slot(r) + offset, e));
    if (op == ncclAvg) v /= s.ranks;
    gpusim::standins::store(out, e, v);
    return;
  }
  bool isUnsigned = type == ncclUint8 || type == ncclUint32 || type == ncclUint64;
  if (isUnsigned) {
    uint64_t v = static_cast<uint64_t>(loadInt(s.slot(0) + offset, type));
    for (int r = 1; r < s.ranks; ++r) v = combine<uint64_t>(op, v, static_cast<uint64_t>(loadInt(s.slot(r) + offset, type)));
    if (op == ncclAvg) v /= static_cast<uint64_t>(s.ranks);
    storeInt(out, type, static_cast<int64_t>(v));
    return;
  }
  int64_t v = loadInt(s.slot(0) + offset, type);
  for (int r = 1; r < s.ranks; ++r) {
    // Wrapping, as the type's own arithmetic wraps.
    int64_t x = loadInt(s.slot(r) + offset, type);
    v = op == ncclMax || op == ncclMin ? combine(op, v, x)
        : op == ncclProd               ? static_cast<int64_t>(static_cast<uint64_t>(v) * static_cast<uint64_t>(x))
                                       : static_cast<int64_t>(static_cast<uint64_t>(v) + static_cast<uint64_t>(x));
  }
  if (op == ncclAvg) v /= s.ranks;
  storeInt(out, type, v);
}

struct Collective {
  std::shared_ptr<State> state;
  bool broadcast = false;
  int root = 0;
  uint64_t send = 0, recv = 0;
  size_t count = 0;
  ncclDataType_t type = ncclFloat32;
  ncclRedOp_t op = ncclSum;
};

int runCollective(int device, void* user) {
  const Collective& c = *static_cast<const Collective*>(user);
  State& s = *c.state;
  size_t size = typeBytes(c.type), total = c.count * size;
  if (total == 0 || s.aborted.load()) return 0;
  bool sends = !c.broadcast || s.rank == c.root;
  const uint8_t* send = sends ? gpusim::standins::deviceBytes(device, c.send, total, GPUSIM_READ, "the collective's send buffer")
                              : nullptr;
  uint8_t* recv = gpusim::standins::deviceBytes(device, c.recv, total, GPUSIM_WRITE, "the collective's receive buffer");
  if ((sends && !send) || !recv) {
    s.fail(ncclInvalidArgument, "rank " + std::to_string(s.rank) + ": a buffer is not inside one live allocation");
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  }
  // Each round moves whole elements: the chunk is rounded down to the element size.
  size_t chunk = kChunkBytes / size * size;
  std::vector<uint8_t> staged;
  for (size_t at = 0; at < total; at += chunk) {
    size_t n = std::min(chunk, total - at);
    if (sends) std::memcpy(s.slot(s.rank), send + at, n);
    if (!barrier(s)) return 0;
    if (c.broadcast) {
      std::memcpy(recv + at, s.slot(c.root), n);
    } else {
      // In place (send == recv) is safe: the slots hold the inputs, the output goes to recv.
      for (size_t i = 0; i < n; i += size) reduceElement(s, i, c.type, c.op, recv + at + i);
    }
    if (!barrier(s)) return 0;
  }
  return 0;
}

ncclResult_t enqueue(std::unique_ptr<Collective> c, cudaStream_t stream, const char* name) {
  int r = gpusimLaunchHostWork(stream, name, runCollective, c.release(),
                               [](void* u) { delete static_cast<Collective*>(u); });
  return r == 0 ? ncclSuccess : refuse(ncclUnhandledCudaError, std::string(name) + ": the stream refused the work");
}

ncclResult_t checkCall(ncclComm_t comm, ncclDataType_t type, const void* recv, size_t count, const char* name) {
  if (!comm || !comm->state) return refuse(ncclInvalidArgument, std::string(name) + " without a communicator");
  State& s = *comm->state;
  if (s.aborted.load()) return refuse(ncclInvalidUsage, std::string(name) + " on an aborted communicator");
  if (typeBytes(type) == 0) return refuse(ncclInvalidArgument, std::string(name) + " of data type " + std::to_string(type));
  if (count && !gpusimDeviceMemory(s.device, reinterpret_cast<uint64_t>(recv), count * typeBytes(type), 0, name))
    return refuse(ncclInvalidArgument, std::string(name) + ": the buffer is not device memory of that size");
  return ncclSuccess;
}

// Attaches rank `rank` of `ranks` on `device` to the segment `id` names (creating it if first).
ncclResult_t attach(const ncclUniqueId& id, int ranks, int rank, int device, std::shared_ptr<State>& out) {
  if (ranks < 1 || ranks > kMaxRanks || rank < 0 || rank >= ranks)
    return refuse(ncclInvalidArgument, "rank " + std::to_string(rank) + " of " + std::to_string(ranks) +
                                           " (the stand-in takes 1 to " + std::to_string(kMaxRanks) + " ranks)");
  if (device < 0) return refuse(ncclInvalidUsage, "ncclCommInitRank without a current CUDA context");
  std::string name(id.internal, strnlen(id.internal, sizeof id.internal));
  if (name.rfind("/kiln-nccl-", 0) != 0) return refuse(ncclInvalidArgument, "a unique id not from ncclGetUniqueId");
  auto s = std::make_shared<State>();
  s->rank = rank, s->ranks = ranks, s->device = device, s->name = name, s->bytes = segmentBytes(ranks);
  int fd = shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
  if (fd < 0) return refuse(ncclSystemError, "shm_open " + name + ": " + std::strerror(errno));
  struct stat st {};
  bool sized = fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) >= s->bytes;
  if (!sized && ftruncate(fd, static_cast<off_t>(s->bytes)) != 0) {
    close(fd);
    return refuse(ncclSystemError, "ftruncate " + name + ": " + std::strerror(errno));
  }
  void* p = mmap(nullptr, s->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return refuse(ncclSystemError, "mmap " + name + ": " + std::strerror(errno));
  s->shared = static_cast<Shared*>(p);
  s->shared->pids[rank].store(getpid());
  s->shared->joined.fetch_add(1);
  out = std::move(s);
  return ncclSuccess;
}

// Waits for every rank to attach, then removes the segment's name (the mappings stay).
ncclResult_t awaitRanks(State& s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (s.shared->joined.load() < s.ranks) {
    if (std::chrono::steady_clock::now() > deadline)
      return refuse(ncclSystemError, "rank " + std::to_string(s.rank) + ": only " + std::to_string(s.shared->joined.load()) +
                                         " of " + std::to_string(s.ranks) + " ranks joined within 120 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  shm_unlink(s.name.c_str());  // every rank tries; the first succeeds
  return ncclSuccess;
}

}  // namespace

STANDIN_EXPORT ncclResult_t ncclGetVersion(int* version) {
  if (!version) return ncclInvalidArgument;
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

STANDIN_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  if (!id) return ncclInvalidArgument;
  std::memset(id, 0, sizeof *id);
  std::random_device random;
  std::snprintf(id->internal, sizeof id->internal, "/kiln-nccl-%d-%08x%08x", static_cast<int>(getpid()), random(),
                random());
  return ncclSuccess;
}

STANDIN_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  if (!comm) return ncclInvalidArgument;
  std::shared_ptr<State> s;
  if (ncclResult_t r = attach(id, nranks, rank, gpusimCurrentDevice(), s)) return r;
  if (ncclResult_t r = awaitRanks(*s)) return r;
  *comm = new ncclComm{std::move(s)};
  return ncclSuccess;
}

// One process, one rank per device in `devices` (or devices 0 .. n-1).
STANDIN_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t* comms, int n, const int* devices) {
  if (!comms || n < 1) return ncclInvalidArgument;
  ncclUniqueId id;
  ncclGetUniqueId(&id);
  std::vector<std::shared_ptr<State>> states(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r)
    if (ncclResult_t e = attach(id, n, r, devices ? devices[r] : r, states[static_cast<size_t>(r)])) return e;
  for (int r = 0; r < n; ++r) {
    if (ncclResult_t e = awaitRanks(*states[static_cast<size_t>(r)])) return e;
    comms[r] = new ncclComm{std::move(states[static_cast<size_t>(r)])};
  }
  return ncclSuccess;
}

STANDIN_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  delete comm;  // queued collectives keep the state until they are done
  return ncclSuccess;
}

STANDIN_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  State& s = *comm->state;
  s.aborted.store(true);
  int expected = 0;
  s.shared->abortedBy.compare_exchange_strong(expected, s.rank + 1);  // every rank's waits end
  shm_unlink(s.name.c_str());
  delete comm;
  return ncclSuccess;
}

STANDIN_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* error) {
  if (!comm || !error) return ncclInvalidArgument;
  *error = static_cast<ncclResult_t>(comm->state->asyncError.load());
  return ncclSuccess;
}

STANDIN_EXPORT const char* ncclGetLastError(ncclComm_t comm) {
  if (!comm) return lastCallError.c_str();
  State& s = *comm->state;
  std::lock_guard<std::mutex> lock(s.mutex);
  thread_local std::string copy;
  copy = !s.lastError.empty() ? s.lastError : !s.waitingFor.empty() ? s.waitingFor : lastCallError;
  return copy.c_str();
}

STANDIN_EXPORT const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

// Group calls: every collective here is queued as it is called and each rank runs its own in call
// order, so a group needs no deferral; the calls only keep the nesting count NCCL checks.
namespace {
thread_local int groupDepth = 0;
}

STANDIN_EXPORT ncclResult_t ncclGroupStart() {
  ++groupDepth;
  return ncclSuccess;
}

STANDIN_EXPORT ncclResult_t ncclGroupEnd() {
  if (groupDepth == 0) return refuse(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  --groupDepth;
  return ncclSuccess;
}

STANDIN_EXPORT ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t type,
                                          ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  if (ncclResult_t r = checkCall(comm, type, recv, count, "ncclAllReduce")) return r;
  if (op < ncclSum || op > ncclAvg) return refuse(ncclInvalidArgument, "ncclAllReduce with operation " + std::to_string(op));
  if (count && send != recv &&
      !gpusimDeviceMemory(comm->state->device, reinterpret_cast<uint64_t>(send), count * typeBytes(type), 0, "ncclAllReduce"))
    return refuse(ncclInvalidArgument, "ncclAllReduce: the send buffer is not device memory of that size");
  auto c = std::make_unique<Collective>();
  c->state = comm->state, c->send = reinterpret_cast<uint64_t>(send), c->recv = reinterpret_cast<uint64_t>(recv);
  c->count = count, c->type = type, c->op = op;
  return enqueue(std::move(c), stream, "ncclAllReduce");
}

STANDIN_EXPORT ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t type, int root,
                                          ncclComm_t comm, cudaStream_t stream) {
  if (ncclResult_t r = checkCall(comm, type, recv, count, "ncclBroadcast")) return r;
  if (root < 0 || root >= comm->state->ranks) return refuse(ncclInvalidArgument, "ncclBroadcast from rank " + std::to_string(root));
  auto c = std::make_unique<Collective>();
  c->state = comm->state, c->broadcast = true, c->root = root;
  c->send = reinterpret_cast<uint64_t>(send), c->recv = reinterpret_cast<uint64_t>(recv), c->count = count, c->type = type;
  return enqueue(std::move(c), stream, "ncclBroadcast");
}
