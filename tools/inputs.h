// The inputs a command runs a function on (`kiln run`, `kiln bench`): --input NAME=PATH (a NumPy
// .npy or an ONNX TensorProto .pb) for some parameters, deterministic random tensors for the rest.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "ir/tensor.h"
#include "tools/cli.h"

namespace kiln::cli {

// A non-negative integer flag value, or nullopt for anything else ("12x", "-1").
template <class T>
std::optional<T> parseInteger(const std::string& text) {
  try {
    size_t used = 0;
    long long v = std::stoll(text, &used);
    if (used != text.size() || v < 0) return std::nullopt;
    return static_cast<T>(v);
  } catch (...) {
    return std::nullopt;
  }
}

// A tensor from a NumPy .npy file or an ONNX TensorProto .pb file (by the extension).
Expected<Tensor> readTensorFile(const std::string& path);

// One tensor per parameter of `f`: from --input NAME=PATH (exactly the parameter's type) or
// random from `seed` (runtime/random_inputs.h). `sources` says where each came from, for printing.
// A bad flag or file is reported (usage error or located message) and gives nullopt.
std::optional<std::vector<Tensor>> programInputs(const Command& c, const Args& args, const Function& f, uint64_t seed,
                                                 std::vector<std::string>& sources);

}  // namespace kiln::cli
