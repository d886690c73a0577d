// Common-subexpression elimination with scoped lookup: an op may be replaced by an identical op
// earlier in its own block or earlier in an enclosing block (those dominate it), never by one in a
// sibling region (that one is out of scope). The first op is kept; later copies are RAUW'd and
// erased. Program order drives every decision, so the result is deterministic.
#include "passes/cse.h"

#include <bit>
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "ir/constant_data.h"

namespace kiln::passes {

namespace {
// Attribute values compare with Attr::operator==, except floats: 0.0 == -0.0 there, but
// `pad {value = -0.0}` and `pad {value = 0.0}` produce different bits.
bool sameAttr(const Attr& a, const Attr& b) {
  if (a.isFloat() && b.isFloat()) return std::bit_cast<uint64_t>(a.getNumber()) == std::bit_cast<uint64_t>(b.getNumber());
  return a == b;
}

// Attributes as the op means them: one written explicitly equal to the default matches one left
// out. Computed defaults ("all axes") have no value to compare, so only absent-vs-absent matches.
bool sameAttrs(const Op& a, const Op& b) {
  for (const AttrSpec& spec : a.info().attrs) {
    const Attr* x = a.findAttr(spec.name);
    const Attr* y = b.findAttr(spec.name);
    if (!x && spec.defaultValue) x = &*spec.defaultValue;
    if (!y && spec.defaultValue) y = &*spec.defaultValue;
    if (!x || !y) {
      if (x != y) return false;
      continue;
    }
    if (!sameAttr(*x, *y)) return false;
  }
  return true;
}

bool identical(const Op& a, const Op& b) {
  if (a.kind() != b.kind() || a.operands() != b.operands() || a.numResults() != b.numResults()) return false;
  for (size_t i = 0; i < a.numResults(); ++i)
    if (a.result(i)->type() != b.result(i)->type()) return false;
  return sameAttrs(a, b);
}

// Region ops would need their bodies compared structurally, and terminators are not values.
bool isCandidate(const Op& op) { return op.numRegions() == 0 && op.info().cls != OpClass::Terminator; }

// Operands, result shapes and, for a constant, its value (a sample of it: identical() compares
// the rest): ops that differ only there (the many scalar constants of a big graph, weights of
// equal shape) must not share a bucket, or finding a match would be quadratic.
size_t hashOp(const Op& op) {
  size_t h = std::hash<int>()(static_cast<int>(op.kind()));
  for (Value* v : op.operands()) h = h * 31 + std::hash<const void*>()(v);
  for (Value* r : op.results()) h = h * 31 + std::hash<std::string>()(r->type().str());
  if (op.kind() == OpKind::Constant) h = h * 31 + sampledContentHash(op.attr("value").getDense());
  return h;
}

// The ops visible at the current point: one table per enclosing block, innermost last.
class Scopes {
 public:
  using Table = std::unordered_map<size_t, std::vector<Op*>>;

  Op* find(const Op& op, size_t hash) const {
    for (auto scope = tables_.rbegin(); scope != tables_.rend(); ++scope) {
      auto it = scope->find(hash);
      if (it == scope->end()) continue;
      for (Op* earlier : it->second)
        if (identical(*earlier, op)) return earlier;
    }
    return nullptr;
  }
  void add(Op* op, size_t hash) { tables_.back()[hash].push_back(op); }
  void push() { tables_.emplace_back(); }
  void pop() { tables_.pop_back(); }

 private:
  std::vector<Table> tables_;
};

bool cseBlock(Block& block, Scopes& scopes) {
  bool changed = false;
  scopes.push();
  auto& ops = block.ops();
  for (auto it = ops.begin(); it != ops.end();) {
    Op* op = it->get();
    // Each region is its own scope: it sees this block's earlier ops, its siblings never see it.
    for (size_t r = 0; r < op->numRegions(); ++r) changed |= cseBlock(*op->region(r), scopes);
    if (!isCandidate(*op)) {
      ++it;
      continue;
    }
    size_t hash = hashOp(*op);
    Op* earlier = scopes.find(*op, hash);
    if (!earlier) {
      scopes.add(op, hash);
      ++it;
      continue;
    }
    for (size_t i = 0; i < op->numResults(); ++i) op->result(i)->replaceAllUsesWith(earlier->result(i));
    it = ops.erase(it);
    changed = true;
  }
  scopes.pop();
  return changed;
}
}  // namespace

PassResult eliminateCommonSubexpressions(Module& module, PassContext&) {
  bool changed = false;
  for (const auto& f : module.functions()) {
    Scopes scopes;
    changed |= cseBlock(f->body(), scopes);
  }
  return changed;
}

}  // namespace kiln::passes
