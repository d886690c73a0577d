// The leaves of the .kiln grammar: types, attribute values and constant literals.
#pragma once

#include <vector>

#include "frontend/cursor.h"
#include "ir/attr.h"
#include "ir/tensor.h"
#include "ir/types.h"

namespace kiln::frontend {

// Limits that keep every input's cost bounded: nesting (recursion depth), rank (inference is
// quadratic in it in places), and the bytes a constant may allocate. Element counts are bounded
// by kMaxElements (ir/types.h), like every type in the IR.
inline constexpr int kMaxNesting = 256;
inline constexpr int kMaxRank = 64;
inline constexpr int64_t kMaxConstantBytes = int64_t{1} << 30;

// DTYPE '[' [INT {',' INT}] ']'
Expected<TensorType> parseType(Cursor& c);
// `T` or `T, U, ...` (annotations); stops before anything that is not ','.
Expected<std::vector<TensorType>> parseTypeList(Cursor& c);

// INT | FLOAT | true | false | STRING | DTYPE | '[' [attr {',' attr}] ']'
Expected<Attr> parseAttrValue(Cursor& c, int depth = 0);

// A constant's literal as written, before its type is known: a scalar or nested lists.
struct Literal {
  const Token* start = nullptr;
  bool isList = false;              // false: one scalar, splatted over the type's shape
  std::vector<const Token*> leaves;  // row-major
  Shape shape;                      // the lists' shape; when there are no leaves, only a prefix
};
Expected<Literal> parseLiteral(Cursor& c);
// The tensor that `lit` spells for `type`: checks the shape, each element's kind and range.
Expected<Tensor> buildTensor(const Cursor& c, const Literal& lit, const TensorType& type);

}  // namespace kiln::frontend
