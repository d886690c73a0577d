// Kernel sharing across constants. The cost is one scalar load per kernel launch where an
// immediate was; the gain is one LLVM compile for all the blocks of a deep network whose kernels
// differ only in a constant (10k-op residual benchmark: 836 distinct kernels -> 4).
#include "passes/share_kernels.h"

#include <string>
#include <unordered_map>
#include <vector>

#include "ir/constant_data.h"

namespace kiln::passes {

namespace {

// A one-element constant inside a fusion body: what may become an input of the kernel.
bool isSharable(const Op& op) {
  return op.kind() == OpKind::Constant && !isConstantData(op) && op.attr("value").getDense().numElements() == 1;
}

bool isLibraryFusion(const Op& fusion) {
  const Attr* kind = fusion.findAttr("kind");
  return kind && kind->getString() == "library";
}

// The fusion's body as text with the values of sharable constants left out: equal keys, kernels
// equal but for those values. Values from outside the body are numbered in order of first use,
// so `add %a, %a` and `add %a, %b` differ.
std::string shapeKey(const Op& fusion) {
  std::string key;
  for (const auto& [name, value] : fusion.attrs()) key += name + "=" + value.str() + ";";
  for (size_t i = 0; i < fusion.numResults(); ++i) key += fusion.result(i)->type().str() + ",";
  key += "\n";
  std::unordered_map<const Value*, std::string> local;
  size_t inputs = 0;
  const Block& body = *fusion.region(0);
  for (const auto& opPtr : body.ops()) {
    const Op& op = *opPtr;
    key += std::string(op.name());
    for (const Value* v : op.operands()) {
      auto it = local.find(v);
      if (it == local.end())
        it = local.emplace(v, "in" + std::to_string(inputs++) + ":" + v->type().str()).first;
      key += " " + it->second;
    }
    bool sharable = isSharable(op);
    for (const auto& [name, value] : op.attrs())
      if (!(sharable && name == "value")) key += " " + name + "=" + value.str();
    for (const Value* r : op.results()) {
      std::string id = "%" + std::to_string(local.size());
      local.emplace(r, id);
      key += " " + id + ":" + r->type().str();
    }
    key += "\n";
  }
  return key;
}

std::vector<Op*> sharableConstants(Op& fusion) {
  std::vector<Op*> out;
  for (auto& op : fusion.region(0)->ops())
    if (isSharable(*op)) out.push_back(op.get());
  return out;
}

// Moves `constant` out of its fusion body to just before the fusion, as constant data.
void hoist(Op& fusion, Op& constant) {
  Block* outer = fusion.parentBlock();
  std::vector<TensorType> types{constant.result()->type()};
  Op* data = outer->insertBefore(&fusion, Op::create(OpKind::Constant, {}, types,
                                                     {{"value", constant.attr("value")}, {"data", Attr(true)}},
                                                     constant.loc()));
  data->result()->setName(constant.result()->name());
  constant.result()->replaceAllUsesWith(data->result());
  constant.parentBlock()->erase(&constant);
}

bool shareInBlock(Block& block, PassContext& context) {
  bool changed = false;
  std::unordered_map<std::string, std::vector<Op*>> groups;
  std::vector<std::string> order;  // keys in program order: deterministic output
  for (auto& opPtr : block.ops()) {
    Op* op = opPtr.get();
    for (size_t r = 0; r < op->numRegions(); ++r)
      if (op->kind() != OpKind::Fusion) changed |= shareInBlock(*op->region(r), context);
    if (op->kind() != OpKind::Fusion || isLibraryFusion(*op)) continue;
    auto [it, fresh] = groups.try_emplace(shapeKey(*op));
    if (fresh) order.push_back(it->first);
    it->second.push_back(op);
  }
  for (const std::string& key : order) {
    const std::vector<Op*>& members = groups[key];
    if (members.size() < 2) continue;
    std::vector<std::vector<Op*>> constants;
    for (Op* fusion : members) constants.push_back(sharableConstants(*fusion));
    std::vector<bool> differs(constants[0].size(), false);
    size_t hoisted = 0;
    for (size_t c = 0; c < differs.size(); ++c) {
      const Tensor& first = constants[0][c]->attr("value").getDense();
      for (size_t m = 1; m < members.size() && !differs[c]; ++m)
        differs[c] = !(first == constants[m][c]->attr("value").getDense());
      hoisted += differs[c];
    }
    if (hoisted == 0) continue;
    for (size_t m = 0; m < members.size(); ++m)
      for (size_t c = 0; c < differs.size(); ++c)
        if (differs[c]) hoist(*members[m], *constants[m][c]);
    context.remark(*members[0], std::to_string(members.size()) + " kernels equal but for " + std::to_string(hoisted) +
                                    " constant(s) read them as data and share one compiled kernel");
    changed = true;
  }
  return changed;
}

}  // namespace

PassResult shareKernels(Module& module, PassContext& context) {
  bool changed = false;
  for (const auto& f : module.functions()) changed |= shareInBlock(f->body(), context);
  return changed;
}

}  // namespace kiln::passes
