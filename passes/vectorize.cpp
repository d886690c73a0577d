// The vectorize pass: each `map` becomes batched ops on its whole operands, as jax.vmap does. Per
// map it is all or nothing: first every op of the body that depends on the mapped element is
// checked for a batching rule (vectorize_rules.cpp), then, only if all have one, the body is
// rewritten before the map and the map erased. Inner maps go first, so an outer map sees their
// batched form. Dead ops left behind are dce's job.
#include "passes/vectorize.h"

#include <fmt/format.h>

#include "passes/vectorize_rules.h"

namespace kiln::passes {

namespace {
using vectorize::BatchedSet;
using vectorize::Rewriter;

// Marks the body's batched values; returns why the map must stay a loop, or nullopt.
std::optional<std::string> checkMap(const Op& map, BatchedSet& batched) {
  Block& body = *map.region(0);
  for (Value* param : body.arguments()) batched.add(param);
  for (const auto& op : body.ops()) {
    if (op->info().cls == OpClass::Terminator || !batched.usedBy(*op)) continue;
    if (auto why = vectorize::whyNoRule(*op, batched))
      return fmt::format("{} at line {} has no batching rule for {}", op->name(), op->loc().line, *why);
    for (Value* r : op->results()) batched.add(r);
  }
  return std::nullopt;
}

// Rewrites a map that checkMap accepted: unbatched ops move out before it as they are, batched ones
// are replaced by their batched form, the yields become the map's results.
Status rewriteMap(Op& map, const BatchedSet& batched) {
  Block& outer = *map.parentBlock();
  Block& body = *map.region(0);
  Rewriter rewriter(map);
  for (size_t i = 0; i < body.numArguments(); ++i) rewriter.bind(body.argument(i), map.operand(i));
  std::vector<Op*> ops;
  for (const auto& op : body.ops()) ops.push_back(op.get());
  for (Op* op : ops) {
    if (op->info().cls == OpClass::Terminator) continue;
    if (!batched.usedBy(*op)) {
      // The same for every element: computed once, before the map (its regions move with it).
      outer.insertBefore(&map, body.take(op));
      continue;
    }
    auto result = rewriter.batch(*op);
    if (!result) return result.error();
    if (rewriter.emitted(*result)) (*result)->setName(op->result(0)->name());
    rewriter.bind(op->result(0), *result);
  }
  Op* yield = body.terminator();
  for (size_t i = 0; i < map.numResults(); ++i) {
    Value* y = yield->operand(i);
    Value* stacked = rewriter.lookup(y);
    if (!rewriter.isBatched(y)) {
      auto broadcast = rewriter.broadcastToBatch(y, map.loc());
      if (!broadcast) return broadcast.error();
      stacked = *broadcast;
    }
    // The map's result name reads best where the map was (`return %ys`).
    if (rewriter.emitted(stacked)) stacked->setName(map.result(i)->name());
    map.result(i)->replaceAllUsesWith(stacked);
  }
  outer.erase(&map);
  return {};
}

Expected<bool> vectorizeBlock(Block& block, PassContext& context) {
  bool changed = false;
  std::vector<Op*> ops;
  for (const auto& op : block.ops()) ops.push_back(op.get());
  for (Op* op : ops) {
    // Innermost first: an inner map's batched ops are then ordinary ops of the outer body.
    for (size_t r = 0; r < op->numRegions(); ++r) {
      auto inner = vectorizeBlock(*op->region(r), context);
      if (!inner) return inner;
      changed |= *inner;
    }
    if (op->kind() != OpKind::Map) continue;
    BatchedSet batched;
    if (auto why = checkMap(*op, batched)) {
      context.remark(*op, "stays a loop: " + *why);
      continue;
    }
    KILN_TRY(rewriteMap(*op, batched));
    changed = true;
  }
  return changed;
}
}  // namespace

PassResult vectorizeMaps(Module& module, PassContext& context) {
  bool changed = false;
  for (const auto& f : module.functions()) {
    auto result = vectorizeBlock(f->body(), context);
    if (!result) return result;
    changed |= *result;
  }
  return changed;
}

}  // namespace kiln::passes
