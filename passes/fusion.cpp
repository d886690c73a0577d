// The fusion pass: grow groups over each block, merge independent loop groups, then rewrite
// each group of two or more ops into a `fusion` op and restore a topological order.
#include "passes/fusion.h"

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "ir/constant_data.h"
#include "passes/fusion_rules.h"

namespace kiln::passes {

namespace {

// The most ops one kernel holds. Growing a kernel re-judges it as a whole at every step, and LLVM's
// optimiser and code generator take superlinear time on one huge function, so an unbounded kernel
// makes compile time quadratic in a long chain; 256 ops is far beyond any kernel of a real model
// (a transformer layer's largest is ~40) while keeping a 100k-op chain linear.
constexpr size_t kMaxOpsPerKernel = 256;

bool isSource(const Op& op) { return op.kind() == OpKind::Constant || op.kind() == OpKind::Iota; }

// Iota and small constants are copied into every kernel that reads them (as immediates); constant
// data (ir/constant_data.h) stays outside, a buffer the kernels read.
bool isIndexSource(const Op& op) { return isSource(op) && !isConstantData(op); }

// Ops a group may hold: everything that computes, except constants and iota.
bool isFusible(const Op& op) {
  OpClass cls = op.info().cls;
  return cls != OpClass::Region && cls != OpClass::Terminator && cls != OpClass::Collective && !isSource(op);
}

struct Group {
  std::vector<Op*> ops;  // program order
  FusionKind kind = FusionKind::Loop;
};

// How many kernels span a program position: each kernel's first and last op positions in two
// Fenwick trees, so "does another kernel have ops on both sides of this point?" (the cycle check's
// pruning condition) costs O(log n) instead of a walk over every kernel.
class Spans {
 public:
  explicit Spans(size_t n) : firsts_(n + 1, 0), lasts_(n + 1, 0) {}
  void add(int first, int last, int delta) {
    bump(firsts_, first, delta);
    bump(lasts_, last, delta);
  }
  // Kernels with first < at <= last.
  int containing(int at) const { return below(firsts_, at) - below(lasts_, at); }

 private:
  static void bump(std::vector<int>& tree, int at, int delta) {
    for (size_t i = static_cast<size_t>(at) + 1; i < tree.size(); i += i & (~i + 1)) tree[i] += delta;
  }
  // How many entries sit at positions < at.
  static int below(const std::vector<int>& tree, int at) {
    int sum = 0;
    for (size_t i = static_cast<size_t>(at); i > 0; i -= i & (~i + 1)) sum += tree[i];
    return sum;
  }
  std::vector<int> firsts_, lasts_;
};

class BlockFuser {
 public:
  BlockFuser(Block& block, PassContext& context) : block_(block), context_(context), spans_(block.ops().size()) {
    int i = 0;
    for (auto& op : block.ops()) position_[op.get()] = i++;
  }

  bool run() {
    for (auto it = block_.ops().rbegin(); it != block_.ops().rend(); ++it) {
      Op* op = it->get();
      if (!isFusible(*op) || groupOf_.count(op)) continue;
      groups_.push_back(Group{{op}, FusionKind::Loop});
      groupOf_[op] = groups_.size() - 1;
      trackSpan(groups_.size() - 1, 1);
      std::vector<const Op*> single{op};
      judgeGroup(single, groups_.back().kind, context_.target());
      grow(groups_.size() - 1);
    }
    mergeIndependentLoops();
    bool changed = false;
    for (Group& g : groups_) changed |= rewrite(g);
    // Constants and iota copied into every kernel that reads them are left unused: drop them.
    for (auto it = block_.ops().begin(); it != block_.ops().end();) {
      Op* op = it->get();
      bool unused = isIndexSource(*op) && !op->result()->hasUses();
      it = unused ? block_.ops().erase(it) : std::next(it);
    }
    if (changed) restoreOrder();
    return changed;
  }

 private:
  // Producers of the group's ops in this block that are not in it, latest first.
  std::vector<Op*> candidates(size_t g) const {
    std::vector<Op*> out;
    for (Op* op : groups_[g].ops)
      for (Value* v : op->operands()) {
        Op* p = v->definingOp();
        if (p && p->parentBlock() == &block_ && isFusible(*p) && !inGroup(p, g) &&
            std::find(out.begin(), out.end(), p) == out.end())
          out.push_back(p);
      }
    std::sort(out.begin(), out.end(), [&](Op* a, Op* b) { return position_.at(a) > position_.at(b); });
    return out;
  }

