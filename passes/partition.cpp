// partitionByDevice: levels first (one walk in program order), then each stage's function built
// from copies of its ops, its parameters and results added as other stages turn out to need them.
#include "passes/partition.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "ir/clone.h"
#include "passes/placement.h"

namespace kiln::passes {

namespace {

class Partitioner {
 public:
  explicit Partitioner(const Function& placed) : placed_(placed), body_(placed.body()) {
    for (size_t i = 0; i < placed.params().size(); ++i) paramIndex_[placed.params()[i]] = static_cast<int>(i);
  }

  Expected<Partition> run() {
    assignLevels();
    out_.module = std::make_unique<Module>();
    for (const auto& [key, index] : stageIndex_) {
      Stage stage;
      stage.level = key.first;
      stage.device = key.second;
      stage.function = out_.module->addFunction(placed_.name() + ".d" + std::to_string(stage.device) + ".s" +
                                                std::to_string(stage.level));
      stage.function->setLoc(placed_.loc());
      out_.stages.push_back(stage);
      out_.devices = std::max(out_.devices, stage.device + 1);
    }
    maps_.resize(out_.stages.size());
    results_.resize(out_.stages.size());
    for (const auto& op : body_.ops()) {
      if (op.get() == body_.terminator() || op->kind() == OpKind::Transfer) continue;
      int s = stageOf_.at(op.get());
      for (const Value* v : usedValues(*op)) bindInput(s, v);
      Op* copy = cloneOp(*op, out_.stages[s].function->body(), maps_[s]);
      copy->removeAttr(kDeviceAttr);
    }
    for (const Value* v : body_.terminator()->operands()) out_.results.push_back(sourceOf(v));
    for (size_t s = 0; s < out_.stages.size(); ++s) {
      Function& f = *out_.stages[s].function;
      std::vector<Value*> returned;
      std::vector<TensorType> types;
      for (const Value* v : results_[s]) {
        returned.push_back(maps_[s].at(v));
        types.push_back(v->type());
      }
      f.body().append(Op::create(OpKind::Return, returned, {}, {}, placed_.loc()));
      f.setResultTypes(types);
    }
    return std::move(out_);
  }

 private:
  // Transfers crossed on the longest path from the parameters to `v`.
  int levelOf(const Value* v) const {
    const Op* def = v->definingOp();
    if (!def) return 0;
    if (def->kind() == OpKind::Transfer) return levelOf(def->operand(0)) + 1;
    return level_.at(def);
  }

  // The top-level values `op` reads: its operands and what its regions capture from outside.
  std::vector<const Value*> usedValues(const Op& op) const {
    std::vector<const Value*> used(op.operands().begin(), op.operands().end());
    for (size_t r = 0; r < op.numRegions(); ++r)
      walkOps(*op.region(r), [&](const Op* inner) {
        for (const Value* v : inner->operands()) {
          const Op* def = v->definingOp();
          bool outside = def ? def->parentBlock() == &body_ : v->parentBlock() == &body_;
          if (outside) used.push_back(v);
        }
      });
    return used;
  }

  void assignLevels() {
    std::map<std::pair<int, int>, int> keys;
    for (const auto& op : body_.ops()) {
      if (op.get() == body_.terminator() || op->kind() == OpKind::Transfer) continue;
      int level = 0;
      for (const Value* v : usedValues(*op)) level = std::max(level, levelOf(v));
      level_[op.get()] = level;
      keys[{level, deviceOf(*op)}] = 0;
    }
    int next = 0;
    for (auto& [key, index] : keys) index = next++;
    stageIndex_ = keys;
    for (const auto& [op, level] : level_) stageOf_[op] = stageIndex_.at({level, deviceOf(*op)});
  }

  // Where `v` comes from, as seen from outside the stage computing it: a parameter, or a result
  // of its stage (made one if it is not yet); through transfers to the value they copy.
  StageSource sourceOf(const Value* v) {
    const Op* def = v->definingOp();
    if (!def) return {-1, paramIndex_.at(v), false, 0};
    if (def->kind() == OpKind::Transfer) {
      StageSource s = sourceOf(def->operand(0));
      s.from = s.transfer ? s.from : static_cast<int>(def->intAttr("from"));
      s.transfer = true;
      return s;
    }
    int s = stageOf_.at(def);
    auto& results = results_[s];
    auto it = std::find(results.begin(), results.end(), v);
    if (it == results.end()) it = results.insert(results.end(), v);
    return {s, static_cast<int>(it - results.begin()), false, out_.stages[s].device};
  }

  // Makes `v` readable in stage `s`: computed there already, or a new parameter.
  void bindInput(int s, const Value* v) {
    if (maps_[s].count(v)) return;  // computed there, or already a parameter
    Stage& stage = out_.stages[s];
    stage.inputs.push_back(sourceOf(v));
    if (!stage.inputs.back().transfer) stage.inputs.back().from = stage.device;
    maps_[s][v] = stage.function->body().addArgument(v->type(), v->name());
  }

  const Function& placed_;
  const Block& body_;
  std::unordered_map<const Value*, int> paramIndex_;
  std::unordered_map<const Op*, int> level_;
  std::map<std::pair<int, int>, int> stageIndex_;  // (level, device) -> stage
  std::unordered_map<const Op*, int> stageOf_;
  Partition out_;
  std::vector<std::unordered_map<const Value*, Value*>> maps_;  // per stage: placed value -> its copy
  std::vector<std::vector<const Value*>> results_;              // per stage: placed values it returns
};

}  // namespace

Expected<Partition> partitionByDevice(const Function& placed) { return Partitioner(placed).run(); }

}  // namespace kiln::passes
