// Trainer: the public face of TrainStep.
#include "api/function_lookup.h"
#include "kiln/train.h"
#include "passes/optimizers.h"
#include "runtime/train_session.h"

namespace kiln {

struct Trainer::Impl {
  std::shared_ptr<const Module> module;  // the loss function's graph
  std::unique_ptr<TrainStep> step;
};

Trainer::Trainer(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Expected<Trainer> Trainer::create(const Graph& graph, const TrainerOptions& options) {
  auto function = api::findFunction(*graph.module(), options.function);
  if (!function) return function.error();
  auto optimizer = passes::parseOptimizer(options.optimizer);
  if (!optimizer) return optimizer.error();
  auto backend = resolveBackend(options.backend);
  if (!backend) return backend.error();
  TrainOptions o;
  o.spec.params = options.params;
  o.spec.optimizer = *optimizer;
  o.batch = options.batch;
  o.accumulate = options.accumulate;
  o.backend = *backend;
  o.devices = options.devices;
  o.split = options.split;
  o.pipeline = options.pipeline;
  auto schedule = parsePipelineSchedule(options.schedule);
  if (!schedule) return Error("TrainerOptions::schedule is \"gpipe\" or \"1f1b\", not \"" + options.schedule + "\"");
  o.schedule = *schedule;
  if (o.pipeline && o.devices < 1) return Error("TrainerOptions::pipeline runs across `devices` devices: set devices");
  auto step = TrainStep::create(**function, o);
  if (!step) return step.error();
  auto impl = std::make_shared<Impl>();
  impl->module = graph.module();
  impl->step = std::move(*step);
  return Trainer(std::move(impl));
}

Expected<TrainStats> Trainer::step(const std::vector<Tensor>& data, float lr) {
  auto r = impl_->step->step(data, lr);
  if (!r) return r.error();
  return TrainStats{r->loss, r->metrics};
}

const std::vector<std::string>& Trainer::paramNames() const { return impl_->step->paramNames(); }
const std::vector<std::string>& Trainer::dataNames() const { return impl_->step->dataNames(); }
Expected<std::vector<Tensor>> Trainer::params() const { return impl_->step->params(); }
Status Trainer::setParams(const std::vector<Tensor>& params) { return impl_->step->setParams(params); }
int64_t Trainer::stepCount() const { return impl_->step->stepCount(); }
Status Trainer::save(const std::string& dir) const { return impl_->step->save(dir); }
Status Trainer::load(const std::string& dir) { return impl_->step->load(dir); }

}  // namespace kiln
