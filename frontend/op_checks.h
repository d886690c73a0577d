// Type checks the parser runs on each op once it is read, each pointing at the token to blame.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "frontend/cursor.h"
#include "ir/ir.h"

namespace kiln::frontend {

// An op as read, with the tokens diagnostics point at.
struct ParsedOp {
  const Token* name = nullptr;               // the op name: the op's location
  std::vector<const Token*> results;         // the %names left of '='
  const Token* firstOperand = nullptr;       // operand type and shape errors point here
  bool annotated = false;                    // a `: types` annotation was written
  std::vector<TensorType> annotation;
  std::vector<const Token*> annotationTokens;  // where each annotated type starts
};

// Checks the op against the op table (at the op name), infers its result types (errors at the
// first operand), compares them with the result names and the annotation, and sets them.
Status inferResults(const Cursor& c, const ParsedOp& p, Op& op);

// A region parameter as written: `%x: f32[4]`.
struct RegionParam {
  const Token* name;
  TensorType type;
};
// map's parameters are its operands sliced along axis 0; while's are the loop-carried values.
// `open` is the '(' of the parameter list.
Status checkRegionParams(const Cursor& c, const Op& op, const Token& open, const std::vector<RegionParam>& params);
// While's cond region yields one bool[]; its body yields the loop-carried types. Points at the yield.
Status checkWhileYield(const Op& op, const Block& region, bool isCond);

// "unknown op 'addd' (did you mean 'add'?)"
std::string unknownOpMessage(std::string_view name);

}  // namespace kiln::frontend