  bool inGroup(const Op* op, size_t g) const {
    auto it = groupOf_.find(op);
    return it != groupOf_.end() && it->second == g;
  }

  // The ops of groups `merged` and `extra`, in program order. Groups are kept sorted, so this
  // merges sorted runs (sorting the whole union again at every step of growing a kernel was most
  // of the fusion pass's time on long chains).
  std::vector<const Op*> unionOf(const std::vector<size_t>& merged, const std::vector<Op*>& extra) const {
    std::vector<const Op*> ops;
    for (size_t k : merged) mergeIn(ops, groups_[k].ops);
    mergeIn(ops, extra);
    return ops;
  }

  // Appends `more` to `ops`, which is in program order, keeping that order: `more` is sorted on
  // its own (a group already is), then the two sorted runs are merged.
  template <class T, class U>
  void mergeIn(std::vector<T*>& ops, const std::vector<U*>& more) const {
    auto earlier = [&](const Op* a, const Op* b) { return position_.at(a) < position_.at(b); };
    auto middle = static_cast<ptrdiff_t>(ops.size());
    ops.insert(ops.end(), more.begin(), more.end());
    std::sort(ops.begin() + middle, ops.end(), earlier);
    std::inplace_merge(ops.begin(), ops.begin() + middle, ops.end(), earlier);
  }

  // Why groups `merged` plus ops `extra` may not be one kernel, or "" if they may (and `kind` is
  // its kind then).
  std::string whyNot(const std::vector<size_t>& merged, const std::vector<Op*>& extra, FusionKind& kind) const {
    size_t size = extra.size();
    for (size_t k : merged) size += groups_[k].ops.size();
    if (size > kMaxOpsPerKernel) return fmt::format("the kernel would hold more than {} ops", kMaxOpsPerKernel);
    if (std::string why = judgeGroup(unionOf(merged, extra), kind, context_.target()); !why.empty()) return why;
    if (createsCycle(merged, extra)) return "its result also feeds another kernel that this kernel depends on";
    return "";
  }

  // p and the producers it needs that are in no group yet (stopping at library ops, which read
  // from memory anyway): joining them all can succeed where p alone cannot, e.g. layer norm's
  // rsqrt, which is only cheap once the reductions it follows are in the kernel too.
  std::vector<Op*> withProducers(Op* p) const {
    std::vector<Op*> bundle{p};
    for (size_t i = 0; i < bundle.size() && bundle.size() < 64; ++i)
      for (Value* v : bundle[i]->operands()) {
        Op* q = v->definingOp();
        if (q && q->parentBlock() == &block_ && isFusible(*q) && q->info().cls != OpClass::Library &&
            !groupOf_.count(q) && std::find(bundle.begin(), bundle.end(), q) == bundle.end())
          bundle.push_back(q);
      }
    return bundle;
  }

