// Batches by permuted row copies and a portable RNG (SplitMix64), so that shuffles and initial
// values do not depend on the C++ library's distributions.
#include "tools/train_data.h"

#include <cmath>
#include <cstring>

namespace kiln::cli {

namespace {

struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
};

}  // namespace

Expected<Dataset> Dataset::create(std::vector<std::string> names, std::vector<Tensor> arrays) {
  Dataset d;
  for (size_t i = 0; i < arrays.size(); ++i) {
    if (arrays[i].type().rank() == 0) return Error("--data " + names[i] + ": a scalar has no samples (axis 0)");
    int64_t n = arrays[i].type().shape[0];
    if (i > 0 && n != d.length_)
      return Error("--data arrays differ in length: " + names[0] + " has " + std::to_string(d.length_) + " samples, " +
                   names[i] + " has " + std::to_string(n));
    d.length_ = n;
  }
  d.names_ = std::move(names);
  d.arrays_ = std::move(arrays);
  return d;
}

std::vector<int64_t> epochPermutation(uint64_t seed, int64_t epoch, int64_t n) {
  std::vector<int64_t> perm(n);
  for (int64_t i = 0; i < n; ++i) perm[i] = i;
  SplitMix64 rng{seed * 0x100000001B3ull + static_cast<uint64_t>(epoch) * 0x9E3779B97F4A7C15ull};
  for (int64_t i = n - 1; i > 0; --i) {
    int64_t j = static_cast<int64_t>(rng.next() % static_cast<uint64_t>(i + 1));
    std::swap(perm[i], perm[j]);
  }
  return perm;
}

std::vector<Tensor> Dataset::batch(int64_t step, int64_t global, uint64_t seed, int shard, int shards) {
  int64_t perEpoch = length_ / global;
  int64_t epoch = step / perEpoch, batch = global / shards;
  int64_t first = (step % perEpoch) * global + shard * batch;
  if (epoch != permEpoch_) {
    perm_ = epochPermutation(seed, epoch, length_);
    permEpoch_ = epoch;
  }
  std::vector<Tensor> out;
  for (const Tensor& a : arrays_) {
    TensorType type = a.type();
    type.shape[0] = batch;
    Tensor t(type);
    size_t row = a.byteSize() / static_cast<size_t>(length_);
    for (int64_t i = 0; i < batch; ++i)
      std::memcpy(static_cast<char*>(t.data()) + i * row, static_cast<const char*>(a.data()) + perm_[first + i] * row, row);
    out.push_back(std::move(t));
  }
  return out;
}

Tensor initialParam(const TensorType& type, uint64_t seed, int index) {
  Tensor t(type);  // zeros
  if (type.rank() < 2) return t;
  int64_t receptive = 1;
  for (int d = 2; d < type.rank(); ++d) receptive *= type.shape[d];
  // [in, out] matrices; [O, I, kh, kw] filters (fan_in = I*kh*kw, fan_out = O*kh*kw).
  double fanIn = type.rank() == 2 ? type.shape[0] : static_cast<double>(type.shape[1] * receptive);
  double fanOut = type.rank() == 2 ? type.shape[1] : static_cast<double>(type.shape[0] * receptive);
  double limit = std::sqrt(6.0 / std::max(1.0, fanIn + fanOut));
  SplitMix64 rng{seed ^ (0xD1B54A32D192ED03ull * static_cast<uint64_t>(index + 1))};
  for (int64_t i = 0; i < t.numElements(); ++i) t.setDouble(i, (2.0 * rng.uniform() - 1.0) * limit);
  return t;
}

}  // namespace kiln::cli
