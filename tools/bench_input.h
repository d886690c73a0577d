// `kiln bench --data`: a step's data parameters fed batch by batch through the input pipeline
// (runtime/input_pipeline.h), as kiln train feeds them, with the time each step waited for its
// batch, so a step's input wait is measured next to its compute.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "runtime/input_pipeline.h"

namespace kiln::cli {

class BenchInput {
 public:
  // `list`: NAME=PATTERN,... naming parameters of `f`, each a .npy file or a glob of shards whose
  // samples (axis 0) fill the parameter's batch (its axis 0 in `f`). Batches are shuffled with
  // `seed`, `prefetch` of them read ahead.
  static Expected<std::unique_ptr<BenchInput>> open(const Function& f, const std::string& list, uint64_t seed,
                                                    int64_t prefetch);
  // Puts the next batch into `inputs` (one per parameter of f); returns the parameter indices it set.
  Expected<std::vector<size_t>> feed(std::vector<Tensor>& inputs);
  // "input: ..." with the median and the largest wait, for the report.
  std::string summary() const;

 private:
  std::unique_ptr<InputPipeline> pipeline_;
  std::vector<size_t> slots_;  // the data parameters' indices in f
  int64_t batch_ = 0, prefetch_ = 0;
  std::vector<double> waits_;
};

}  // namespace kiln::cli
