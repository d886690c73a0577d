// Training checkpoints: a directory of NAME.npy files plus a small manifest, written atomically
// (everything goes to DIR.tmp, is fsync'ed, and the directory is renamed into place), so a run
// killed while saving leaves the previous checkpoint or the new one, never half of one.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/status.h"
#include "ir/tensor.h"

namespace kiln {

struct Checkpoint {
  int64_t step = 0;                                   // updates done so far
  std::string optimizer;                              // "adam", ... (checked on resume)
  std::vector<std::pair<std::string, Tensor>> tensors;  // in manifest order
};

// The manifest file inside a checkpoint directory.
inline constexpr const char* kCheckpointManifest = "checkpoint.txt";

// Writes `ckpt` as `dir`: DIR.tmp/NAME.npy for each tensor and DIR.tmp/checkpoint.txt, each
// fsync'ed, then DIR.tmp renamed to DIR (an existing DIR is replaced).
Status writeCheckpoint(const std::string& dir, const Checkpoint& ckpt);
// Reads a checkpoint written by writeCheckpoint; a missing directory, manifest or file is an error
// naming it.
Expected<Checkpoint> readCheckpoint(const std::string& dir);

}  // namespace kiln
