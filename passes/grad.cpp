// The `grad` transformation: copies the function, then walks its ops backwards, asking each op's
// derivative rule (ir/grad_rules.h) for its operands' cotangents and adding up the contributions
// of every use. Only "active" values get cotangents: floats that depend on a chosen parameter and
// that result 0 depends on, so constant subgraphs and metrics cost nothing.
#include "passes/grad.h"

#include <fmt/format.h>

#include <unordered_map>
#include <unordered_set>

#include "ir/builder.h"
#include "ir/clone.h"
#include "ir/grad_rules.h"
#include "passes/dce.h"
#include "passes/vectorize.h"

namespace kiln::passes {

namespace {

using ValueSet = std::unordered_set<const Value*>;

std::string locStr(const SourceLoc& loc) { return loc.known() ? fmt::format("line {}", loc.line) : "an unknown line"; }

// Every value an op reads: its operands and the outer values its regions use.
std::vector<Value*> inputsOf(const Op& op) {
  std::vector<Value*> inputs = op.operands();
  for (size_t r = 0; r < op.numRegions(); ++r) {
    std::unordered_set<const Block*> inner;
    walkOps(*op.region(r), [&](const Op* o) {
      for (size_t i = 0; i < o->numRegions(); ++i) inner.insert(o->region(i));
    });
    inner.insert(op.region(r));
    walkOps(*op.region(r), [&](const Op* o) {
      for (Value* v : o->operands())
        if (!inner.count(v->parentBlock())) inputs.push_back(v);
    });
  }
  return inputs;
}

// Values that depend on any of `sources`, in program order of the function body.
ValueSet dependents(const Block& body, const std::vector<Value*>& sources) {
  ValueSet varied(sources.begin(), sources.end());
  for (const auto& op : body.ops())
    for (Value* in : inputsOf(*op))
      if (varied.count(in)) {
        for (Value* r : op->results()) varied.insert(r);
        break;
      }
  return varied;
}

// Values that `target` depends on (itself included).
ValueSet dependencies(const Block& body, Value* target) {
  ValueSet needed{target};
  for (auto it = body.ops().rbegin(); it != body.ops().rend(); ++it) {
    const Op& op = **it;
    bool used = false;
    for (Value* r : op.results()) used = used || needed.count(r);
    if (!used) continue;
    for (Value* in : inputsOf(op)) needed.insert(in);
  }
  return needed;
}

bool anyIn(const std::vector<Value*>& values, const ValueSet& set) {
  for (Value* v : values)
    if (set.count(v)) return true;
  return false;
}

class Backprop {
 public:
  Backprop(Function& f, const ValueSet& active) : f_(f), active_(active), b_(f), ctx_(b_) {}

  // Cotangents of every active value, given d(loss)/d(loss) = 1.
  Status run(Value* loss) {
    addCotangent(loss, b_.scalar(loss->type().dtype, 1.0));
    std::vector<Op*> forward;
    for (const auto& op : f_.body().ops()) forward.push_back(op.get());
    for (auto it = forward.rbegin(); it != forward.rend(); ++it) KILN_TRY(visit(**it));
    b_.setDevice(std::nullopt);
    return b_.status();
  }

  // True if a cotangent, possibly an identically zero one, reached v from the loss.
  bool reached(const Value* v) const { return reached_.count(v) > 0; }
  Value* cotangent(Value* v) const {
    auto it = cotangents_.find(v);
    return it == cotangents_.end() ? nullptr : it->second;
  }
  GraphBuilder& builder() { return b_; }
  grad::Context& context() { return ctx_; }

 private:
  Status visit(const Op& op) {
    std::vector<Value*> dys;
    bool anyCotangent = false, anyReached = false;
    for (Value* r : op.results()) {
      dys.push_back(cotangent(r));
      anyCotangent = anyCotangent || dys.back();
      anyReached = anyReached || reached_.count(r);
    }
    std::vector<Value*> inputs = inputsOf(op);
    bool activeFloatInput = false;
    for (Value* in : inputs) activeFloatInput = activeFloatInput || (active_.count(in) && isFloat(in->type().dtype));
    if (!anyReached || !activeFloatInput) return {};
    if (!op.info().grad) return notDifferentiable(op);
    // Only zero cotangents arrive (through floor, say): the operands' are zero too.
    if (!anyCotangent) {
      for (Value* in : op.operands()) reached_.insert(in);
      return {};
    }
    b_.setLoc(op.loc());
    // Each gradient is computed where its forward op ran; a transfer's goes back to its source.
    const Attr* device = op.kind() == OpKind::Transfer ? op.findAttr("from") : op.findAttr(kDeviceAttr);
    b_.setDevice(device ? std::optional<int64_t>(device->getInt()) : std::nullopt);
    auto grads = op.info().grad(ctx_, op, dys);
    if (!grads) return Error(fmt::format("grad: {}: {}", op.name(), grads.error().message()), op.loc());
    if (Status s = b_.status(); !s) return Error(fmt::format("grad: {}: {}", op.name(), s.error().message()), op.loc());
    KILN_INTERNAL_CHECK(grads->size() == op.numOperands(), "grad rule of " + std::string(op.name()) + " returned the wrong count");
    for (size_t i = 0; i < op.numOperands(); ++i) {
      Value* in = op.operand(i);
      reached_.insert(in);
      if ((*grads)[i] && active_.count(in) && isFloat(in->type().dtype)) addCotangent(in, (*grads)[i]);
    }
    return {};
  }