  // Whether merging groups `merged` and ops `extra` into one kernel would make two kernels wait
  // for each other: some kernel (or op left alone) that reads the merged kernel's results would
  // have to run before it. Kernels are the nodes here, not ops: two independent ops of one kernel
  // still tie their kernel's order together.
  bool createsCycle(const std::vector<size_t>& merged, const std::vector<Op*>& extra) const {
    static const char mergedNode = 0;
    auto nodeOf = [&](const Op* op) -> const void* {
      if (std::find(extra.begin(), extra.end(), op) != extra.end()) return &mergedNode;
      auto it = groupOf_.find(op);
      if (it == groupOf_.end()) return op;
      if (std::find(merged.begin(), merged.end(), it->second) != merged.end()) return &mergedNode;
      return &groups_[it->second];
    };
    // A node is the merged kernel, another group (an element of groups_) or an op left alone.
    std::less<const void*> before;
    const void* groupsEnd = groups_.data() + groups_.size();
    auto opsOf = [&](const void* node) {
      std::vector<const Op*> ops;
      if (node == &mergedNode) {
        for (size_t k : merged) ops.insert(ops.end(), groups_[k].ops.begin(), groups_[k].ops.end());
        ops.insert(ops.end(), extra.begin(), extra.end());
        return ops;
      }
      if (!before(node, groups_.data()) && before(node, groupsEnd)) {
        const Group& group = *static_cast<const Group*>(node);
        return std::vector<const Op*>(group.ops.begin(), group.ops.end());
      }
      ops.push_back(static_cast<const Op*>(node));
      return ops;
    };
    // Pruning by program position keeps the walk local (else it would visit everything
    // downstream, and fusing a long chain would be quadratic): every edge goes from an op to a
    // later one, so a node whose ops all come after the merged kernel's last op reaches only such
    // nodes, unless some other kernel has ops on both sides of that point.
    int last = 0;
    for (size_t k : merged)
      if (!groups_[k].ops.empty()) last = std::max(last, position_.at(groups_[k].ops.back()));
    for (const Op* op : extra) last = std::max(last, position_.at(op));
    // Another kernel straddles `last` when its first op is before it and its last after: no other
    // kernel holds the op at `last` itself, so those are spans_'s kernels with first < last <= last
    // op, less the merged ones.
    int straddling = spans_.containing(last);
    for (size_t k : merged)
      if (!groups_[k].ops.empty() && position_.at(groups_[k].ops.front()) < last &&
          last <= position_.at(groups_[k].ops.back()))
        --straddling;
    bool prune = straddling == 0;
    auto firstPosition = [&](const void* node) {
      if (node == &mergedNode) return 0;
      if (!before(node, groups_.data()) && before(node, groupsEnd))
        return position_.at(static_cast<const Group*>(node)->ops.front());
      return position_.at(static_cast<const Op*>(node));
    };
    std::unordered_set<const void*> seen;
    std::vector<const void*> stack;
    auto pushUsers = [&](const void* node) {
      for (const Op* op : opsOf(node))
        for (const Value* r : op->results())
          for (const Use& use : r->uses()) {
            const Op* user = topLevel(use.user);
            if (!user || user->info().cls == OpClass::Terminator) continue;
            const void* next = nodeOf(user);
            if (next == node || (prune && firstPosition(next) > last)) continue;
            if (seen.insert(next).second) stack.push_back(next);
          }
    };
    pushUsers(&mergedNode);
    while (!stack.empty()) {
      const void* node = stack.back();
      stack.pop_back();
      if (node == &mergedNode) return true;
      pushUsers(node);
    }
    return false;
  }

  // The op of this block that holds `op` (itself, or the region op whose body uses a value).
  const Op* topLevel(const Op* op) const {
    while (op && op->parentBlock() != &block_) op = op->parentOp();
    return op;
  }

  void grow(size_t g) {
    std::map<const Op*, std::string> rejected;  // lookups only
    for (bool added = true; added;) {
      added = false;
      for (Op* p : candidates(g)) {
        FusionKind kind;
        std::string why;
        if (auto it = groupOf_.find(p); it != groupOf_.end()) {
          // p already belongs to another kernel: the two kernels may become one (siblings
          // sharing a producer, as softmax and log_softmax of one input).
          size_t h = it->second;
          why = whyNot({g, h}, {}, kind);
          if (!why.empty()) {
            rejected[p] = why;
            continue;
          }
          trackSpan(h, -1);
          absorb(g, groups_[h].ops, kind);
          groups_[h].ops.clear();
        } else {
          why = whyNot({g}, {p}, kind);
          std::vector<Op*> joining{p};
          if (!why.empty()) {
            std::vector<Op*> bundle = withProducers(p);
            FusionKind bundleKind;
            if (bundle.size() > 1 && whyNot({g}, bundle, bundleKind).empty()) {
              why.clear();
              kind = bundleKind;
              joining = bundle;
            }
          }
          if (!why.empty()) {
            rejected[p] = why;
            continue;
          }
          absorb(g, joining, kind);
        }
        rejected.erase(p);
        added = true;
        break;  // the candidates changed
      }
    }
    for (Op* p : candidates(g)) {
      auto it = rejected.find(p);
      if (it == rejected.end()) continue;
      const Op& consumer = consumerIn(g, p);
      context_.remark(std::string(p->name()) + " -> " + std::string(consumer.name()), p->loc(),
                      fmt::format("{} not fused into the kernel of {} (line {}): {}", p->name(), consumer.name(),
                                  consumer.loc().line, it->second));
    }
  }

