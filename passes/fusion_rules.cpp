// judgeGroup: classify a group by its main ops, then check the shape of its data flow.
#include "passes/fusion_rules.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "ir/shape_rules.h"
#include "passes/epilogue_match.h"
#include "passes/row_structure.h"

namespace kiln::passes {

const char* fusionKindName(FusionKind kind) {
  switch (kind) {
    case FusionKind::Loop: return "loop";
    case FusionKind::Row: return "row";
    case FusionKind::Reduce: return "reduce";
    case FusionKind::Library: return "library";
  }
  return "loop";
}

bool isExpensive(const Op& op) {
  switch (op.info().cls) {
    case OpClass::Reduction:
    case OpClass::Library: return true;
    default: break;
  }
  switch (op.kind()) {
    case OpKind::Exp:
    case OpKind::Log:
    case OpKind::Rsqrt:
    case OpKind::Sqrt:
    case OpKind::Tanh:
    case OpKind::Sigmoid:
    case OpKind::Erf:
    case OpKind::Sin:
    case OpKind::Cos:
    case OpKind::Log1p:
    case OpKind::Asin:
    case OpKind::Acos:
    case OpKind::Atan:
    case OpKind::Silu:
    case OpKind::Gelu:
    case OpKind::Pow:
    case OpKind::BatchNorm: return true;
    default: return false;
  }
}

namespace {

// Ops that read each element of an operand many times for one output element: a producer fused
// into them is recomputed that often.
bool rereadsOperands(const Op& op) {
  switch (op.kind()) {
    case OpKind::Matmul:
    case OpKind::Conv2d:
    case OpKind::Conv2dBackwardData:
    case OpKind::Conv2dBackwardFilter:
    case OpKind::MaxPool2d:
    case OpKind::AvgPool2d:
    case OpKind::MaxPool2dBackward:
    case OpKind::AvgPool2dBackward:
    case OpKind::GatherBackward:
    case OpKind::Softmax:
    case OpKind::LogSoftmax:
    case OpKind::LayerNorm:
    case OpKind::SoftmaxCrossEntropy:
    case OpKind::Gather: return true;
    default: return false;
  }
}

// How many elements of the result each element of operand `v` feeds, roughly: more than one for
// broadcasting (elementwise ops, broadcast_to) and for ops that re-read their operands.
bool fansOut(const Op& user, const Value& v) {
  if (rereadsOperands(user)) return true;
  if (user.info().cls == OpClass::Reduction) return false;  // each element is read once overall
  return user.result()->type().numElements() > v.type().numElements();
}

class GroupView {
 public:
  explicit GroupView(const std::vector<const Op*>& ops) : ops_(ops), inGroup_(ops.begin(), ops.end()) {}

  bool contains(const Op* op) const { return op && inGroup_.count(op); }
  bool internal(const Value* v) const { return contains(v->definingOp()); }

  // Whether an expensive op's result is computed more than once per element that needs it: some
  // path from it to the group's outputs fans out (row values of a row kernel are computed once
  // per row, so paths through them do not count).
  std::string recomputation(const std::unordered_set<const Value*>& cachedPerRow) const {
    std::unordered_map<const Value*, bool> memo;
    for (const Op* op : ops_) {
      if (!isExpensive(*op) || cachedPerRow.count(op->result())) continue;
      if (fansOutDownstream(op->result(), cachedPerRow, memo))
        return std::string(op->name()) + " would be recomputed for each element that reads it";
    }
    return "";
  }

 private:
  bool fansOutDownstream(const Value* v, const std::unordered_set<const Value*>& cached,
                         std::unordered_map<const Value*, bool>& memo) const {
    if (auto it = memo.find(v); it != memo.end()) return it->second;
    bool result = false;
    for (const Use& use : v->uses()) {
      if (!contains(use.user)) continue;
      const Value* out = use.user->result();
      if (cached.count(out)) continue;  // computed once per row: fan-out there is free
      if (fansOut(*use.user, *v) || fansOutDownstream(out, cached, memo)) {
        result = true;
        break;
      }
    }
    return memo[v] = result;
  }

