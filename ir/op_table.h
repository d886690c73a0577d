// The op table: for every op of docs/ir.md, its name, operand count, attributes with defaults,
// class and type/shape inference. Parser, printer, verifier and interpreter all read it.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "ir/attr.h"
#include "ir/status.h"
#include "ir/types.h"

namespace kiln {

class Op;
class Value;
namespace grad {
class Context;
}

// X-macro list: (enumerator, text name). Order is the order docs/ir.md lists them.
#define KILN_OPS(X)                                                                              \
  X(Neg, "neg") X(Abs, "abs") X(Exp, "exp") X(Log, "log") X(Sqrt, "sqrt") X(Rsqrt, "rsqrt")       \
  X(Reciprocal, "reciprocal") X(Tanh, "tanh") X(Sigmoid, "sigmoid") X(Erf, "erf") X(Sin, "sin")  \
  X(Cos, "cos") X(Floor, "floor") X(Ceil, "ceil") X(Sign, "sign") X(Log1p, "log1p")              \
  X(Asin, "asin") X(Acos, "acos") X(Atan, "atan")                                                \
  X(Relu, "relu") X(Silu, "silu") X(Gelu, "gelu") X(Not, "not")                                  \
  X(Add, "add") X(Sub, "sub") X(Mul, "mul") X(Div, "div") X(Max, "max") X(Min, "min")            \
  X(Pow, "pow") X(ShiftLeft, "shift_left") X(ShiftRight, "shift_right") X(Eq, "eq") X(Ne, "ne") X(Lt, "lt") X(Le, "le") X(Gt, "gt") X(Ge, "ge")          \
  X(And, "and") X(Or, "or") X(Xor, "xor") X(Select, "select") X(Cast, "cast") X(CheckRange, "check_range")        \
  X(Constant, "constant") X(Iota, "iota")                                                        \
  X(ReduceSum, "reduce_sum") X(ReduceMean, "reduce_mean") X(ReduceMax, "reduce_max")             \
  X(ReduceMin, "reduce_min") X(ReduceProd, "reduce_prod") X(Argmax, "argmax") X(Argmin, "argmin") \
  X(Softmax, "softmax") X(LogSoftmax, "log_softmax") X(LayerNorm, "layer_norm")                  \
  X(Matmul, "matmul") X(Reshape, "reshape") X(Transpose, "transpose")                            \
  X(BroadcastTo, "broadcast_to") X(Concat, "concat") X(Slice, "slice") X(Gather, "gather")       \
  X(GatherBackward, "gather_backward") X(Pad, "pad") X(Conv2d, "conv2d")                         \
  X(Conv2dBackwardData, "conv2d_backward_data") X(Conv2dBackwardFilter, "conv2d_backward_filter") \
  X(MaxPool2d, "max_pool2d") X(AvgPool2d, "avg_pool2d") X(MaxPool2dBackward, "max_pool2d_backward") \
  X(AvgPool2dBackward, "avg_pool2d_backward")                                                    \
  X(BatchNorm, "batch_norm") X(SoftmaxCrossEntropy, "softmax_cross_entropy")                     \
  X(AllReduce, "all_reduce") X(Transfer, "transfer") X(Map, "map") X(While, "while") X(Fusion, "fusion") X(Return, "return") X(Yield, "yield")

enum class OpKind : uint16_t {
#define KILN_OP_ENUM(e, n) e,
  KILN_OPS(KILN_OP_ENUM)
#undef KILN_OP_ENUM
};

// How an op computes, which is what fusion and codegen care about.
enum class OpClass {
  Elementwise,  // out[i] depends on in[i] (after broadcasting); includes constant, iota, cast
  Reduction,    // combines elements along axes (reductions, softmax, layer_norm, cross entropy)
  Layout,       // moves or selects elements without arithmetic (reshape, transpose, slice, ...)
  Library,      // dense kernels vendors do well (matmul, conv2d, pooling)
  Collective,   // communicates across data-parallel replicas
  Region,       // owns nested blocks (map, while, fusion)
  Terminator,   // return, yield: end a block
};
std::string_view opClassName(OpClass c);

// How the `vectorize` pass batches the op when it sits in a `map` body and uses a value that
// depends on the mapped element (passes/vectorize_rules.cpp implements each kind). B is the map's
// axis-0 length; a batched value carries it as a new leading dim.
enum class BatchRule {
  Elementwise,     // same op on the batched operands, ranks aligned by reshapes to [B,1,..,1,s]
  Reduce,          // reduce_*: axes shifted by one; "all axes" means all element axes, not B
  AxisAttr,        // argmax/argmin, softmax/log_softmax, layer_norm (x only): `axis` shifted by one
  Matmul,          // NumPy matmul with 1-D promotion: reshapes line B up as a leading batch dim
  Reshape,         // shape = [B] ++ shape
  Transpose,       // perm = [0] ++ (perm + 1)
  BroadcastTo,     // shape = [B] ++ shape, the operand reshaped to [B,1,..,1,s] first
  Concat,          // axis + 1; unbatched operands broadcast to [B, ...]
  Slice,           // axes shifted by one
  Gather,          // batched x: axis + 1; batched indices: B comes out at `axis`, moved first
  Pad,             // a 0 pad before and after B
  MergeIntoBatch,  // conv2d, pooling, batch_norm: x reshaped [B,N,...] -> [B*N,...] and back
  NeverBatched,    // constant, iota: no operands, so never batched (kept outside the loop)
  NestedMap,       // an inner map is vectorized first; one that stays a loop keeps the outer one too
  None,            // no batching rule: while (per-element trip count), softmax_cross_entropy
  Terminator,      // yield ends the body (its values are the map's results); return never occurs
};

// Which dtypes an op's main operands accept.
enum class DTypeSet { Any, Num, Float, Int, SignedInt, Bool };
bool dtypeIn(DType t, DTypeSet set);
std::string_view dtypeSetName(DTypeSet set);  // "float", "num", ...

struct AttrSpec {
  std::string_view name;
  AttrKind kind;                    // List means a list of integers
  std::optional<Attr> defaultValue;  // nullopt: required, or a default computed by the op
  bool required;
  std::string_view computedDefault = {};  // for a computed default, what it is ("all axes")
};

// Result types of an op from its operands, attributes and regions. `annotated` holds the result
// types written in the text (`: f32[4]`), when there are any; constant and iota need them.
using InferFn = Expected<std::vector<TensorType>> (*)(const Op& op, const std::vector<TensorType>* annotated);

// The derivative rule (a vector-Jacobian product): given the cotangents of an op's results, appends
// ops computing its operands' cotangents (ir/grad_rules.h says more). Null: not differentiable
// (argmax, comparisons, while, ...), so `grad` reports the op if a gradient must pass through it.
using GradFn = Expected<std::vector<Value*>> (*)(grad::Context& ctx, const Op& op, const std::vector<Value*>& dys);

struct OpInfo {
  OpKind kind;
  std::string_view name;
  OpClass cls;
  int minOperands;
  int maxOperands;  // -1: any number
  int numRegions;
  DTypeSet dtypes;  // accepted dtypes of the main operand(s)
  std::vector<AttrSpec> attrs;
  InferFn infer;
  BatchRule batch;  // how vectorize batches it inside a map
  GradFn grad = nullptr;  // its derivative rule, for the `grad` transformation

  // The op's own attributes, then `device` (kDeviceAttr), which every op but return and yield takes.
  const AttrSpec* findAttr(std::string_view attrName) const;
};

// `{device = N}`: the device an op runs on when a function is placed across devices
// (passes/placement.h); a single-device run ignores it.
inline constexpr std::string_view kDeviceAttr = "device";

const OpInfo& opInfo(OpKind kind);
std::optional<OpKind> lookupOp(std::string_view name);
// Every op, in table order (for tests and `kiln ops`-style listings).
const std::vector<OpInfo>& allOps();

// Checks one attribute against the op's table entry: a known name and a value of the right kind.
// Unprefixed message (the parser calls it to point at the attribute's name).
Status checkAttribute(const OpInfo& info, std::string_view name, const Attr& value);
// Checks operand and region counts, attribute names and kinds, and that required attributes are set.
// Unprefixed message; inferResultTypes runs it first.
Status checkAgainstTable(const Op& op);

// Checks operand count, attribute names and kinds against the table, then infers result types.
// Errors say what was expected, prefixed with the op's name, without a location.
Expected<std::vector<TensorType>> inferResultTypes(const Op& op, const std::vector<TensorType>* annotated = nullptr);
}  // namespace kiln
