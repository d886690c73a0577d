// Shards mapped with mmap (read-only, private), batches gathered row by row from the maps on one
// producer thread, and a deque of at most `depth` finished batches between it and the consumer.
#include "runtime/input_pipeline.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string_view>

#include "ir/npy.h"
#include "ir/splitmix64.h"

namespace kiln {

std::vector<int64_t> epochPermutation(uint64_t seed, int64_t epoch, int64_t n) {
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) perm[static_cast<size_t>(i)] = i;
  SplitMix64 rng{seed * 0x100000001B3ull + static_cast<uint64_t>(epoch) * 0x9E3779B97F4A7C15ull};
  for (int64_t i = n - 1; i > 0; --i) {
    auto j = static_cast<int64_t>(rng.next() % static_cast<uint64_t>(i + 1));
    std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(j)]);
  }
  return perm;
}

struct InputPipeline::Shard {
  std::string path;
  void* map = nullptr;
  size_t mapBytes = 0;
  NpyLayout layout;
  const uint8_t* rows() const { return static_cast<const uint8_t*>(map) + layout.dataOffset; }
  ~Shard() {
    if (map) ::munmap(map, mapBytes);
  }

  static Expected<std::unique_ptr<Shard>> open(const std::string& path) {
    auto shard = std::make_unique<Shard>();
    shard->path = path;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Error("cannot read '" + path + "': " + std::strerror(errno));
    struct stat st;
    if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
      ::close(fd);
      return Error("cannot read '" + path + "': " + (S_ISDIR(st.st_mode) ? "it is a directory" : std::strerror(errno)));
    }
    shard->mapBytes = static_cast<size_t>(st.st_size);
    if (shard->mapBytes > 0) {
      shard->map = ::mmap(nullptr, shard->mapBytes, PROT_READ, MAP_PRIVATE, fd, 0);
      if (shard->map == MAP_FAILED) {
        shard->map = nullptr;
        int err = errno;
        ::close(fd);
        return Error("cannot map '" + path + "': " + std::strerror(err));
      }
    }
    ::close(fd);  // the map keeps the file
    // The header and the data's size, checked once: a truncated shard fails here, before training.
    std::string_view bytes(static_cast<const char*>(shard->map), shard->mapBytes);
    auto layout = parseNpy(bytes, path);
    if (!layout) return layout.error();
    if (layout->type.rank() == 0) return Error(path + ": a scalar has no samples (axis 0)");
    shard->layout = std::move(*layout);
    return shard;
  }
};

Expected<std::unique_ptr<InputPipeline>> InputPipeline::open(std::vector<InputSource> sources) {
  if (sources.empty()) return Error("no data inputs");
  std::unique_ptr<InputPipeline> p(new InputPipeline());
  for (InputSource& source : sources) {
    if (source.shards.empty()) return Error("data input " + source.name + " has no files");
    Input input;
    input.name = source.name;
    TensorType type;
    for (const std::string& path : source.shards) {
      auto shard = Shard::open(path);
      if (!shard) return shard.error();
      TensorType t = (*shard)->layout.type;
      if (input.shards.empty()) {
        type = t;
        type.shape[0] = 0;
        input.dtype = t.dtype;
        input.rowBytes = t.byteSize() / static_cast<size_t>(std::max<int64_t>(t.shape[0], 1));
        if (t.shape[0] == 0) input.rowBytes = TensorType{t.dtype, Shape(t.shape.begin() + 1, t.shape.end())}.byteSize();
      } else {
        TensorType got = t, want = type;  // all but axis 0
        got.shape[0] = want.shape[0] = 0;
        if (got != want)
          return Error(path + ": holds " + t.str() + ", but " + input.shards[0]->path + " (the first shard of " +
                       source.name + ") holds " + input.shards[0]->layout.type.str() +
                       ": shards must agree in all but axis 0");
      }
      input.starts.push_back(type.shape[0]);
      type.shape[0] += t.shape[0];
      input.shards.push_back(std::move(*shard));
    }
    if (!p->inputs_.empty() && type.shape[0] != p->length_)
      return Error("data inputs differ in length: " + p->inputs_[0].name + " has " + std::to_string(p->length_) +
                   " samples, " + source.name + " has " + std::to_string(type.shape[0]));
    p->length_ = type.shape[0];
    p->types_.push_back(type);
    p->inputs_.push_back(std::move(input));
  }
  return p;
}

