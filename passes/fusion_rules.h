// The fusion pass's rules: which groups of ops make one good kernel. The pass (fusion.cpp) grows
// groups from consumers towards producers and asks these rules at every step; codegen then lays
// each group out as a loop or row kernel (codegen/kernel_plan.h), which is always correct, so the
// rules are about speed: no round trip to memory that a kernel could avoid, and no expensive work
// repeated for every element that reads it.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"
#include "passes/pass.h"

namespace kiln::passes {

// What a group's main op makes it, and the `kind` of the fusion op it becomes.
enum class FusionKind {
  Loop,     // elementwise and layout ops: one pass over the outputs' elements
  Row,      // reductions over trailing dims and their consumers: one row per work item
  Reduce,   // one other reduction (over leading dims, argmax, an undecomposed softmax) and its epilogue
  Library,  // one matmul, conv2d or pooling op and its elementwise epilogue (bias, activation)
};
const char* fusionKindName(FusionKind kind);

// Elementwise transcendentals, reductions and library ops: recomputing them per reader costs.
bool isExpensive(const Op& op);

// Whether `ops` (program order) make a good kernel: empty if so, else why not, phrased to follow
// "not fused: " ("matmul reads its operands from memory (a library call)"). `kind` receives the
// group's kind when it is good.
// `target`: the device compiled for (libraryEpilogueProblem).
std::string judgeGroup(const std::vector<const Op*>& ops, FusionKind& kind, PassTarget target = PassTarget::Any);

// The epilogue of a Library group: its elementwise ops after the library op, as "add,relu"
// (what cuBLASLt and cuDNN can apply on the way out: bias, activation), or "" when there is none.
std::string epilogueOf(const std::vector<const Op*>& ops);

}  // namespace kiln::passes
