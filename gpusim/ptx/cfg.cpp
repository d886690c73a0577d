// Immediate post-dominators by Cooper, Harvey and Kennedy's iterative algorithm ("A Simple, Fast
// Dominance Algorithm") run on the reversed control-flow graph from a virtual exit node.
#include "gpusim/ptx/cfg.h"

#include <algorithm>
#include <vector>

namespace gpusim::ptx {
namespace {

bool endsFlow(Op op) { return op == Op::Ret || op == Op::Exit || op == Op::Trap; }

}  // namespace

void computeReconvergence(Function& fn) {
  const uint32_t count = static_cast<uint32_t>(fn.instrs.size());
  if (count == 0) return;

  // Basic blocks: a leader starts at 0, at every branch target and after every branch or exit.
  std::vector<bool> leader(count + 1, false);
  leader[0] = true;
  for (uint32_t i = 0; i < count; ++i) {
    const Instr& in = fn.instrs[i];
    if (in.op == Op::Bra) leader[in.target] = true;
    if (in.op == Op::Bra || endsFlow(in.op)) leader[i + 1] = true;
  }
  std::vector<uint32_t> blockOf(count), blockStart;
  for (uint32_t i = 0; i < count; ++i) {
    if (leader[i]) blockStart.push_back(i);
    blockOf[i] = static_cast<uint32_t>(blockStart.size() - 1);
  }
  const uint32_t blocks = static_cast<uint32_t>(blockStart.size());
  const uint32_t exitNode = blocks;

  // Edges, stored as predecessors (the reversed graph's successors).
  std::vector<std::vector<uint32_t>> preds(blocks + 1);
  std::vector<std::vector<uint32_t>> succs(blocks + 1);
  auto edge = [&](uint32_t from, uint32_t to) {
    succs[from].push_back(to);
    preds[to].push_back(from);
  };
  for (uint32_t b = 0; b < blocks; ++b) {
    uint32_t last = (b + 1 < blocks ? blockStart[b + 1] : count) - 1;
    const Instr& in = fn.instrs[last];
    bool guarded = in.guard != Operand::kNoReg;
    auto fallThrough = [&] { edge(b, last + 1 < count ? blockOf[last + 1] : exitNode); };
    if (in.op == Op::Bra) {
      edge(b, blockOf[in.target]);
      if (guarded) fallThrough();
    } else if (endsFlow(in.op)) {
      edge(b, exitNode);
      if (guarded) fallThrough();
    } else {
      fallThrough();
    }
  }

  // Postorder of the reversed graph from the exit. Blocks that never reach the exit (an endless
  // loop) get an edge to it, so every block has a post-dominator.
  std::vector<uint32_t> order;  // postorder
  std::vector<uint32_t> number(blocks + 1, UINT32_MAX);
  std::vector<bool> seen(blocks + 1, false);
  auto walk = [&](uint32_t root) {
    std::vector<std::pair<uint32_t, size_t>> stack{{root, 0}};
    seen[root] = true;
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next < preds[node].size()) {
        uint32_t p = preds[node][next++];
        if (!seen[p]) {
          seen[p] = true;
          stack.push_back({p, 0});
        }
      } else {
        number[node] = static_cast<uint32_t>(order.size());
        order.push_back(node);
        stack.pop_back();
      }
    }
  };
  walk(exitNode);
  for (uint32_t b = blocks; b-- > 0;) {
    if (seen[b]) continue;
    edge(b, exitNode);
    // Re-walk from this block: it and whatever reaches only it join the order after the exit's
    // subtree, which keeps "a node's post-dominators come later in postorder".
    order.pop_back();  // the exit is numbered last again below
    walk(b);
    number[exitNode] = static_cast<uint32_t>(order.size());
    order.push_back(exitNode);
  }

  // ipdom[b]: iterate to a fixed point in reverse postorder of the reversed graph.
  std::vector<uint32_t> ipdom(blocks + 1, UINT32_MAX);
  ipdom[exitNode] = exitNode;
  auto intersect = [&](uint32_t a, uint32_t b) {
    while (a != b) {
      while (number[a] < number[b]) a = ipdom[a];
      while (number[b] < number[a]) b = ipdom[b];
    }
    return a;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t k = order.size(); k-- > 0;) {
      uint32_t node = order[k];
      if (node == exitNode) continue;
      uint32_t best = UINT32_MAX;
      for (uint32_t s : succs[node]) {
        if (ipdom[s] == UINT32_MAX) continue;
        best = best == UINT32_MAX ? s : intersect(s, best);
      }
      if (best != ipdom[node]) {
        ipdom[node] = best;
        changed = true;
      }
    }
  }

  for (uint32_t i = 0; i < count; ++i) {
    Instr& in = fn.instrs[i];
    if (in.op != Op::Bra) continue;
    uint32_t p = ipdom[blockOf[i]];
    in.reconverge = p == exitNode || p == UINT32_MAX ? count : blockStart[p];
  }
}

}  // namespace gpusim::ptx
