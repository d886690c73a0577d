// Verifier: scoping (every operand visible at its use), terminators in the right places, and
// result types equal to what the op table infers.
#include "ir/verifier.h"

#include <set>
#include <unordered_set>

namespace kiln {

namespace {

std::string typeList(const std::vector<TensorType>& ts) {
  std::string s;
  for (const auto& t : ts) s += (s.empty() ? "" : ", ") + t.str();
  return "(" + s + ")";
}

class Verifier {
 public:
  explicit Verifier(const Function& f) : function_(f) {}

  Status run() {
    for (Value* p : function_.params()) visible_.insert(p);
    return verifyBlock(function_.body(), OpKind::Return);
  }

 private:
  Status verifyBlock(const Block& block, OpKind terminatorKind) {
    std::vector<const Value*> scope;  // values this block adds to the visible set, removed on exit
    auto define = [&](const Value* v) {
      visible_.insert(v);
      scope.push_back(v);
    };
    for (Value* a : block.arguments())
      if (!visible_.count(a)) define(a);
    Status status = verifyOps(block, terminatorKind, define);
    for (const Value* v : scope) visible_.erase(v);
    return status;
  }

  template <class Define>
  Status verifyOps(const Block& block, OpKind terminatorKind, Define&& define) {
    const SourceLoc& where = block.parentOp() ? block.parentOp()->loc() : function_.loc();
    if (block.empty() || !block.terminator())
      return Error(std::string(block.parentOp() ? "region" : "function @" + function_.name()) + " must end with " +
                       std::string(opInfo(terminatorKind).name),
                   where);
    for (const auto& opPtr : block.ops()) {
      const Op& op = *opPtr;
      bool isLast = &op == block.ops().back().get();
      if (op.info().cls == OpClass::Terminator && !isLast)
        return Error(std::string(op.name()) + " must be the last op of its block", op.loc());
      if (isLast && op.kind() != terminatorKind)
        return Error(std::string(op.name()) + " is not allowed here; this block must end with " +
                         std::string(opInfo(terminatorKind).name),
                     op.loc());
      for (size_t i = 0; i < op.numOperands(); ++i)
        if (!visible_.count(op.operand(i)))
          return Error(std::string(op.name()) + ": operand " + std::to_string(i) + " is not defined before this use",
                       op.loc());
      for (size_t r = 0; r < op.numRegions(); ++r) KILN_TRY(verifyBlock(*op.region(r), OpKind::Yield));
      KILN_TRY(verifyTypes(op));
      for (Value* r : op.results()) define(r);
    }
    return {};
  }

  Status verifyTypes(const Op& op) {
    std::vector<TensorType> current;
    for (Value* r : op.results()) current.push_back(r->type());
    auto inferred = inferResultTypes(op, &current);
    if (!inferred) return inferred.error().at(op.loc());
    if (*inferred != current)
      return Error(std::string(op.name()) + ": result types " + typeList(current) + " do not match the inferred " +
                       typeList(*inferred),
                   op.loc());
    if (op.kind() == OpKind::Return && op.operandTypes() != function_.resultTypes())
      return Error("return: returned types " + typeList(op.operandTypes()) + " do not match the result types " +
                       typeList(function_.resultTypes()) + " of @" + function_.name(),
                   op.loc());
    return {};
  }

  const Function& function_;
  std::unordered_set<const Value*> visible_;
};

}  // namespace

Status verifyFunction(const Function& function) { return Verifier(function).run(); }

Status verifyModule(const Module& module) {
  std::set<std::string> names;
  for (const auto& f : module.functions()) {
    if (!names.insert(f->name()).second) return Error("function @" + f->name() + " is defined twice", f->loc());
    KILN_TRY(verifyFunction(*f));
  }
  return {};
}

}  // namespace kiln
