// Type checks for parsed ops: inference against the annotation, region parameters and yields, and
// the "did you mean" for unknown op names. Each error points at the token most likely to blame.
#include "frontend/op_checks.h"

#include <algorithm>

#include "ir/printer.h"

namespace kiln::frontend {

namespace {

std::string plural(size_t n, const char* word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

// Levenshtein distance, two rows.
size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::string unknownOpMessage(std::string_view name) {
  std::string message = "unknown op '" + std::string(name) + "'";
  // Long names are never typos of an op name; skipping them keeps this cheap on any input.
  if (name.size() > 32) return message;
  std::string_view best;
  size_t bestDistance = 3;  // suggest only within two edits
  for (const OpInfo& info : allOps()) {
    if (info.cls == OpClass::Terminator) continue;
    size_t d = editDistance(name, info.name);
    if (d < bestDistance && d < info.name.size()) {
      best = info.name;
      bestDistance = d;
    }
  }
  if (!best.empty()) message += " (did you mean '" + std::string(best) + "'?)";
  return message;
}

Status inferResults(const Cursor& c, const ParsedOp& p, Op& op) {
  std::string name(op.name());
  // Counts and missing attributes are about the op as a whole (attribute names and kinds were
  // checked as they were read); whatever inference finds after that is about the operands.
  if (Status s = checkAgainstTable(op); !s) return c.error(*p.name, name + ": " + s.error().message());
  auto inferred = inferResultTypes(op, p.annotated ? &p.annotation : nullptr);
  if (!inferred) return c.error(p.firstOperand ? *p.firstOperand : *p.name, inferred.error().message());
  if (inferred->size() != p.results.size())
    return c.error(*p.results[0], name + " has " + plural(inferred->size(), "result") + ", but " +
                                      plural(p.results.size(), "name") + (p.results.size() == 1 ? " is" : " are") +
                                      " given");
  if (p.annotated) {
    if (p.annotation.size() != inferred->size())
      return c.error(*p.annotationTokens[0], name + ": the annotation has " + plural(p.annotation.size(), "type") +
                                                 ", but the op has " + plural(inferred->size(), "result"));
    for (size_t i = 0; i < inferred->size(); ++i) {
      if (p.annotation[i] == (*inferred)[i]) continue;
      std::string which = inferred->size() == 1 ? "annotated result type " + p.annotation[i].str()
                                                : "annotated type " + p.annotation[i].str() + " of result " + std::to_string(i);
      return c.error(*p.annotationTokens[i], name + ": " + which + " does not match the inferred type " + (*inferred)[i].str());
    }
  }
  op.setResultTypes(*inferred);
  return {};
}

Status checkRegionParams(const Cursor& c, const Op& op, const Token& open, const std::vector<RegionParam>& params) {
  bool isMap = op.kind() == OpKind::Map;
  std::string name(op.name());
  if (params.size() != op.numOperands())
    return c.error(open, name + ": the region has " + plural(params.size(), "parameter") + ", expected " +
                             std::to_string(op.numOperands()) +
                             (isMap ? " (one per operand)" : op.kind() == OpKind::Fusion ? " (a fusion reads enclosing values directly)" : " (one per loop-carried value)"));
  for (size_t i = 0; i < params.size(); ++i) {
    TensorType want = op.operand(i)->type();
    if (isMap) {
      if (want.rank() == 0) continue;  // inference reports the scalar operand itself
      want.shape.erase(want.shape.begin());
    }
    if (params[i].type != want)
      return c.error(*params[i].name, name + ": region parameter " + std::string(params[i].name->text) + " is " +
                                          params[i].type.str() + ", expected " + want.str() +
                                          (isMap ? " (operand " + std::to_string(i) + " sliced along axis 0)"
                                                 : " (the type of operand " + std::to_string(i) + ")"));
  }
  return {};
}

Status checkWhileYield(const Op& op, const Block& region, bool isCond) {
  const Op* yield = region.terminator();
  std::vector<TensorType> got = yield->operandTypes();
  if (isCond) {
    if (got.size() == 1 && got[0] == TensorType{DType::Bool, {}}) return {};
    return Error("while: cond region must yield one bool[] value, got (" + printTypes(got) + ")", yield->loc());
  }
  std::vector<TensorType> want = op.operandTypes();
  if (got == want) return {};
  return Error("while: body region must yield the loop-carried types (" + printTypes(want) + "), got (" + printTypes(got) + ")",
               yield->loc());
}

}  // namespace kiln::frontend
