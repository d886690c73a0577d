// `kiln train`'s and `kiln bench`'s data files (streamed through runtime/input_pipeline.h) and
// kiln train's seeded initialisation of parameters given without a file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/status.h"
#include "ir/tensor.h"

namespace kiln::cli {

// --data NAME=PATTERN: the shards a glob pattern matches (`x_*.npy`), in sorted order, or the one
// path.
Expected<std::vector<std::string>> expandShards(const std::string& path);

// Data of type `data` for parameter %`param` (of type `want`): the same type but for axis 0, the
// samples. Else an error "`flag`: %param is T (axis 0 is the batch), `holder` U" (holder: "the
// file holds", ...).
Status checkDataType(const std::string& flag, const std::string& param, const TensorType& want, const TensorType& data,
                     const std::string& holder);

// A parameter's starting value: rank >= 2 (matrices [in,out], conv filters [O,I,kh,kw]) Glorot
// uniform, U(-a, a) with a = sqrt(6 / (fan_in + fan_out)); rank 0 and 1 (biases) zeros. `index`
// (the parameter's position) makes each parameter's stream different for one seed.
Tensor initialParam(const TensorType& type, uint64_t seed, int index);

}  // namespace kiln::cli
