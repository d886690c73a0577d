// The batching rules of the vectorize pass: for one `map`, which body values carry the batch dim,
// whether each op that uses one has a rule, and the batched ops that replace it. Internal to
// passes/vectorize*.cpp.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/ir.h"

namespace kiln::passes::vectorize {

// Body values that depend on the mapped element ("batched"). Everything else in the body (values
// from outside, constants, iota, ops on those only) is unbatched and computed once.
class BatchedSet {
 public:
  void add(const Value* v) { values_.insert(v); }
  bool contains(const Value* v) const { return values_.count(v) != 0; }
  // True if `op` reads a batched value, as an operand or from inside one of its regions.
  bool usedBy(const Op& op) const;

 private:
  std::unordered_set<const Value*> values_;
};

// Why `op`, which uses a batched value, cannot be batched ("both x and indices depending on the
// mapped element"), or nullopt when its rule applies.
std::optional<std::string> whyNoRule(const Op& op, const BatchedSet& batched);

// Emits the batched form of one map's body before the map, in the map's block.
class Rewriter {
 public:
  explicit Rewriter(Op& map);
  int64_t batchSize() const { return batch_; }
  // Records that body value `v` is `batchedValue` ([B] ++ v's shape) outside the map.
  void bind(Value* v, Value* batchedValue) { batched_[v] = batchedValue; }
  bool isBatched(Value* v) const { return batched_.count(v) != 0; }
  // The value to use outside the map for body value `v`: its batched form, or `v` itself.
  Value* lookup(Value* v) const;
  // Emits the batched ops for `op` (whyNoRule said it has a rule) and returns its batched result.
  Expected<Value*> batch(const Op& op);
  // `v` (unbatched) broadcast to [B] ++ its shape.
  Expected<Value*> broadcastToBatch(Value* v, const SourceLoc& loc);
  // True if `v` was computed by an op this rewriter emitted.
  bool emitted(const Value* v) const { return emitted_.count(v) != 0; }

 private:
  Expected<Value*> place(std::unique_ptr<Op> op);
  Expected<Value*> emit(OpKind kind, const std::vector<Value*>& operands, AttrList attrs, const SourceLoc& loc);
  Expected<Value*> reshape(Value* v, const Shape& shape, const SourceLoc& loc);
  // The batched form of `v` reshaped to [B, 1, .., 1, shape(v)] with `rank` dims after B, so
  // that NumPy broadcasting lines its dims up as in the body; unbatched `v` as it is.
  Expected<Value*> alignedTo(Value* v, int rank, const SourceLoc& loc);
  Shape batchedShape(const Shape& s) const;

  Expected<Value*> elementwise(const Op& op);
  Expected<Value*> reduce(const Op& op);
  Expected<Value*> axisAttr(const Op& op);
  Expected<Value*> matmul(const Op& op);
  Expected<Value*> concat(const Op& op);
  Expected<Value*> slice(const Op& op);
  Expected<Value*> gather(const Op& op);
  Expected<Value*> pad(const Op& op);
  Expected<Value*> mergeIntoBatch(const Op& op);

  Op& map_;
  Block& outer_;
  int64_t batch_;
  std::unordered_map<Value*, Value*> batched_;
  std::unordered_set<const Value*> emitted_;
};

}  // namespace kiln::passes::vectorize