  const std::vector<const Op*>& ops_;
  std::unordered_set<const Op*> inGroup_;
};

// A matmul operand that is a transpose of the last two axes of a value read from memory: the
// library reads that value as a transposed operand (cuBLASLt's and oneDNN's transposed layouts,
// codegen/library_call.h), so the transpose costs no kernel and no copy.
bool isTransposedOperand(const Op& op, const Op& hero, const GroupView& group) {
  return hero.kind() == OpKind::Matmul && isMatrixTranspose(op) && !group.internal(op.operand(0));
}

// A single main op (one reduction, or one library op) whose in-group consumers are elementwise
// ops of its result's shape (an epilogue), and whose in-group producers it does not re-read.
std::string judgeSingleHero(const std::vector<const Op*>& ops, const GroupView& group, const Op& hero, bool library,
                            PassTarget target = PassTarget::Any) {
  const Shape& shape = hero.result()->type().shape;
  if (library) {
    // cuBLASLt and cuDNN write one output: a kernel that must also store another value (an
    // optimizer update fused after a weight gradient's matmul, say) could not be a library call.
    const Value* stored = nullptr;
    for (const Op* op : ops)
      for (const Use& use : op->result()->uses())
        if (!group.contains(use.user) && stored != op->result()) {
          if (stored)
            return "a library call writes one result, and " + std::string(op->name()) + "'s would be a second";
          stored = op->result();
        }
  }
  std::unordered_set<const Value*> downstream{hero.result()};
  std::vector<const Op*> epilogue;
  for (const Op* op : ops) {
    if (op == &hero) continue;
    bool after = std::any_of(op->operands().begin(), op->operands().end(),
                             [&](const Value* v) { return downstream.count(v) > 0; });
    if (!after) {
      bool operand = std::find(hero.operands().begin(), hero.operands().end(), op->result()) != hero.operands().end();
      if (library && operand && !isTransposedOperand(*op, hero, group))
        return std::string(hero.name()) + " reads its operands from memory (a library call)";
      continue;
    }
    if (op->info().cls != OpClass::Elementwise || op->result()->type().shape != shape)
      return std::string(op->name()) + " after " + std::string(hero.name()) + " is not an elementwise epilogue of its shape";
    downstream.insert(op->result());
    epilogue.push_back(op);
  }
  return library ? libraryEpilogueProblem(hero, epilogue, [&](const Op* op) { return group.contains(op); }, target) : "";
}

// A reduction kernel that also stores a value of another shape (the activation a global pool
// reads, stored for the op after it) is a loop kernel with one segment per output shape
// (codegen/kernel_plan.cpp), each computing what it needs from the kernel's inputs: the stored
// value's producers run and read their inputs twice, once per segment. Apart, a loop kernel
// computes and stores the value once and the reduction reads it back: never more memory traffic,
// and nothing computed twice (EfficientNet's SiLU before its channels-last squeeze-and-excite
// pools: a sigmoid twice per element; 0.3-0.9 ms kernels where the two apart take a third).
std::string storesAnotherShape(const std::vector<const Op*>& ops, const GroupView& group, const Op& reduction) {
  const Shape& reduced = reduction.result()->type().shape;
  for (const Op* op : ops)
    for (const Value* v : op->results()) {
      bool readOutside = std::any_of(v->uses().begin(), v->uses().end(), [&](const Use& u) { return !group.contains(u.user); });
      if (readOutside && v->type().shape != reduced)
        return "a reduction kernel would compute " + std::string(op->name()) + "'s " + v->type().str() +
               " again beside the reduction to store it; apart, the reduction reads it";
    }
  return "";
}

}  // namespace

std::string judgeGroup(const std::vector<const Op*>& ops, FusionKind& kind, PassTarget target) {
  GroupView group(ops);
  std::vector<const Op*> reductions, libraries;
  for (const Op* op : ops) {
    OpClass cls = op->info().cls;
    if (cls == OpClass::Region || cls == OpClass::Terminator || cls == OpClass::Collective)
      return std::string(op->name()) + " runs on its own";
    if (cls == OpClass::Reduction) reductions.push_back(op);
    if (cls == OpClass::Library) libraries.push_back(op);
  }
  std::unordered_set<const Value*> cachedPerRow;
  if (!libraries.empty()) {
    if (libraries.size() + reductions.size() > 1) return "a kernel holds one matmul, convolution or pooling op and nothing else heavy";
    OpKind hero = libraries[0]->kind();
    if (ops.size() > 1 && (hero == OpKind::Conv2dBackwardData || hero == OpKind::Conv2dBackwardFilter))
      return std::string(libraries[0]->name()) + " stays alone: cuDNN's backward convolutions take no epilogue";
    kind = FusionKind::Library;
    if (std::string why = judgeSingleHero(ops, group, *libraries[0], true, target); !why.empty()) return why;
  } else if (auto rows = analyzeRows(ops)) {
    kind = FusionKind::Row;
    // A row kernel stores full values per element and row values once per row (what
    // codegen/kernel_plan.cpp lays out as rows); a value of any other shape read outside, say an
    // attention mask [1,1,1,n] computed beside the scores, would leave it a loop kernel that
    // recomputes every row's reductions for each element.
    for (const Op* op : ops)
      for (const Value* v : op->results()) {
        bool readOutside = std::any_of(v->uses().begin(), v->uses().end(), [&](const Use& u) { return !group.contains(u.user); });
        if (readOutside && v->type().shape != rows->shape.full() && !isRowShape(v->type().shape, rows->shape))
          return "a row kernel stores whole rows and per-row values, and " + std::string(op->name()) + "'s " +
                 v->type().str() + " is neither";
      }
    for (const Op* op : rows->rowOps) cachedPerRow.insert(op->result());
  } else if (reductions.size() == 1) {
    kind = FusionKind::Reduce;
    if (std::string why = judgeSingleHero(ops, group, *reductions[0], false); !why.empty()) return why;
    if (std::string why = storesAnotherShape(ops, group, *reductions[0]); !why.empty()) return why;
  } else if (!reductions.empty()) {
    return "its reductions do not combine the same trailing dims of one row shape";
  } else {
    kind = FusionKind::Loop;
  }
  return group.recomputation(cachedPerRow);
}

std::string epilogueOf(const std::vector<const Op*>& ops) {
  std::string text;
  bool after = false;
  for (const Op* op : ops) {
    if (op->info().cls == OpClass::Library) {
      after = true;
      continue;
    }
    if (after) text += (text.empty() ? "" : ",") + std::string(op->name());
  }
  return text;
}

}  // namespace kiln::passes