  void absorb(size_t g, std::vector<Op*> ops, FusionKind kind) {
    for (Op* op : ops) groupOf_[op] = g;
    trackSpan(g, -1);
    mergeIn(groups_[g].ops, ops);  // the group stays in program order
    trackSpan(g, 1);
    groups_[g].kind = kind;
  }

  // Counts group g's span in or out of spans_ (around every change to its ops while growing).
  void trackSpan(size_t g, int delta) {
    const std::vector<Op*>& ops = groups_[g].ops;
    if (!ops.empty()) spans_.add(position_.at(ops.front()), position_.at(ops.back()), delta);
  }

  // The first op of group g that reads p (there is one: p is a candidate of g).
  const Op& consumerIn(size_t g, const Op* p) const {
    for (const Use& use : p->result()->uses())
      if (inGroup(use.user, g)) return *use.user;
    internalError(__FILE__, __LINE__, "fusion: a candidate with no consumer in the group");
  }

  // Horizontal fusion: loop groups that read only values from outside every group of this block
  // (parameters, constants) share one kernel, so an optimizer updating several parameters of
  // different shapes is one launch. Groups that feed one another never merge.
  void mergeIndependentLoops() {
    std::vector<size_t> candidatesToMerge;
    for (size_t g = 0; g < groups_.size(); ++g) {
      if (groups_[g].kind != FusionKind::Loop || groups_[g].ops.empty()) continue;
      bool readsOnlyInputs = true;
      for (Op* op : groups_[g].ops)
        for (Value* v : op->operands()) {
          Op* p = v->definingOp();
          if (p && !inGroup(p, g) && p->parentBlock() == &block_ && !isSource(*p)) readsOnlyInputs = false;
        }
      if (readsOnlyInputs) candidatesToMerge.push_back(g);
    }
    if (candidatesToMerge.size() < 2) return;
    // From the earliest group in program order (groups grow from the end), each kernel up to
    // kMaxOpsPerKernel ops.
    std::reverse(candidatesToMerge.begin(), candidatesToMerge.end());
    size_t into = candidatesToMerge.front();
    for (size_t g : candidatesToMerge) {
      if (g == into) continue;
      if (groups_[into].ops.size() + groups_[g].ops.size() > kMaxOpsPerKernel) {
        into = g;
        continue;
      }
      for (Op* op : groups_[g].ops) groupOf_[op] = into;
      mergeIn(groups_[into].ops, groups_[g].ops);
      groups_[g].ops.clear();
    }
  }

  // Moves the group's ops into a new fusion op; returns whether it made one.
  bool rewrite(Group& g) {
    if (g.ops.empty()) return false;
    std::unordered_set<const Op*> members(g.ops.begin(), g.ops.end());
    // Constants and iota the group reads are copied in, so they cost no kernel of their own.
    std::vector<Op*> sources;
    for (Op* op : g.ops)
      for (Value* v : op->operands())
        if (Op* p = v->definingOp(); p && isIndexSource(*p) && std::find(sources.begin(), sources.end(), p) == sources.end())
          sources.push_back(p);
    if (g.ops.size() + sources.size() < 2) return false;

    // Outputs: results read outside the group (by other ops, region bodies or the terminator).
    std::vector<Value*> outputs;
    for (Op* op : g.ops)
      for (Value* r : op->results())
        for (const Use& use : r->uses())
          if (!members.count(use.user)) {
            outputs.push_back(r);
            break;
          }
    std::vector<TensorType> types;
    for (Value* v : outputs) types.push_back(v->type());
    std::vector<const Op*> constOps(g.ops.begin(), g.ops.end());
    std::string epilogue = g.kind == FusionKind::Library ? epilogueOf(constOps) : std::string();
    // Built in one go: growing the list trips GCC 12's -Wstringop-overflow false positive at -O2.
    AttrList attrs = epilogue.empty() ? AttrList{{"kind", Attr(fusionKindName(g.kind))}}
                                      : AttrList{{"kind", Attr(fusionKindName(g.kind))}, {"epilogue", Attr(epilogue)}};
    Op* last = g.ops.back();
    Op* fusion = block_.insertBefore(last, Op::create(OpKind::Fusion, {}, types, std::move(attrs), last->loc()));
    Block* body = fusion->addRegion();

    // Uses outside the group move to the fusion's results before the ops move.
    for (size_t k = 0; k < outputs.size(); ++k) {
      Value* result = fusion->result(k);
      result->setName(outputs[k]->name());
      std::vector<Use> uses = outputs[k]->uses();
      for (const Use& use : uses)
        if (!members.count(use.user)) use.user->setOperand(use.index, result);
    }
    std::unordered_map<Value*, Value*> copied;
    for (Op* source : sources) {
      std::vector<TensorType> t{source->result()->type()};
      Op* copy = body->append(Op::create(source->kind(), {}, t, source->attrs(), source->loc()));
      copy->result()->setName(source->result()->name());
      copied[source->result()] = copy->result();
    }
    for (std::unique_ptr<Op>& op : block_.takeAll(g.ops)) {  // in program order
      Op* moved = body->append(std::move(op));
      for (size_t i = 0; i < moved->numOperands(); ++i)
        if (auto it = copied.find(moved->operand(i)); it != copied.end()) moved->setOperand(i, it->second);
    }
    body->append(Op::create(OpKind::Yield, outputs));
    return true;
  }

