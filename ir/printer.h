// The printer: canonical .kiln text for modules, functions and ops. Parsing its output and
// printing again gives the same bytes, unless large constants are elided (PrintOptions).
#pragma once

#include <string>

#include "ir/ir.h"

namespace kiln {

struct PrintOptions {
  // Constant data (ir/constant_data.h) of more than this many elements prints as a summary with
  // its content hash, `constant elided "37632 elements, hash 5f0c..." : f32[64,3,7,7]`, which the
  // parser rejects with a message saying so. Negative: every constant in full.
  int64_t elideConstantsAbove = -1;
};

// What dumps, `kiln print` and `kiln explain` use: weights as summaries, small tables in full.
inline constexpr PrintOptions kSummaryPrint{256};
// What the compile cache's keys hash: every constant data as its hash (equal hashes, equal bytes).
inline constexpr PrintOptions kHashedConstants{0};

std::string printModule(const Module& module, const PrintOptions& options = {});
std::string printFunction(const Function& function, const PrintOptions& options = {});
// Spells `a, b, c` as in the text format ("f32[2], i64[]").
std::string printTypes(const std::vector<TensorType>& types);

}  // namespace kiln
