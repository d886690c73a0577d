// Shard patterns by glob(3); initial values from a portable RNG (SplitMix64), so that they do not
// depend on the C++ library's distributions.
#include "tools/train_data.h"

#include <glob.h>

#include <algorithm>
#include <cmath>

#include "ir/splitmix64.h"

namespace kiln::cli {

Expected<std::vector<std::string>> expandShards(const std::string& path) {
  if (path.find_first_of("*?[") == std::string::npos) return std::vector<std::string>{path};
  glob_t matches{};
  int status = ::glob(path.c_str(), GLOB_ERR, nullptr, &matches);
  std::vector<std::string> shards(matches.gl_pathv, matches.gl_pathv + matches.gl_pathc);
  ::globfree(&matches);
  if (status == GLOB_NOMATCH || shards.empty()) return Error("no file matches the pattern");
  if (status != 0) return Error("cannot list the files the pattern matches");
  std::sort(shards.begin(), shards.end());
  return shards;
}

Status checkDataType(const std::string& flag, const std::string& param, const TensorType& want, const TensorType& data,
                     const std::string& holder) {
  TensorType expected = want;
  if (expected.rank() > 0 && data.rank() > 0) expected.shape[0] = data.shape[0];
  if (want.rank() > 0 && data == expected) return {};
  return Error(flag + ": %" + param + " is " + want.str() + " (axis 0 is the batch), " + holder + " " + data.str());
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
