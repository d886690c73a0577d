// Training input that streams: each data input is one or more .npy shards (concatenated along
// axis 0), memory-mapped, so a dataset larger than memory is read a batch at a time; a background
// thread gathers each update's shuffled samples into batches ahead of the step that needs them,
// through a bounded queue (tf.data's prefetch). The order is epochPermutation's, the same as
// reading synchronously; a producer's failure reaches the consumer as an error naming the file
// and the sample, and stopping the pipeline never waits on a producer that is blocked.
//
//   auto p = InputPipeline::open({{"x", {"x0.npy", "x1.npy"}}, {"y", {"y0.npy", "y1.npy"}}});
//   (*p)->start(options);
//   for (...) { double waited; auto batch = (*p)->next(&waited); t.step(*batch, lr); }
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ir/status.h"
#include "ir/tensor.h"

namespace kiln {

// The permutation of [0, n) for epoch `epoch`: Fisher-Yates driven by a SplitMix64 stream seeded
// from (seed, epoch), the same on every platform.
std::vector<int64_t> epochPermutation(uint64_t seed, int64_t epoch, int64_t n);

// One data input: its name (for messages) and its shards in order.
struct InputSource {
  std::string name;
  std::vector<std::string> shards;
};

struct InputPipelineOptions {
  int64_t batch = 1;   // samples per update, all replicas together
  uint64_t seed = 0;   // of the per-epoch shuffle
  int shard = 0;       // this replica, of `shards`: it reads batch / shards consecutive samples
  int shards = 1;      //   of every update's batch
  int64_t firstStep = 0;  // 0-based update number of the first batch (a resumed run's step count)
  int64_t steps = 1;      // batches to produce
  size_t depth = 2;       // batches produced ahead of the consumer, at most
  // Tests: called before producing the batch of update `step`; an error fails that batch.
  std::function<Status(int64_t step)> fault;
};

class InputPipeline {
 public:
  // Maps every shard and checks them: each a .npy file, an input's shards of one type but for
  // axis 0, every input the same number of samples.
  static Expected<std::unique_ptr<InputPipeline>> open(std::vector<InputSource> sources);
  // Starts the producer (once) on the batches `options` describes; the batch must fit the dataset.
  Status start(InputPipelineOptions options);
  ~InputPipeline();  // stops the producer and unmaps the shards

  // Samples in the dataset, and each input's type with axis 0 holding them all.
  int64_t length() const { return length_; }
  const std::vector<TensorType>& types() const { return types_; }

  // The next update's batch (one tensor per input, batch / shards samples each), waiting for the
  // producer if it is behind; `waitedMilliseconds` (if given) says how long. Before start, after
  // the last batch, or once the producer failed, an error.
  Expected<std::vector<Tensor>> next(double* waitedMilliseconds = nullptr);

  InputPipeline(const InputPipeline&) = delete;
  InputPipeline& operator=(const InputPipeline&) = delete;

 private:
  struct Shard;  // a mapped .npy file
  struct Input {
    std::string name;
    std::vector<std::unique_ptr<Shard>> shards;
    std::vector<int64_t> starts;  // first sample of each shard
    size_t rowBytes = 0;
    DType dtype = DType::F32;
  };
  InputPipeline() = default;
  void produce();
  Expected<std::vector<Tensor>> gather(int64_t step, std::vector<int64_t>& perm, int64_t& permEpoch) const;

  std::vector<Input> inputs_;
  std::vector<TensorType> types_;
  int64_t length_ = 0;
  InputPipelineOptions options_;
  int64_t consumed_ = 0;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Expected<std::vector<Tensor>>> ready_;
  bool stopping_ = false;
  std::thread producer_;
};

}  // namespace kiln
