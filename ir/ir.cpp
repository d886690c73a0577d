// Ownership, use lists and mutation of the IR objects declared in ir.h.
#include "ir/ir.h"

#include <algorithm>

namespace kiln {

Block* Value::parentBlock() const { return def_ ? def_->parentBlock() : block_; }

void Value::replaceAllUsesWith(Value* other) {
  if (other == this) return;
  std::vector<Use> uses = std::move(uses_);
  uses_.clear();
  for (const Use& u : uses) {
    u.user->operands_[u.index] = other;
    other->uses_.push_back(u);
  }
}

void Value::removeUse(Op* user, unsigned index) {
  auto it = std::find_if(uses_.begin(), uses_.end(), [&](const Use& u) { return u.user == user && u.index == index; });
  KILN_INTERNAL_CHECK(it != uses_.end(), "use list out of sync");
  uses_.erase(it);
}

std::unique_ptr<Op> Op::create(OpKind kind, const std::vector<Value*>& operands,
                               const std::vector<TensorType>& resultTypes, AttrList attrs, SourceLoc loc) {
  std::unique_ptr<Op> op(new Op(kind, std::move(loc)));
  op->operands_ = operands;
  for (unsigned i = 0; i < operands.size(); ++i) {
    KILN_INTERNAL_CHECK(operands[i] != nullptr, "null operand");
    operands[i]->uses_.push_back({op.get(), i});
  }
  op->setResultTypes(resultTypes);
  for (auto& [name, value] : attrs) op->setAttr(name, std::move(value));
  return op;
}

Op::~Op() {
  // Regions first: their ops may use values defined before this op.
  while (!regions_.empty()) regions_.pop_back();
  for (unsigned i = 0; i < operands_.size(); ++i) operands_[i]->removeUse(this, i);
}

void Op::setOperand(size_t i, Value* v) {
  operands_[i]->removeUse(this, static_cast<unsigned>(i));
  operands_[i] = v;
  v->uses_.push_back({this, static_cast<unsigned>(i)});
}

std::vector<TensorType> Op::operandTypes() const {
  std::vector<TensorType> types;
  for (Value* v : operands_) types.push_back(v->type());
  return types;
}

std::vector<Value*> Op::results() const {
  std::vector<Value*> out;
  for (const auto& r : results_) out.push_back(r.get());
  return out;
}

void Op::setResultTypes(const std::vector<TensorType>& types) {
  if (types.size() == results_.size()) {
    for (size_t i = 0; i < types.size(); ++i) results_[i]->setType(types[i]);
    return;
  }
  for (const auto& r : results_) KILN_INTERNAL_CHECK(!r->hasUses(), "changing the result count of a used op");
  std::vector<std::string> names;
  for (const auto& r : results_) names.push_back(r->name());
  results_.clear();
  for (size_t i = 0; i < types.size(); ++i) {
    auto v = std::make_unique<Value>(types[i], i < names.size() ? names[i] : std::string());
    v->def_ = this;
    v->index_ = static_cast<unsigned>(i);
    results_.push_back(std::move(v));
  }
}

const Attr* Op::findAttr(std::string_view name) const {
  for (const auto& [n, a] : attrs_)
    if (n == name) return &a;
  return nullptr;
}

void Op::setAttr(std::string_view name, Attr value) {
  for (auto& [n, a] : attrs_) {
    if (n == name) {
      a = std::move(value);
      return;
    }
  }
  // Keep the table's order so printing is canonical; unknown names go last (the verifier rejects them).
  auto rank = [&](std::string_view n) {
    const auto& specs = info().attrs;
    for (size_t i = 0; i < specs.size(); ++i)
      if (specs[i].name == n) return i;
    return specs.size();
  };
  auto pos = std::find_if(attrs_.begin(), attrs_.end(), [&](const auto& p) { return rank(p.first) > rank(name); });
  attrs_.insert(pos, {std::string(name), std::move(value)});
}

void Op::removeAttr(std::string_view name) {
  std::erase_if(attrs_, [&](const auto& a) { return a.first == name; });
}

Attr Op::attr(std::string_view name) const {
  if (const Attr* a = findAttr(name)) return *a;
  const AttrSpec* spec = info().findAttr(name);
  KILN_INTERNAL_CHECK(spec != nullptr, std::string(this->name()) + " has no attribute " + std::string(name));
  KILN_INTERNAL_CHECK(spec->defaultValue.has_value(),
                      std::string(this->name()) + "." + std::string(name) + " has no fixed default");
  return *spec->defaultValue;
}

std::vector<int64_t> Op::intsAttr(std::string_view name) const {
  auto list = attr(name).getIntList();
  KILN_INTERNAL_CHECK(list.has_value(), std::string(name) + " is not an integer list (unverified op?)");
  return *list;
}

Block* Op::addRegion() {
  regions_.push_back(std::make_unique<Block>());
  regions_.back()->parentOp_ = this;
  return regions_.back().get();
}

Op* Op::parentOp() const { return parent_ ? parent_->parentOp() : nullptr; }

Block::~Block() {
  // Users come after definitions: destroy from the back so no op outlives a value it uses.
  while (!ops_.empty()) ops_.pop_back();
}

Value* Block::addArgument(TensorType type, std::string name) {
  auto v = std::make_unique<Value>(std::move(type), std::move(name));
  v->block_ = this;
  v->index_ = static_cast<unsigned>(args_.size());
  args_.push_back(std::move(v));
  return args_.back().get();
}

std::vector<Value*> Block::arguments() const {
  std::vector<Value*> out;
  for (const auto& a : args_) out.push_back(a.get());
  return out;
}

Op* Block::append(std::unique_ptr<Op> op) {
  op->parent_ = this;
  ops_.push_back(std::move(op));
  ops_.back()->position_ = std::prev(ops_.end());
  return ops_.back().get();
}

Op* Block::insertBefore(Op* position, std::unique_ptr<Op> op) {
  KILN_INTERNAL_CHECK(position->parent_ == this, "insertBefore: position is not in this block");
  op->parent_ = this;
  auto it = ops_.insert(position->position_, std::move(op));
  (*it)->position_ = it;
  return it->get();
}

void Block::erase(Op* op) {
  for (Value* r : op->results()) KILN_INTERNAL_CHECK(!r->hasUses(), "erasing an op whose results are used");
  KILN_INTERNAL_CHECK(op->parent_ == this, "erase: op is not in this block");
  ops_.erase(op->position_);
}

std::unique_ptr<Op> Block::take(Op* op) {
  KILN_INTERNAL_CHECK(op->parent_ == this, "take: op is not in this block");
  std::unique_ptr<Op> taken = std::move(*op->position_);
  ops_.erase(op->position_);
  taken->parent_ = nullptr;
  return taken;
}

std::vector<std::unique_ptr<Op>> Block::takeAll(const std::vector<Op*>& ops) {
  std::vector<std::unique_ptr<Op>> taken;
  taken.reserve(ops.size());
  for (Op* op : ops) taken.push_back(take(op));
  return taken;
}

Op* Block::terminator() const {
  if (ops_.empty()) return nullptr;
  Op* last = ops_.back().get();
  return last->info().cls == OpClass::Terminator ? last : nullptr;
}

std::vector<TensorType> Function::paramTypes() const {
  std::vector<TensorType> out;
  for (Value* p : params()) out.push_back(p->type());
  return out;
}

Function* Module::addFunction(std::string name) {
  functions_.push_back(std::make_unique<Function>(std::move(name)));
  return functions_.back().get();
}

Function* Module::lookup(std::string_view name) const {
  for (const auto& f : functions_)
    if (f->name() == name) return f.get();
  return nullptr;
}

Function* Module::entry() const {
  if (Function* m = lookup("main")) return m;
  return functions_.empty() ? nullptr : functions_.front().get();
}

Expected<Function*> Module::find(std::string_view name, const std::string& where) const {
  if (name.empty()) {
    if (Function* f = entry()) return f;
    return Error(where + " has no functions");
  }
  if (name[0] == '@') name.remove_prefix(1);
  if (Function* f = lookup(name)) return f;
  std::string names;
  for (const auto& f : functions_) names += (names.empty() ? "@" : ", @") + f->name();
  return Error("no function @" + std::string(name) + " in " + where + " (functions: " + names + ")");
}

}  // namespace kiln