  // Fusion ops sit where their last op was; a reader of an earlier output may now come before
  // them. A stable topological sort (uses inside region bodies count) puts every op after the
  // values it reads and otherwise keeps the program order.
  void restoreOrder() {
    std::vector<Op*> order;
    std::unordered_map<const Op*, size_t> index;
    for (auto& op : block_.ops()) {
      index[op.get()] = order.size();
      order.push_back(op.get());
    }
    std::vector<std::vector<size_t>> users(order.size());
    std::vector<int> pending(order.size(), 0);
    for (size_t i = 0; i < order.size(); ++i) {
      std::unordered_set<size_t> deps;
      walkOperands(*order[i], [&](const Value* v) {
        const Op* d = topLevel(v->definingOp());
        if (d && d != order[i]) deps.insert(index.at(d));
      });
      for (size_t d : deps) {
        users[d].push_back(i);
        ++pending[i];
      }
    }
    std::vector<size_t> ready;  // a min-heap on the original position keeps the order stable
    for (size_t i = 0; i < order.size(); ++i)
      if (!pending[i]) ready.push_back(i);
    // The ops leave the block all at once (taking them one by one would search the list each time).
    std::vector<std::unique_ptr<Op>> owned;
    for (auto& op : block_.ops()) owned.push_back(std::move(op));
    block_.ops().clear();
    std::vector<std::unique_ptr<Op>> sorted;
    auto later = [](size_t a, size_t b) { return a > b; };
    std::make_heap(ready.begin(), ready.end(), later);
    while (!ready.empty()) {
      std::pop_heap(ready.begin(), ready.end(), later);
      size_t i = ready.back();
      ready.pop_back();
      sorted.push_back(std::move(owned[i]));
      for (size_t u : users[i])
        if (--pending[u] == 0) {
          ready.push_back(u);
          std::push_heap(ready.begin(), ready.end(), later);
        }
    }
    KILN_INTERNAL_CHECK(sorted.size() == owned.size(), "fusion: the kernels of a block depend on each other in a cycle");
    for (auto& op : sorted) block_.append(std::move(op));
  }

  template <class Fn>
  static void walkOperands(const Op& op, Fn&& fn) {
    for (const Value* v : op.operands()) fn(v);
    for (size_t r = 0; r < op.numRegions(); ++r)
      walkOps(*op.region(r), [&](const Op* inner) {
        for (const Value* v : inner->operands()) fn(v);
      });
  }

  Block& block_;
  PassContext& context_;
  std::unordered_map<const Op*, int> position_;
  Spans spans_;  // of the groups being grown
  std::vector<Group> groups_;
  std::unordered_map<const Op*, size_t> groupOf_;
};

bool fuseBlock(Block& block, PassContext& context) {
  bool changed = false;
  // Bodies of map and while that stay loops get their own kernels; fusion bodies are done.
  for (auto& op : block.ops())
    if (op->kind() != OpKind::Fusion)
      for (size_t r = 0; r < op->numRegions(); ++r) changed |= fuseBlock(*op->region(r), context);
  changed |= BlockFuser(block, context).run();
  return changed;
}

}  // namespace

PassResult fuseOps(Module& module, PassContext& context) {
  bool changed = false;
  for (const auto& f : module.functions()) changed |= fuseBlock(f->body(), context);
  return changed;
}

}  // namespace kiln::passes