  static Status notDifferentiable(const Op& op) {
    std::string why = op.kind() == OpKind::While ? " (its trip count depends on the data)"
                      : op.kind() == OpKind::Map ? " (it stays a loop: see `kiln explain` for why vectorize kept it)"
                                                 : "";
    return Error(fmt::format("grad: {} has no derivative{}; a gradient must flow through it here", op.name(), why),
                 op.loc());
  }

  void addCotangent(Value* v, Value* g) {
    KILN_INTERNAL_CHECK(!g || g->type() == v->type(),
                        "grad: cotangent " + g->type().str() + " for a value of type " + v->type().str());
    reached_.insert(v);
    Value*& slot = cotangents_[v];
    slot = slot ? ctx_.add(slot, g) : g;
  }

  Function& f_;
  const ValueSet& active_;
  GraphBuilder b_;
  grad::Context ctx_;
  std::unordered_map<const Value*, Value*> cotangents_;
  ValueSet reached_;
};

// Why parameter p gets no gradient although the loss depends on it: the first op on a path from p
// to the loss that has no derivative or turns floats into integers.
Error cutError(const Block& body, Value* p, const ValueSet& needed) {
  ValueSet fromP = dependents(body, {p});
  for (const auto& op : body.ops()) {
    if (!anyIn(inputsOf(*op), fromP) || !anyIn(op->results(), needed)) continue;
    bool floatOut = false;
    for (Value* r : op->results()) floatOut = floatOut || (needed.count(r) && isFloat(r->type().dtype));
    if (!op->info().grad || !floatOut)
      return Error(fmt::format("grad: the result depends on %{} only through {} at {}, which has no derivative",
                               p->name(), op->name(), locStr(op->loc())),
                   op->loc());
  }
  KILN_INTERNAL_CHECK(false, "grad: no cotangent reached %" + p->name() + " and no op cuts it off");
  return Error("");
}

Expected<std::vector<Value*>> resolveWrt(const Function& f, const std::vector<std::string>& wrt) {
  std::vector<Value*> params;
  for (const std::string& name : wrt) {
    Value* found = nullptr;
    for (Value* p : f.params())
      if (p->name() == name) found = p;
    if (!found) {
      std::string names;
      for (Value* p : f.params()) names += (names.empty() ? "%" : ", %") + p->name();
      return Error(fmt::format("grad: @{} has no parameter %{} (it has {})", f.name(), name, names), f.loc());
    }
    if (!isFloat(found->type().dtype))
      return Error(fmt::format("grad: parameter %{} is {}; only float parameters have gradients", name,
                               found->type().str()),
                   f.loc());
    for (Value* seen : params)
      if (seen == found) return Error(fmt::format("grad: parameter %{} is named twice", name), f.loc());
    params.push_back(found);
  }
  if (params.empty()) return Error("grad: name at least one parameter to differentiate with respect to", f.loc());
  return params;
}

}  // namespace

Expected<Function*> differentiate(Module& module, const Function& f, const std::vector<std::string>& wrt,
                                  std::string newName) {
  if (newName.empty()) newName = f.name() + "_grad";
  if (module.lookup(newName)) return Error(fmt::format("grad: the module already has a function @{}", newName), f.loc());
  if (f.resultTypes().empty() || f.resultTypes()[0].rank() != 0 || !isFloat(f.resultTypes()[0].dtype))
    return Error(fmt::format("grad: @{} must return a float scalar first (the value to differentiate), not {}", f.name(),
                             f.resultTypes().empty() ? std::string("nothing") : f.resultTypes()[0].str()),
                 f.loc());

  // Work on a scratch copy, so a failure leaves `module` as it was and maps are batched first.
  std::unique_ptr<Module> scratch = cloneFunction(f);
  PassContext context("grad");
  KILN_TRY(vectorizeMaps(*scratch, context));
  KILN_TRY(eliminateDeadCode(*scratch, context));
  Function& g = *scratch->entry();
  auto params = resolveWrt(g, wrt);
  if (!params) return params.error();

  Op* ret = g.body().terminator();
  std::vector<Value*> results = ret->operands();
  g.body().erase(ret);
  ValueSet needed = dependencies(g.body(), results[0]);
  ValueSet varied = dependents(g.body(), *params);
  ValueSet active;
  for (const Value* v : varied)
    if (needed.count(v)) active.insert(v);

  Backprop backprop(g, active);
  KILN_TRY(backprop.run(results[0]));
  for (Value* p : *params) {
    Value* dp = backprop.cotangent(p);
    if (!dp && needed.count(p) && !backprop.reached(p)) return cutError(g.body(), p, needed);
    results.push_back(dp ? dp : backprop.context().zeros(p->type()));
  }
  backprop.builder().setLoc(f.loc());
  KILN_TRY(backprop.builder().finish(results).status());
  // Rules also build cotangents of operands that are not active; they are dead.
  KILN_TRY(eliminateDeadCode(*scratch, context));
  return cloneFunctionInto(module, g, std::move(newName));
}

}  // namespace kiln::passes
