// TrainStep: builds the step functions for the micro-batch size, compiles them once, and keeps
// parameters and optimizer state between steps where the step runs (host or device).
#include "runtime/train_session.h"

#include <cstring>
#include <iterator>

#include "ir/interp/interpreter.h"
#include "runtime/checkpoint.h"
#include "runtime/collectives/communicator.h"
#include "passes/split_devices.h"
#include "runtime/executable.h"
#include "ir/builder.h"
#include "runtime/placed_executable.h"

namespace kiln {

struct TrainStep::Fn {
  const Function* function = nullptr;
  std::unique_ptr<Executable> exe;  // null: the interpreter runs `function` (or `placed` does)
  std::unique_ptr<PlacedExecutable> placed;  // across devices (TrainOptions::devices)
};

TrainStep::~TrainStep() {
  if (prefetched_.valid()) prefetched_.wait();
}

namespace {

// Rows [i*n, (i+1)*n) of axis 0.
Tensor rows(const Tensor& t, int64_t i, int64_t n) {
  TensorType type = t.type();
  type.shape[0] = n;
  Tensor part = Tensor::uninitialized(type);
  std::memcpy(part.data(), static_cast<const char*>(t.data()) + i * part.byteSize(), part.byteSize());
  return part;
}

std::vector<Tensor> microBatch(const std::vector<Tensor>& data, int64_t i, int64_t n) {
  std::vector<Tensor> out;
  for (const Tensor& t : data) out.push_back(rows(t, i, n));
  return out;
}

template <class T>
std::vector<T> concat(std::initializer_list<std::vector<T>> parts) {
  std::vector<T> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace

Expected<std::unique_ptr<TrainStep>> TrainStep::create(const Function& f, const TrainOptions& options) {
  auto layout = passes::stepLayout(f, options.spec);
  if (!layout) return layout.error();
  if (options.spec.params.empty()) return Error("no parameters to train", f.loc());
  std::unique_ptr<TrainStep> t(new TrainStep());
  auto backend = resolveBackend(options.backend);
  if (!backend) return backend.error();
  t->backend_ = *backend;
  t->placed_ = options.devices > 0;
  t->optimizer_ = options.spec.optimizer;
  t->numMetrics_ = layout->numMetrics;
  const TensorType& loss = f.resultTypes().at(0);  // stepLayout checked there is a result
  if (loss.rank() != 0 || !isFloat(loss.dtype))
    return Error("@" + f.name() + " must return a float scalar loss first, not " + loss.str(), f.loc());
  for (size_t i = 1; i < f.resultTypes().size(); ++i)
    if (f.resultTypes()[i].rank() != 0)
      return Error("@" + f.name() + " result " + std::to_string(i) + " is " + f.resultTypes()[i].str() +
                   ": metrics after the loss must be scalars", f.loc());
  std::vector<Value*> fParams = f.params();
  for (int i : layout->paramIndex) {
    t->paramNames_.push_back(fParams[i]->name());
    t->paramTypes_.push_back(fParams[i]->type());
  }
  if (layout->dataIndex.empty()) return Error("@" + f.name() + " has no data parameters: every parameter is trained", f.loc());
  int64_t batch = options.batch;
  for (int i : layout->dataIndex) {
    const TensorType& type = fParams[i]->type();
    if (type.rank() == 0)
      return Error("data parameter %" + fParams[i]->name() + " is a scalar: axis 0 of each data parameter is the batch", f.loc());
    if (batch == 0) batch = type.shape[0];
  }
  if (options.accumulate < 1) return Error("--accumulate must be at least 1");
  if (batch < 1) return Error("the batch size must be at least 1, not " + std::to_string(batch));
  if (batch % options.accumulate != 0)
    return Error("batch " + std::to_string(batch) + " is not divisible by " + std::to_string(options.accumulate) +
                 " micro-batches");
  t->k_ = options.accumulate;
  t->micro_ = batch / options.accumulate;
  for (int i : layout->dataIndex) {
    TensorType type = fParams[i]->type();
    type.shape[0] = batch;
    t->dataNames_.push_back(fParams[i]->name());
    t->dataTypes_.push_back(type);
  }

  t->module_ = std::make_unique<Module>();
  Module& m = *t->module_;
  auto specialized = passes::specializeBatch(m, f, layout->dataIndex, t->micro_, f.name() + "_batch" + std::to_string(t->micro_));
  if (!specialized) return specialized.error();
  // Replicas of a placed step average on the host between its accumulation and its update, as a
  // pipelined step's do: all_reduces inside it would run on several device threads of one
  // communicator. So model parallel x data parallel is a pipeline of its --accumulate micro-batches
  // (one by default), the same arithmetic as the plain step.
  const bool pipelined = options.pipeline || (options.devices > 0 && options.spec.dataParallel);
  if (options.devices > 0) KILN_TRY(passes::placeOnDevices(**specialized, options.devices, options.split));
  auto compile = [&](const Function* fn) -> Expected<std::unique_ptr<Fn>> {
    auto out = std::make_unique<Fn>();
    out->function = fn;
    if (t->backend_ == Backend::Interp) return out;
    codegen::CompileOptions co;
    co.target = t->backend_ == Backend::Cuda ? codegen::Target::Cuda : codegen::Target::Cpu;
    co.disabledPasses = options.disabledPasses;
    if (options.devices > 0) {
      auto placed = PlacedExecutable::compile(*fn, options.devices, co);
      if (!placed) return placed.error();
      out->placed = std::move(*placed);
      return out;
    }
    auto exe = Executable::compile(*fn, co);
    if (!exe) return exe.error();
    out->exe = std::move(*exe);
    return out;
  };
  if (pipelined) {
    // K accumulate calls pipelined through the devices' stages, then the update (stage_chain.h).
    if (options.devices < 1 || t->backend_ == Backend::Interp)
      return Error(options.pipeline ? "a pipelined step runs placed across --devices N on a compiled backend (cpu or cuda)"
                                    : "a step placed across --devices N runs with replicas on a compiled backend (cpu or cuda)");
    // Replicas (hybrid) average on the host between the micro-batches and the update.
    passes::TrainSpec local = options.spec;
    local.dataParallel = false;
    t->dataParallel_ = options.spec.dataParallel;
    auto accFn = passes::buildAccumulate(m, **specialized, local);
    if (!accFn) return accFn.error();
    auto acc = compile(*accFn);
    if (!acc) return acc.error();
    // Each parameter's update runs where its gradient was accumulated.
    const Function& placedAcc = (*acc)->placed->placedFunction();
    std::vector<std::optional<int64_t>> devices;
    size_t first = 1 + static_cast<size_t>(t->numMetrics_);
    for (size_t i = first; i < placedAcc.body().terminator()->numOperands(); ++i)
      devices.push_back(GraphBuilder::writtenDevice(placedAcc.body().terminator()->operand(i)));
    auto updateFn = passes::buildUpdate(m, **specialized, local, t->k_, devices);
    if (!updateFn) return updateFn.error();
    auto update = compile(*updateFn);
    if (!update) return update.error();
    t->stepFn_ = *accFn;
    t->accumulate_ = std::move(*acc);
    t->step_ = std::move(*update);
    t->schedule_ = options.schedule;
    t->pipelined_ = true;
  }
  if (!t->pipelined_) {
    Expected<Function*> stepFn = t->k_ == 1 ? passes::buildTrainStep(m, **specialized, options.spec)
                                            : passes::buildAccumulateStep(m, **specialized, options.spec, t->k_);
    if (!stepFn) return stepFn.error();
    t->stepFn_ = *stepFn;
    auto step = compile(*stepFn);
    if (!step) return step.error();
    t->step_ = std::move(*step);
  }
  if (t->k_ > 1 && !t->pipelined_) {
    auto accFn = passes::buildAccumulate(m, **specialized, options.spec);
    if (!accFn) return accFn.error();
    auto acc = compile(*accFn);
    if (!acc) return acc.error();
    t->accumulate_ = std::move(*acc);
  }

  std::vector<Tensor> zeros;
  for (const TensorType& type : t->paramTypes_) zeros.emplace_back(type);
  KILN_TRY(t->setParams(zeros));
  std::vector<Tensor> zeroState;
  for (int s = 0; s < layout->stateSlots; ++s) zeroState.insert(zeroState.end(), zeros.begin(), zeros.end());
  KILN_TRY(t->setState(zeroState));
  return t;
}

Status TrainStep::checkData(const std::vector<Tensor>& data) const {
  if (data.size() != dataTypes_.size())
    return Error("a training step takes " + std::to_string(dataTypes_.size()) + " data inputs, got " +
                 std::to_string(data.size()));
  for (size_t i = 0; i < data.size(); ++i)
    if (data[i].type() != dataTypes_[i])
      return Error("data input %" + dataNames_[i] + ": expected " + dataTypes_[i].str() + ", got " + data[i].type().str());
  return Status();
}

Expected<std::vector<Tensor>> TrainStep::runHost(const Fn& fn, const std::vector<Tensor>& inputs) const {
  if (fn.exe) return fn.exe->run(inputs);
  if (fn.placed) return fn.placed->run(inputs);
  return interpret(*fn.function, inputs);
}

Expected<StepResult> TrainStep::step(const std::vector<Tensor>& data, float lr) {
  KILN_TRY(checkData(data));
  return deviceResident() ? stepDevice(data, lr) : stepHost(data, lr);
}

namespace {

// Loss and metrics of one micro-batch's results, added into `sum`.
void addForward(StepResult& sum, const std::vector<Tensor>& out, int numMetrics) {
  sum.loss += out[0].getDouble(0);
  sum.metrics.resize(numMetrics);
  for (int i = 0; i < numMetrics; ++i) sum.metrics[i] += out[1 + i].getDouble(0);
}

void averageForward(StepResult& sum, int64_t k) {
  sum.loss /= static_cast<double>(k);
  for (double& m : sum.metrics) m /= static_cast<double>(k);
}

}  // namespace

// Given tensors of a pipelined step: params, state, zero accumulators, lr, step, then each
// micro-batch's data; K accumulate calls chained by their accumulators, then the update.
Expected<StepResult> TrainStep::stepPipelined(const std::vector<Tensor>& data, float lr) {
  int P = static_cast<int>(params_.size()), S = static_cast<int>(state_.size()), D = static_cast<int>(data.size());
  int first = 1 + numMetrics_;
  std::vector<Tensor> zeros;
  for (const TensorType& type : paramTypes_) zeros.emplace_back(type);
  std::vector<Tensor> given = concat({params_, state_, zeros, {Tensor::scalar(DType::F32, lr),
                                      Tensor::scalar(DType::F32, static_cast<double>(stepCount_ + 1))}});
  int zerosAt = P + S, lrAt = zerosAt + P, dataAt = lrAt + 2;
  for (int64_t i = 0; i < k_; ++i) {
    std::vector<Tensor> part = microBatch(data, i, micro_);
    given.insert(given.end(), part.begin(), part.end());
  }
  std::vector<ChainCall> calls;
  for (int i = 0; i < static_cast<int>(k_); ++i) {
    ChainCall call{accumulate_->placed.get(), {}};
    for (int j = 0; j < P; ++j) call.inputs.push_back({-1, j});
    for (int j = 0; j < P; ++j) call.inputs.push_back(i == 0 ? ChainSource{-1, zerosAt + j} : ChainSource{i - 1, first + j});
    for (int j = 0; j < D; ++j) call.inputs.push_back({-1, dataAt + i * D + j});
    calls.push_back(std::move(call));
  }
  ChainCall update{step_->placed.get(), {}};
  for (int j = 0; j < P + S; ++j) update.inputs.push_back({-1, j});
  for (int j = 0; j < P; ++j) update.inputs.push_back({static_cast<int>(k_) - 1, first + j});
  update.inputs.push_back({-1, lrAt});
  update.inputs.push_back({-1, lrAt + 1});
  // Data parallel too (hybrid): the accumulators and the forward results are averaged across the
  // replicas between the micro-batches and the update, on this thread, in parameter order, so
  // every replica's calls pair up (each parameter's gradient among the replicas of its stage).
  if (!dataParallel_) calls.push_back(std::move(update));
  ChainStats stats;
  auto out = runChain(calls, given, schedule_, &stats);
  if (!out) return out.error();
  StepResult result;
  for (int64_t i = 0; i < k_; ++i) addForward(result, (*out)[static_cast<size_t>(i)], numMetrics_);
  averageForward(result, k_);
  if (dataParallel_) {
    auto comm = collectives::worldCommunicator();
    if (!comm) return comm.error();
    std::vector<Tensor>& last = (*out)[static_cast<size_t>(k_) - 1];
    for (int j = 0; j < P; ++j) {
      Tensor& acc = last[static_cast<size_t>(first + j)];
      KILN_TRY((*comm)->allReduce(acc.data(), acc.numElements(), acc.dtype(), collectives::ReduceKind::Mean,
                                  "the gradient of %" + paramNames_[static_cast<size_t>(j)]));
    }
    std::vector<double> forward = {result.loss};
    forward.insert(forward.end(), result.metrics.begin(), result.metrics.end());
    KILN_TRY((*comm)->allReduce(forward.data(), static_cast<int64_t>(forward.size()), DType::F64,
                                collectives::ReduceKind::Mean, "the loss and metrics"));
    result.loss = forward[0];
    std::copy(forward.begin() + 1, forward.end(), result.metrics.begin());
    for (ChainSource& s : update.inputs)
      if (s.call >= 0) s = {-1, static_cast<int>(given.size()) + s.index - first};
    given.insert(given.end(), std::make_move_iterator(last.begin() + first), std::make_move_iterator(last.end()));
    ChainStats updating;
    auto updated = runChain({update}, given, schedule_, &updating);
    if (!updated) return updated.error();
    out->push_back(std::move(updated->front()));
  }
  const std::vector<Tensor>& updated = out->back();
  params_.assign(updated.begin(), updated.begin() + P);
  state_.assign(updated.begin() + P, updated.end());
  ++stepCount_;
  bubbleSum_ += stats.bubble();
  ++pipelinedSteps_;
  return result;
}

Expected<StepResult> TrainStep::stepHost(const std::vector<Tensor>& data, float lr) {
  if (pipelined_) return stepPipelined(data, lr);
  StepResult result;
  size_t first = 1 + numMetrics_;
  std::vector<Tensor> acc;
  for (const TensorType& type : paramTypes_) acc.emplace_back(type);
  for (int64_t i = 0; i + 1 < k_; ++i) {
    auto out = runHost(*accumulate_, concat({params_, acc, microBatch(data, i, micro_)}));
    if (!out) return out.error();
    addForward(result, *out, numMetrics_);
    acc.assign(out->begin() + first, out->end());
  }
  std::vector<Tensor> scalars = {Tensor::scalar(DType::F32, lr), Tensor::scalar(DType::F32, static_cast<double>(stepCount_ + 1))};
  std::vector<Tensor> inputs = k_ == 1 ? concat({params_, state_, data, scalars})
                                       : concat({params_, state_, acc, microBatch(data, k_ - 1, micro_), scalars});
  auto out = runHost(*step_, inputs);
  if (!out) return out.error();
  addForward(result, *out, numMetrics_);
  averageForward(result, k_);
  params_.assign(out->begin() + first, out->begin() + first + params_.size());
  state_.assign(out->begin() + first + params_.size(), out->end());
  ++stepCount_;
  return result;
}

namespace {

Expected<std::vector<DeviceTensor>> uploadAll(const std::vector<Tensor>& host) {
  std::vector<DeviceTensor> out;
  for (const Tensor& t : host) {
    auto d = DeviceTensor::upload(t);
    if (!d) return d.error();
    out.push_back(std::move(*d));
  }
  return out;
}

// Uploads the micro-batches of `data` one after another (micro-batch i's tensors at i*n..).
Expected<std::vector<DeviceTensor>> uploadBatch(const std::vector<Tensor>& data, int64_t k, int64_t micro) {
  std::vector<DeviceTensor> out;
  for (int64_t i = 0; i < k; ++i) {
    auto part = uploadAll(k == 1 ? data : microBatch(data, i, micro));
    if (!part) return part.error();
    out.insert(out.end(), part->begin(), part->end());
  }
  return out;
}

Expected<std::vector<Tensor>> downloadAll(const std::vector<DeviceTensor>& device) {
  std::vector<Tensor> out;
  for (const DeviceTensor& d : device) {
    auto t = d.download();
    if (!t) return t.error();
    out.push_back(std::move(*t));
  }
  return out;
}

}  // namespace

Status TrainStep::prefetch(const std::vector<Tensor>& data) {
  KILN_TRY(checkData(data));
  if (!deviceResident()) return Status();
  if (prefetched_.valid()) prefetched_.wait();
  prefetchedHost_ = data;
  prefetched_ = std::async(std::launch::async, [this] { return uploadBatch(prefetchedHost_, k_, micro_); });
  return Status();
}

Expected<StepResult> TrainStep::stepDevice(const std::vector<Tensor>& data, float lr) {
  Expected<std::vector<DeviceTensor>> batch = Error("");
  if (prefetched_.valid()) {
    batch = prefetched_.get();
    if (batch && prefetchedHost_ != data) batch = uploadBatch(data, k_, micro_);
    prefetchedHost_.clear();
  } else {
    batch = uploadBatch(data, k_, micro_);
  }
  if (!batch) return batch.error();
  size_t numData = data.size(), numParams = dParams_.size(), first = 1 + numMetrics_;
  auto microSlice = [&](int64_t i) {
    return std::vector<DeviceTensor>(batch->begin() + i * numData, batch->begin() + (i + 1) * numData);
  };
  auto scalar = [&](double v) { return DeviceTensor::upload(Tensor::scalar(DType::F32, v)); };
  StepResult result;
  std::vector<DeviceTensor> acc;
  for (const TensorType& type : paramTypes_) {
    auto z = DeviceTensor::zeros(type);
    if (!z) return z.error();
    acc.push_back(std::move(*z));
  }
  auto forward = [&](const std::vector<DeviceTensor>& out) -> Status {
    auto host = downloadAll(std::vector<DeviceTensor>(out.begin(), out.begin() + first));
    if (!host) return host.error();
    addForward(result, *host, numMetrics_);
    return Status();
  };
  for (int64_t i = 0; i + 1 < k_; ++i) {
    ExecuteOptions eo;
    eo.donated.assign(2 * numParams + numData, false);
    for (size_t p = numParams; p < 2 * numParams; ++p) eo.donated[p] = true;  // the sums so far
    auto out = accumulate_->exe->runOnDevice(concat({dParams_, acc, microSlice(i)}), eo);
    if (!out) return out.error();
    KILN_TRY(forward(*out));
    acc.assign(out->begin() + first, out->end());
  }
  auto lrT = scalar(lr), stepT = scalar(static_cast<double>(stepCount_ + 1));
  if (!lrT) return lrT.error();
  if (!stepT) return stepT.error();
  std::vector<DeviceTensor> inputs = k_ == 1 ? concat({dParams_, dState_, microSlice(0), {*lrT, *stepT}})
                                             : concat({dParams_, dState_, acc, microSlice(k_ - 1), {*lrT, *stepT}});
  ExecuteOptions eo;
  eo.donated.assign(inputs.size(), false);
  size_t resident = numParams + dState_.size() + (k_ == 1 ? 0 : numParams);
  for (size_t p = 0; p < resident; ++p) eo.donated[p] = true;  // updated in place
  auto out = step_->exe->runOnDevice(inputs, eo);
  if (!out) return out.error();
  KILN_TRY(forward(*out));
  averageForward(result, k_);
  dParams_.assign(out->begin() + first, out->begin() + first + numParams);
  dState_.assign(out->begin() + first + numParams, out->end());
  ++stepCount_;
  return result;
}

Status TrainStep::setResident(std::vector<Tensor>& host, std::vector<DeviceTensor>& device,
                              const std::vector<Tensor>& values, const std::vector<std::string>& names) {
  if (values.size() != names.size())
    return Error("expected " + std::to_string(names.size()) + " tensors, got " + std::to_string(values.size()));
  for (size_t i = 0; i < values.size(); ++i) {
    const TensorType& want = paramTypes_[i % paramTypes_.size()];
    if (values[i].type() != want)
      return Error("%" + names[i] + ": expected " + want.str() + ", got " + values[i].type().str());
  }
  if (!deviceResident()) {
    host = values;
    return Status();
  }
  auto d = uploadAll(values);
  if (!d) return d.error();
  device = std::move(*d);
  return Status();
}

Expected<std::vector<Tensor>> TrainStep::getResident(const std::vector<Tensor>& host,
                                                      const std::vector<DeviceTensor>& device) const {
  if (!deviceResident()) return host;
  return downloadAll(device);
}

Expected<std::vector<Tensor>> TrainStep::params() const { return getResident(params_, dParams_); }
Status TrainStep::setParams(const std::vector<Tensor>& params) { return setResident(params_, dParams_, params, paramNames_); }
Expected<std::vector<Tensor>> TrainStep::state() const { return getResident(state_, dState_); }
Status TrainStep::setState(const std::vector<Tensor>& state) { return setResident(state_, dState_, state, stateNames()); }

std::vector<std::string> TrainStep::stateNames() const {
  std::vector<std::string> names;
  for (const std::string& slot : passes::stateSlotNames(optimizer_.kind))
    for (const std::string& p : paramNames_) names.push_back(slot + "_" + p);
  return names;
}

Status TrainStep::save(const std::string& dir) const {
  Checkpoint ckpt;
  ckpt.step = stepCount_;
  ckpt.optimizer = std::string(passes::optimizerName(optimizer_.kind));
  auto params = this->params();
  if (!params) return params.error();
  auto state = this->state();
  if (!state) return state.error();
  for (size_t i = 0; i < params->size(); ++i) ckpt.tensors.emplace_back(paramNames_[i], (*params)[i]);
  std::vector<std::string> names = stateNames();
  for (size_t i = 0; i < state->size(); ++i) ckpt.tensors.emplace_back(names[i], (*state)[i]);
  return writeCheckpoint(dir, ckpt);
}

Status TrainStep::load(const std::string& dir) {
  auto ckpt = readCheckpoint(dir);
  if (!ckpt) return ckpt.error();
  if (ckpt->optimizer != passes::optimizerName(optimizer_.kind))
    return Error("checkpoint " + dir + " was written by the " + ckpt->optimizer + " optimizer, not " +
                 std::string(passes::optimizerName(optimizer_.kind)));
  auto pick = [&](const std::vector<std::string>& names) -> Expected<std::vector<Tensor>> {
    std::vector<Tensor> out;
    for (const std::string& name : names) {
      auto it = std::find_if(ckpt->tensors.begin(), ckpt->tensors.end(), [&](const auto& e) { return e.first == name; });
      if (it == ckpt->tensors.end()) return Error("checkpoint " + dir + " has no tensor " + name);
      out.push_back(it->second);
    }
    return out;
  };
  auto params = pick(paramNames_);
  if (!params) return params.error();
  auto state = pick(stateNames());
  if (!state) return state.error();
  KILN_TRY(setParams(*params));
  KILN_TRY(setState(*state));
  stepCount_ = ckpt->step;
  return Status();
}

}  // namespace kiln
