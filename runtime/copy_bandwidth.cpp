// Measuring copy bandwidth on the host and on the GPU (copy_bandwidth.h).
#include "runtime/copy_bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "runtime/thread_pool.h"
#if KILN_HAVE_CUDA
#include "runtime/cuda/context.h"
#include "runtime/cuda/device_memory.h"
#include "runtime/cuda/driver.h"
#include "runtime/cuda/stream.h"
#endif

namespace kiln {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

CopyBandwidth summarise(size_t bytes, std::vector<double> ms, std::string how) {
  CopyBandwidth b;
  b.bytes = bytes;
  b.medianMs = median(std::move(ms));
  b.gbps = b.medianMs > 0 ? 2.0 * static_cast<double>(bytes) / (b.medianMs * 1e6) : 0;
  b.how = std::move(how);
  return b;
}

CopyBandwidth hostCopy(size_t bytes, int reps) {
  std::vector<uint8_t> src(bytes, 1), dst(bytes, 0);
  ThreadPool& pool = ThreadPool::shared();
  int64_t chunk = 1 << 20;
  int64_t chunks = static_cast<int64_t>((bytes + chunk - 1) / chunk);
  std::vector<double> ms;
  for (int r = -1; r < reps; ++r) {
    auto start = std::chrono::steady_clock::now();
    pool.parallelFor(chunks, 1, [&](int64_t begin, int64_t end) {
      size_t from = static_cast<size_t>(begin * chunk), to = std::min(bytes, static_cast<size_t>(end * chunk));
      std::memcpy(dst.data() + from, src.data() + from, to - from);
    });
    double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (r >= 0) ms.push_back(t);  // r = -1 warms the pages up
  }
  return summarise(bytes, std::move(ms), "memcpy on " + std::to_string(pool.size()) + " threads");
}

#if KILN_HAVE_CUDA
Expected<CopyBandwidth> deviceCopy(size_t bytes, int reps) {
  auto device = cuda::Device::get();
  if (!device) return device.error();
  auto src = cuda::allocateDevice(bytes, "the copy-bandwidth source");
  if (!src) return src.error();
  auto dst = cuda::allocateDevice(bytes, "the copy-bandwidth destination");
  if (!dst) return dst.error();
  auto stream = cuda::Stream::create();
  if (!stream) return stream.error();
  auto start = cuda::Event::create();
  auto end = cuda::Event::create();
  if (!start) return start.error();
  if (!end) return end.error();
  std::vector<double> ms;
  for (int r = -1; r < reps; ++r) {
    KILN_TRY(start->record(stream->get()));
    KILN_CU(cuMemcpyDtoDAsync, "the copy-bandwidth baseline", dst->address(), src->address(), bytes, stream->get());
    KILN_TRY(end->record(stream->get()));
    auto t = end->millisecondsSince(*start);
    if (!t) return t.error();
    if (r >= 0) ms.push_back(*t);
  }
  return summarise(bytes, std::move(ms), "device-to-device cuMemcpyDtoDAsync");
}
#endif

}  // namespace

Expected<CopyBandwidth> measureCopyBandwidth(Backend backend, size_t bytes, int reps) {
  switch (backend) {
    case Backend::Cpu: return hostCopy(bytes, reps);
    case Backend::Cuda:
#if KILN_HAVE_CUDA
      return deviceCopy(bytes, reps);
#else
      return Error("this kiln was built without the CUDA toolkit's headers, so it has no cuda backend");
#endif
    default: return Error("copy bandwidth is measured for the cpu or cuda backend, not " + std::string(backendName(backend)));
  }
}

}  // namespace kiln
