// Step functions: f is differentiated (passes/grad.h) in a scratch module, the gradient function
// is inlined into a new function with the step's parameter layout, and the optimizer update is
// appended after it, so one function holds forward, backward and update.
#include "passes/train_step.h"

#include <algorithm>

#include "ir/builder.h"
#include "ir/clone.h"
#include "passes/data_parallel.h"
#include "passes/grad.h"

namespace kiln::passes {

Expected<StepLayout> stepLayout(const Function& f, const TrainSpec& spec) {
  StepLayout layout;
  std::vector<Value*> params = f.params();
  for (const std::string& name : spec.params) {
    auto it = std::find_if(params.begin(), params.end(), [&](Value* v) { return v->name() == name; });
    if (it == params.end()) return Error("@" + f.name() + " has no parameter %" + name + " to train", f.loc());
    int index = static_cast<int>(it - params.begin());
    if (std::count(layout.paramIndex.begin(), layout.paramIndex.end(), index))
      return Error("parameter %" + name + " is named twice", f.loc());
    layout.paramIndex.push_back(index);
  }
  for (int i = 0; i < static_cast<int>(params.size()); ++i)
    if (!std::count(layout.paramIndex.begin(), layout.paramIndex.end(), i)) layout.dataIndex.push_back(i);
  if (f.resultTypes().empty()) return Error("@" + f.name() + " returns nothing; a loss function returns a scalar loss first", f.loc());
  layout.numMetrics = static_cast<int>(f.resultTypes().size()) - 1;
  layout.stateSlots = stateSlots(spec.optimizer.kind);
  return layout;
}

namespace {

enum class Mode { Step, Accumulate, AccumulateStep };

Expected<Function*> build(Module& module, const Function& f, const TrainSpec& spec, Mode mode, int64_t k,
                          std::string name, std::string_view suffix) {
  auto layout = stepLayout(f, spec);
  if (!layout) return layout.error();
  // Differentiate a copy so that `module` receives only the step function itself.
  std::unique_ptr<Module> scratch = cloneFunction(f);
  auto grad = differentiate(*scratch, *scratch->functions()[0], spec.params, f.name() + "_grad");
  if (!grad) return grad.error();

  Function* fn = module.addFunction(name.empty() ? f.name() + std::string(suffix) : std::move(name));
  fn->setLoc(f.loc());
  Block& body = fn->body();
  std::vector<Value*> fParams = f.params();
  std::vector<Value*> args(fParams.size());
  std::vector<Value*> params, acc;
  std::vector<std::vector<Value*>> state(layout->stateSlots);
  for (int i : layout->paramIndex) params.push_back(args[i] = body.addArgument(fParams[i]->type(), fParams[i]->name()));
  bool update = mode != Mode::Accumulate;
  std::vector<std::string> slots = stateSlotNames(spec.optimizer.kind);
  if (update)
    for (int s = 0; s < layout->stateSlots; ++s)
      for (int i : layout->paramIndex) state[s].push_back(body.addArgument(fParams[i]->type(), slots[s] + "_" + fParams[i]->name()));
  if (mode != Mode::Step)
    for (int i : layout->paramIndex) acc.push_back(body.addArgument(fParams[i]->type(), "acc_" + fParams[i]->name()));
  for (int i : layout->dataIndex) args[i] = body.addArgument(fParams[i]->type(), fParams[i]->name());
  Value* lr = update ? body.addArgument({DType::F32, {}}, "lr") : nullptr;
  Value* step = update ? body.addArgument({DType::F32, {}}, "step") : nullptr;

  std::vector<Value*> out = inlineBlock((*grad)->body(), body, args);
  size_t numForward = 1 + layout->numMetrics;
  std::vector<Value*> results(out.begin(), out.begin() + numForward);
  std::vector<Value*> grads(out.begin() + numForward, out.end());

  GraphBuilder b(*fn);
  b.setLoc(f.loc());
  if (mode != Mode::Step)
    for (size_t i = 0; i < grads.size(); ++i) grads[i] = b.op(OpKind::Add, {acc[i], grads[i]});
  if (mode == Mode::AccumulateStep)  // the mean of K micro-batch gradients
    for (Value*& g : grads) g = b.op(OpKind::Div, {g, b.scalar(g ? g->type().dtype : DType::F32, static_cast<double>(k))});
  if (spec.dataParallel) {
    // Every replica reports the global batch's loss and metrics (scalars: one small all_reduce each).
    for (Value*& r : results) r = b.op(OpKind::AllReduce, {r}, {{"reduce", Attr("mean")}});
    if (update) grads = averageAcrossReplicas(b, grads, {spec.bucketBytes});
  }
  if (!update) {
    results.insert(results.end(), grads.begin(), grads.end());
    return b.finish(results);
  }
  UpdatedParams updated = appendOptimizerUpdate(b, spec.optimizer, params, grads, state, lr, step);
  results.insert(results.end(), updated.params.begin(), updated.params.end());
  for (const auto& slot : updated.state) results.insert(results.end(), slot.begin(), slot.end());
  return b.finish(results);
}

}  // namespace

Expected<Function*> buildTrainStep(Module& module, const Function& f, const TrainSpec& spec, std::string name) {
  return build(module, f, spec, Mode::Step, 1, std::move(name), "_step");
}

Expected<Function*> buildAccumulate(Module& module, const Function& f, const TrainSpec& spec, std::string name) {
  return build(module, f, spec, Mode::Accumulate, 1, std::move(name), "_accumulate");
}

Expected<Function*> buildAccumulateStep(Module& module, const Function& f, const TrainSpec& spec, int64_t k,
                                        std::string name) {
  if (k < 1) return Error("the number of micro-batches must be at least 1, not " + std::to_string(k));
  return build(module, f, spec, Mode::AccumulateStep, k, std::move(name), "_accumulate_step");
}

Expected<Function*> buildUpdate(Module& module, const Function& f, const TrainSpec& spec, int64_t k,
                                const std::vector<std::optional<int64_t>>& devices, std::string name) {
  auto layout = stepLayout(f, spec);
  if (!layout) return layout.error();
  if (k < 1) return Error("the number of micro-batches must be at least 1, not " + std::to_string(k));
  if (spec.dataParallel) return Error("a pipelined step does not average gradients across replicas yet", f.loc());
  GraphBuilder b(module, name.empty() ? f.name() + "_update" : std::move(name));
  b.setLoc(f.loc());
  std::vector<Value*> fParams = f.params();
  std::vector<Value*> params, acc;
  std::vector<std::vector<Value*>> state(layout->stateSlots);
  std::vector<std::string> slots = stateSlotNames(spec.optimizer.kind);
  for (int i : layout->paramIndex) params.push_back(b.param(fParams[i]->type(), fParams[i]->name()));
  for (int s = 0; s < layout->stateSlots; ++s)
    for (int i : layout->paramIndex) state[s].push_back(b.param(fParams[i]->type(), slots[s] + "_" + fParams[i]->name()));
  for (int i : layout->paramIndex) acc.push_back(b.param(fParams[i]->type(), "acc_" + fParams[i]->name()));
  Value* lr = b.param({DType::F32, {}}, "lr");
  Value* step = b.param({DType::F32, {}}, "step");
  std::vector<Value*> grads;
  for (size_t i = 0; i < acc.size(); ++i) {
    b.setDevice(i < devices.size() ? devices[i] : std::nullopt);
    grads.push_back(b.op(OpKind::Div, {acc[i], b.scalar(acc[i]->type().dtype, static_cast<double>(k))}));
  }
  b.setDevice(std::nullopt);
  UpdatedParams updated = appendOptimizerUpdate(b, spec.optimizer, params, grads, state, lr, step);
  std::vector<Value*> results = updated.params;
  for (const auto& slot : updated.state) results.insert(results.end(), slot.begin(), slot.end());
  return b.finish(results);
}

namespace {

// Re-infers the result types of every op in `block` (nested regions first) after argument types
// changed. Region arguments keep their types, so a `map` over the batch is refused by its infer rule.
Status reinfer(Block& block, int64_t batch) {
  for (auto& op : block.ops()) {
    for (size_t r = 0; r < op->numRegions(); ++r)
      if (Status s = reinfer(*op->region(r), batch); !s.ok()) return s;
    if (op->info().cls == OpClass::Terminator) continue;
    std::vector<TensorType> annotated;
    for (const Value* v : op->results()) annotated.push_back(v->type());
    auto types = inferResultTypes(*op, &annotated);
    if (!types)
      return Error(types.error().message() + " (after setting the batch size to " + std::to_string(batch) +
                       "; this op fixes the batch size: compute it from the data's shape, e.g. with -1 in a reshape)",
                   op->loc());
    for (size_t i = 0; i < op->numResults(); ++i) op->result(i)->setType((*types)[i]);
  }
  return Status();
}

}  // namespace

Expected<Function*> specializeBatch(Module& module, const Function& f, const std::vector<int>& dataIndex,
                                    int64_t batch, std::string name) {
  Function* copy = cloneFunctionInto(module, f, std::move(name));
  for (int i : dataIndex) {
    Value* arg = copy->body().argument(i);
    TensorType t = arg->type();
    if (t.rank() == 0) return Error("data parameter %" + arg->name() + " is a scalar: it has no batch axis", f.loc());
    t.shape[0] = batch;
    arg->setType(t);
  }
  if (Status s = reinfer(copy->body(), batch); !s.ok()) return s.error();
  std::vector<TensorType> results;
  for (const Value* v : copy->body().terminator()->operands()) results.push_back(v->type());
  copy->setResultTypes(results);
  return copy;
}

}  // namespace kiln::passes
