// scheduleCollectives: all_reduces as early as their inputs allow (schedule_collectives.h).
//
// Why a pass and not the runtime: the kernel plan runs a block's ops in their order, so the order
// is the schedule, and moving the ops here makes it visible in `kiln explain` and `--dump-dir`.
// It runs after fusion: fusion groups ops by what they compute and places a fusion op where its
// members were, which would undo an earlier reordering.
#include "passes/schedule_collectives.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace kiln::passes {

namespace {

using OpIt = Block::OpList::iterator;

// The ops of `block` whose results `op` reads: its operands and, at any depth, the values its
// regions use from outside (a fusion's body reads the enclosing block directly).
void addProducers(const Op& op, const Block& block, std::unordered_set<const Op*>& out) {
  auto visit = [&](const Op* o) {
    for (const Value* v : o->operands())
      if (const Op* d = v->definingOp(); d && d->parentBlock() == &block) out.insert(d);
  };
  visit(&op);
  for (size_t r = 0; r < op.numRegions(); ++r) walkOps(*op.region(r), visit);
}

// Each all_reduce and the ops it needs go ahead of the other ops since the previous all_reduce.
bool hoistReductions(Block& block) {
  bool changed = false;
  auto& ops = block.ops();
  // Ops before `start` are placed for good: earlier all_reduces and what they needed.
  OpIt start = ops.begin();
  for (OpIt it = ops.begin(); it != ops.end(); ++it) {
    if ((*it)->kind() != OpKind::AllReduce) continue;
    // The all_reduce's cone: the ops in [start, it) it depends on, found walking back, since
    // producers come before their users.
    std::unordered_set<const Op*> needed, cone = {it->get()};
    addProducers(**it, block, needed);
    for (OpIt j = it; j != start;) {
      --j;
      if (!needed.count(j->get())) continue;
      cone.insert(j->get());
      addProducers(**j, block, needed);
    }
    // Stable partition of [start, it]: the cone first. Splicing keeps every iterator valid.
    OpIt end = std::next(it), place = start;
    for (OpIt j = start; j != end;) {
      OpIt next = std::next(j);
      if (cone.count(j->get())) {
        if (j == place) ++place;
        else ops.splice(place, ops, j), changed = true;
      }
      j = next;
    }
    start = place;  // right after the all_reduce, which `it` still points at
  }
  return changed;
}

// The ops after the last all_reduce (the readers of reductions, such as the optimizer update), in
// the order the reductions they wait for were started: reductions finish in that order, so the
// update of the first bucket runs while later buckets are still on the wire. Sorting stably by
// "the latest reduction an op depends on" keeps every op after its producers, whose level is at
// most its own.
bool orderReaders(Block& block) {
  auto& ops = block.ops();
  std::unordered_map<const Op*, int> level;  // 1 + start index of that reduction; 0: none
  int started = 0;
  OpIt tail = ops.begin();
  for (OpIt it = ops.begin(); it != ops.end(); ++it) {
    std::unordered_set<const Op*> producers;
    addProducers(**it, block, producers);
    int l = 0;
    for (const Op* p : producers) l = std::max(l, level[p]);
    if ((*it)->kind() == OpKind::AllReduce) l = ++started, tail = std::next(it);
    level[it->get()] = l;
  }
  if (started == 0) return false;
  Op* terminator = block.terminator();
  std::vector<OpIt> readers;
  for (OpIt it = tail; it != ops.end() && it->get() != terminator; ++it) readers.push_back(it);
  std::stable_sort(readers.begin(), readers.end(), [&](OpIt a, OpIt b) { return level[a->get()] < level[b->get()]; });
  bool changed = false;
  OpIt place = tail;
  for (OpIt it : readers) {
    if (it == place) ++place;
    else ops.splice(place, ops, it), changed = true;
  }
  return changed;
}

bool scheduleBlock(Block& block) {
  bool changed = false;
  for (auto& op : block.ops())
    for (size_t r = 0; r < op->numRegions(); ++r) changed |= scheduleBlock(*op->region(r));
  changed |= hoistReductions(block);
  changed |= orderReaders(block);
  return changed;
}

}  // namespace

PassResult scheduleCollectives(Module& module, PassContext&) {
  bool changed = false;
  for (const auto& f : module.functions()) changed |= scheduleBlock(f->body());
  return changed;
}

}  // namespace kiln::passes
