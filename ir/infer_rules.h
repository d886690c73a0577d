// Per-op type inference rules (the `infer` column of the op table). Internal to ir/.
#pragma once

#include "ir/op_table.h"

namespace kiln::infer {

#define KILN_INFER_RULE(name) \
  Expected<std::vector<TensorType>> name(const Op& op, const std::vector<TensorType>* annotated)

KILN_INFER_RULE(unary);          // T -> T, T in the op's dtype set
KILN_INFER_RULE(binary);         // T, T -> broadcast T
KILN_INFER_RULE(compare);        // T, T -> broadcast bool
KILN_INFER_RULE(select);         // bool, T, T -> broadcast T
KILN_INFER_RULE(cast);
KILN_INFER_RULE(checkRange);     // int T -> T, min < max
KILN_INFER_RULE(constant);
KILN_INFER_RULE(iota);
KILN_INFER_RULE(reduce);
KILN_INFER_RULE(argReduce);
KILN_INFER_RULE(softmax);
KILN_INFER_RULE(layerNorm);
KILN_INFER_RULE(matmul);
KILN_INFER_RULE(reshape);
KILN_INFER_RULE(transpose);
KILN_INFER_RULE(broadcastTo);
KILN_INFER_RULE(concat);
KILN_INFER_RULE(slice);
KILN_INFER_RULE(gather);
KILN_INFER_RULE(gatherBackward);   // infer_rules_backward.cpp, as the four below
KILN_INFER_RULE(pad);
KILN_INFER_RULE(conv2d);
KILN_INFER_RULE(conv2dBackwardData);
KILN_INFER_RULE(conv2dBackwardFilter);
KILN_INFER_RULE(pool2d);
KILN_INFER_RULE(maxPool2dBackward);
KILN_INFER_RULE(avgPool2dBackward);
KILN_INFER_RULE(batchNorm);
KILN_INFER_RULE(softmaxCrossEntropy);
KILN_INFER_RULE(map);
KILN_INFER_RULE(whileLoop);
KILN_INFER_RULE(fusion);
KILN_INFER_RULE(terminator);

#undef KILN_INFER_RULE

// The forward ops' result types for given operand types (with `op`'s attributes), which their
// backward ops check their cotangent against.
Expected<TensorType> gatherType(const Op& op, const TensorType& x, const TensorType& indices);
Expected<TensorType> conv2dType(const Op& op, const TensorType& x, const TensorType& w);
Expected<TensorType> pool2dType(const Op& op, const TensorType& x);

}  // namespace kiln::infer
