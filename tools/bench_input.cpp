#include "tools/bench_input.h"

#include <fmt/format.h>

#include <algorithm>

#include "tools/cli.h"
#include "tools/train_data.h"

namespace kiln::cli {

Expected<std::unique_ptr<BenchInput>> BenchInput::open(const Function& f, const std::string& list, uint64_t seed,
                                                       int64_t prefetch) {
  auto input = std::make_unique<BenchInput>();
  input->prefetch_ = prefetch;
  std::vector<InputSource> sources;
  std::vector<Value*> params = f.params();
  for (const std::string& item : splitCommaList(list)) {
    size_t eq = item.find('=');
    if (eq == std::string::npos) return Error("--data " + item + ": expected NAME=PATH.npy (or a glob of shards)");
    std::string name = item.substr(0, eq), path = item.substr(eq + 1);
    if (!name.empty() && name[0] == '%') name = name.substr(1);
    auto it = std::find_if(params.begin(), params.end(), [&](const Value* p) { return p->name() == name; });
    if (it == params.end()) return Error("--data: @" + f.name() + " has no parameter %" + name);
    const TensorType& type = (*it)->type();
    if (type.rank() == 0) return Error("--data " + name + ": %" + name + " is a scalar; data parameters have a batch axis");
    if (input->batch_ != 0 && type.shape[0] != input->batch_)
      return Error("--data " + name + ": %" + name + " takes " + std::to_string(type.shape[0]) +
                   " samples where the other data parameters take " + std::to_string(input->batch_));
    input->batch_ = type.shape[0];
    auto shards = expandShards(path);
    if (!shards) return Error("--data " + item + ": " + shards.error().message());
    sources.push_back({name, std::move(*shards)});
    input->slots_.push_back(static_cast<size_t>(it - params.begin()));
  }
  auto pipeline = InputPipeline::open(sources);
  if (!pipeline) return pipeline.error();
  for (size_t k = 0; k < sources.size(); ++k)
    KILN_TRY(checkDataType("--data " + sources[k].name, sources[k].name, params[input->slots_[k]]->type(),
                           (*pipeline)->types()[k], "the data holds"));
  InputPipelineOptions options;
  options.batch = input->batch_;
  options.seed = seed;
  options.steps = int64_t{1} << 40;  // as many as the benchmark asks for; stopped when it ends
  options.depth = static_cast<size_t>(prefetch);
  KILN_TRY((*pipeline)->start(options));
  input->pipeline_ = std::move(*pipeline);
  return input;
}

Expected<std::vector<size_t>> BenchInput::feed(std::vector<Tensor>& inputs) {
  double waited = 0;
  auto batch = pipeline_->next(&waited);
  if (!batch) return batch.error();
  waits_.push_back(waited);
  for (size_t k = 0; k < slots_.size(); ++k) inputs[slots_[k]] = std::move((*batch)[k]);
  return slots_;
}

std::string BenchInput::summary() const {
  if (waits_.empty()) return "";
  std::vector<double> sorted = waits_;
  std::sort(sorted.begin(), sorted.end());
  return fmt::format("input: {} batches of {} through the input pipeline ({} ahead); a step waited {:.3f} ms for its "
                     "batch (median), at most {:.3f} ms\n",
                     sorted.size(), batch_, prefetch_, sorted[sorted.size() / 2], sorted.back());
}

}  // namespace kiln::cli
