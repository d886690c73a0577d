// cloneFunction: a walk over the function that maps every value to its copy as it goes; SSA
// order guarantees a value is copied before any use of it.
#include "ir/clone.h"

#include <string>
#include <unordered_map>

namespace kiln {

namespace {

class Cloner {
 public:
  explicit Cloner(std::unordered_map<const Value*, Value*>& map) : map_(map) {}

  void cloneBlock(const Block& from, Block& to) {
    for (size_t i = 0; i < from.numArguments(); ++i) {
      const Value* arg = from.argument(i);
      map_[arg] = to.addArgument(arg->type(), arg->name());
    }
    cloneOps(from, to, /*terminator=*/true);
  }

  std::vector<Value*> inlineBlock(const Block& from, Block& to, const std::vector<Value*>& args) {
    for (size_t i = 0; i < args.size(); ++i) map_[from.argument(i)] = args[i];
    cloneOps(from, to, /*terminator=*/false);
    std::vector<Value*> results;
    for (const Value* v : from.terminator()->operands()) results.push_back(lookup(v));
    return results;
  }

  Op* cloneOp(const Op& op, Block& to) {
    std::vector<Value*> operands;
    for (const Value* v : op.operands()) operands.push_back(lookup(v));
    std::vector<TensorType> types;
    for (const Value* r : op.results()) types.push_back(r->type());
    Op* copy = to.append(Op::create(op.kind(), operands, types, op.attrs(), op.loc()));
    for (size_t i = 0; i < op.numResults(); ++i) {
      copy->result(i)->setName(op.result(i)->name());
      map_[op.result(i)] = copy->result(i);
    }
    for (size_t r = 0; r < op.numRegions(); ++r) cloneBlock(*op.region(r), *copy->addRegion());
    return copy;
  }

 private:
  void cloneOps(const Block& from, Block& to, bool terminator) {
    for (const auto& op : from.ops())
      if (terminator || op.get() != from.terminator()) cloneOp(*op, to);
  }

  Value* lookup(const Value* v) const {
    auto it = map_.find(v);
    KILN_INTERNAL_CHECK(it != map_.end(), "cloneFunction: a value is used before it is defined");
    return it->second;
  }
  std::unordered_map<const Value*, Value*>& map_;  // lookups only, never iterated
};

}  // namespace

Function* cloneFunctionInto(Module& module, const Function& function, std::string name) {
  Function* copy = module.addFunction(std::move(name));
  copy->setLoc(function.loc());
  copy->setResultTypes(function.resultTypes());
  std::unordered_map<const Value*, Value*> map;
  Cloner(map).cloneBlock(function.body(), copy->body());
  return copy;
}

std::vector<Value*> inlineBlock(const Block& from, Block& into, const std::vector<Value*>& args) {
  KILN_INTERNAL_CHECK(args.size() == from.numArguments(), "inlineBlock: one value per argument");
  std::unordered_map<const Value*, Value*> map;
  return Cloner(map).inlineBlock(from, into, args);
}

Op* cloneOp(const Op& op, Block& into, std::unordered_map<const Value*, Value*>& map) { return Cloner(map).cloneOp(op, into); }

std::unique_ptr<Module> cloneFunction(const Function& function) {
  auto module = std::make_unique<Module>();
  cloneFunctionInto(*module, function, function.name());
  return module;
}

}  // namespace kiln
