// `kiln train`'s data: the --data arrays cut into batches along axis 0 and shuffled per epoch
// (the permutation of epoch e is a function of the seed and e only, so a resumed run needs just
// the step count), and the seeded initialisation of parameters given without a file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/status.h"
#include "ir/tensor.h"

namespace kiln::cli {

class Dataset {
 public:
  // Arrays of equal length (axis 0); each must have at least one dimension.
  static Expected<Dataset> create(std::vector<std::string> names, std::vector<Tensor> arrays);
  int64_t length() const { return length_; }
  // The `batch` samples of update number `step` (0-based): epoch step / (length / batch) reads
  // full batches of its own permutation in order (a last partial batch is dropped). With
  // `shards` > 1 (data-parallel replicas), only shard `shard` of that global batch: its
  // batch / shards consecutive samples, so the replicas together read each sample once.
  std::vector<Tensor> batch(int64_t step, int64_t batch, uint64_t seed, int shard = 0, int shards = 1);

 private:
  std::vector<std::string> names_;
  std::vector<Tensor> arrays_;
  int64_t length_ = 0;
  int64_t permEpoch_ = -1;
  std::vector<int64_t> perm_;
};

// The permutation of [0, n) for epoch `epoch`: Fisher-Yates driven by a SplitMix64 stream seeded
// from (seed, epoch), the same on every platform.
std::vector<int64_t> epochPermutation(uint64_t seed, int64_t epoch, int64_t n);

// A parameter's starting value: rank >= 2 (matrices [in,out], conv filters [O,I,kh,kw]) Glorot
// uniform, U(-a, a) with a = sqrt(6 / (fan_in + fan_out)); rank 0 and 1 (biases) zeros. `index`
// (the parameter's position) makes each parameter's stream different for one seed.
Tensor initialParam(const TensorType& type, uint64_t seed, int index);

}  // namespace kiln::cli
