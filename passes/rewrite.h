// Small helpers for passes that replace an op by new ops built in front of it (canonicalize, decompose).
#pragma once

#include <string>
#include <unordered_set>
#include <vector>

#include "ir/ir.h"

namespace kiln::passes {

// Inserts `kind operands {attrs}` just before `at`, with at's source location (so run-time errors
// and `kiln explain` still point at the user's line) and inferred result types; returns its result.
// `name` becomes the value's name when the printer finds it valid and free (else it numbers it).
// An op that does not type-check is a bug in the calling pass: internal error.
Value* insertOpBefore(Op& at, OpKind kind, const std::vector<Value*>& operands, AttrList attrs = {},
                      std::string name = "");
// A `constant` holding `value`, inserted just before `at`.
Value* insertConstantBefore(Op& at, Tensor value, std::string name = "");
// An `iota` of `type` counting along `axis`, inserted just before `at`.
Value* insertIotaBefore(Op& at, const TensorType& type, int64_t axis, std::string name = "");
// Points every use of op's only result at `replacement` and erases op.
void replaceOp(Op& op, Value* replacement);
// `v` computed again for `at` alone: a copy, just before `at`, of the elementwise ops (and the
// reshapes and broadcasts between them) that compute it, up to `budget` of them (decremented),
// reading what they read. Constants and iota stay shared (fusion copies them into every kernel),
// and so do ops of other blocks (copied into a loop body, they would run every iteration).
Value* copyElementwiseChain(Op& at, Value* v, int& budget);
// The ops copyElementwiseChain(at, v, budget) would copy, without copying them.
std::unordered_set<const Op*> elementwiseChainOf(const Op& at, Value* v, int budget);
// Erases the op defining `v` if nothing uses it any more, then its producers that become unused
// so (not block arguments, nor ops with regions).
void eraseIfUnused(Value* v);

}  // namespace kiln::passes