Status InputPipeline::start(InputPipelineOptions options) {
  if (producer_.joinable()) return Error("the input pipeline has started already");
  if (options.batch < 1 || options.shards < 1 || options.batch % options.shards != 0 || options.steps < 0 ||
      options.depth < 1)
    return Error("input pipeline: a batch of " + std::to_string(options.batch) + " does not split into " +
                 std::to_string(options.shards) + " equal shares");
  if (options.batch > length_)
    return Error("the batch of " + std::to_string(options.batch) + " is larger than the dataset (" +
                 std::to_string(length_) + " samples)");
  options_ = std::move(options);
  producer_ = std::thread([this] { produce(); });
  return {};
}

InputPipeline::~InputPipeline() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (producer_.joinable()) producer_.join();
}

Expected<std::vector<Tensor>> InputPipeline::gather(int64_t step, std::vector<int64_t>& perm, int64_t& permEpoch) const {
  if (options_.fault) KILN_TRY(options_.fault(step));
  int64_t perEpoch = length_ / options_.batch;
  int64_t epoch = step / perEpoch, share = options_.batch / options_.shards;
  int64_t first = (step % perEpoch) * options_.batch + options_.shard * share;
  if (epoch != permEpoch) {
    perm = epochPermutation(options_.seed, epoch, length_);
    permEpoch = epoch;
  }
  std::vector<Tensor> batch;
  for (size_t k = 0; k < inputs_.size(); ++k) {
    const Input& input = inputs_[k];
    TensorType type = types_[k];
    type.shape[0] = share;
    Tensor t(type);
    auto* out = static_cast<uint8_t*>(t.data());
    for (int64_t i = 0; i < share; ++i) {
      int64_t sample = perm[static_cast<size_t>(first + i)];
      // The shard holding it: the last whose first sample is at or before it.
      size_t s = static_cast<size_t>(std::upper_bound(input.starts.begin(), input.starts.end(), sample) - input.starts.begin()) - 1;
      const Shard& shard = *input.shards[s];
      std::memcpy(out + static_cast<size_t>(i) * input.rowBytes,
                  shard.rows() + static_cast<size_t>(sample - input.starts[s]) * input.rowBytes, input.rowBytes);
    }
    if (input.dtype == DType::Bool) normalizeBools(t.data(), t.byteSize());
    batch.push_back(std::move(t));
  }
  return batch;
}

void InputPipeline::produce() {
  std::vector<int64_t> perm;
  int64_t permEpoch = -1;
  for (int64_t k = 0; k < options_.steps; ++k) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || ready_.size() < options_.depth; });
      if (stopping_) return;
    }
    Expected<std::vector<Tensor>> batch = gather(options_.firstStep + k, perm, permEpoch);
    bool failed = !batch.ok();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ready_.push_back(std::move(batch));
    }
    changed_.notify_all();
    if (failed) return;  // the consumer stops at the error
  }
}

Expected<std::vector<Tensor>> InputPipeline::next(double* waitedMilliseconds) {
  if (!producer_.joinable()) return Error("the input pipeline has not started");
  if (consumed_ >= options_.steps)
    return Error("the input pipeline has produced all " + std::to_string(options_.steps) + " batches");
  auto start = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return !ready_.empty(); });
  if (waitedMilliseconds)
    *waitedMilliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  Expected<std::vector<Tensor>> batch = std::move(ready_.front());
  ready_.pop_front();
  lock.unlock();
  changed_.notify_all();
  int64_t update = options_.firstStep + ++consumed_;  // 1-based, as kiln train counts steps
  if (!batch) {
    consumed_ = options_.steps;  // nothing follows a failed batch
    return Error("input of step " + std::to_string(update) + ": " + batch.error().message(), batch.error().loc());
  }
  return batch;
}

}  // namespace kiln
