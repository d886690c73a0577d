// The op table itself, and the driver that checks an op against it before inferring its types.
#include "ir/op_table.h"

#include <algorithm>

#include "ir/grad_rules.h"
#include "ir/infer_rules.h"
#include "ir/ir.h"

namespace kiln {

std::string_view opClassName(OpClass c) {
  switch (c) {
    case OpClass::Elementwise: return "elementwise";
    case OpClass::Reduction: return "reduction";
    case OpClass::Layout: return "layout";
    case OpClass::Library: return "library";
    case OpClass::Collective: return "collective";
    case OpClass::Region: return "region";
    case OpClass::Terminator: return "terminator";
  }
  return "?";
}

bool dtypeIn(DType t, DTypeSet set) {
  switch (set) {
    case DTypeSet::Any: return true;
    case DTypeSet::Num: return isNum(t);
    case DTypeSet::Float: return isFloat(t);
    case DTypeSet::Int: return isInt(t);
    case DTypeSet::SignedInt: return isSignedInt(t);
    case DTypeSet::Bool: return t == DType::Bool;
  }
  return false;
}

std::string_view dtypeSetName(DTypeSet set) {
  switch (set) {
    case DTypeSet::Any: return "any dtype";
    case DTypeSet::Num: return "a numeric dtype (i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64)";
    case DTypeSet::Float: return "a float dtype (f16, bf16, f32, f64)";
    case DTypeSet::Int: return "an integer dtype (i8, i16, i32, i64, u8, u16, u32, u64)";
    case DTypeSet::SignedInt: return "a signed integer dtype (i8, i16, i32, i64)";
    case DTypeSet::Bool: return "bool";
  }
  return "?";
}

const AttrSpec* OpInfo::findAttr(std::string_view attrName) const {
  for (const AttrSpec& a : attrs)
    if (a.name == attrName) return &a;
  static const AttrSpec device{kDeviceAttr, AttrKind::Int, std::nullopt, false, "where its operands are"};
  return attrName == kDeviceAttr && cls != OpClass::Terminator ? &device : nullptr;
}

namespace {

using K = OpKind;
using C = OpClass;
using D = DTypeSet;
using A = AttrKind;
using B = BatchRule;
constexpr int kAny = -1;

AttrSpec required(std::string_view name, AttrKind kind) { return {name, kind, std::nullopt, true}; }
AttrSpec optional(std::string_view name, AttrKind kind, Attr def) { return {name, kind, std::move(def), false}; }
// Optional, with a default that depends on other attributes or operands (documented per op).
AttrSpec computed(std::string_view name, AttrKind kind, std::string_view what) {
  return {name, kind, std::nullopt, false, what};
}

std::vector<OpInfo> buildTable() {
  auto unary = [](K k, std::string_view n, D d, GradFn g) {
    return OpInfo{k, n, C::Elementwise, 1, 1, 0, d, {}, infer::unary, B::Elementwise, g};
  };
  auto binary = [](K k, std::string_view n, D d, GradFn g) {
    return OpInfo{k, n, C::Elementwise, 2, 2, 0, d, {}, infer::binary, B::Elementwise, g};
  };
  auto compare = [](K k, std::string_view n) { return OpInfo{k, n, C::Elementwise, 2, 2, 0, D::Num, {}, infer::compare, B::Elementwise}; };
  // accumulate (kiln, reduce_sum only; docs/ir.md): the least precision its float sum may be kept in.
  auto reduce = [](K k, std::string_view n, GradFn g) {
    return OpInfo{k, n, C::Reduction, 1, 1, 0, D::Num,
                  {computed("axes", A::List, "all axes"), optional("keepdims", A::Bool, false),
                   computed("accumulate", A::DType, "f64 for floats")},
                  infer::reduce, B::Reduce, g};
  };
  auto argReduce = [](K k, std::string_view n) {
    return OpInfo{k, n, C::Reduction, 1, 1, 0, D::Num,
                  {optional("axis", A::Int, 0), optional("keepdims", A::Bool, false)}, infer::argReduce, B::AxisAttr};
  };
  auto windowAttrs = [](std::vector<AttrSpec> extra) {
    std::vector<AttrSpec> attrs = {required("kernel", A::List), computed("strides", A::List, "kernel"),
                                   optional("pads", A::List, Attr::ints({0, 0, 0, 0})),
                                   optional("dilations", A::List, Attr::ints({1, 1}))};
    attrs.insert(attrs.end(), extra.begin(), extra.end());
    return attrs;
  };
  // conv2d's and pooling's layout, and their backward ops' (docs/ir.md): "nchw" or "nhwc".
  const AttrSpec layout = optional("layout", A::String, "nchw");
  auto pool = [&](K k, std::string_view n, GradFn g) {
    return OpInfo{k, n, C::Library, 1, 1, 0, D::Float, windowAttrs({layout}), infer::pool2d,
                  B::MergeIntoBatch, g};
  };
  auto convAttrs = [](std::vector<AttrSpec> extra) {
    std::vector<AttrSpec> attrs = {optional("strides", A::List, Attr::ints({1, 1})), optional("pads", A::List, Attr::ints({0, 0, 0, 0})),
                                   optional("dilations", A::List, Attr::ints({1, 1})), optional("groups", A::Int, 1)};
    attrs.insert(attrs.end(), extra.begin(), extra.end());
    return attrs;
  };
  // The backward ops (gradients of gather, conv2d and the pools; `grad` emits them): own kernels,
  // not batched by vectorize (grad vectorizes maps before it differentiates), no derivative.
  std::vector<OpInfo> t = {
      unary(K::Neg, "neg", D::Num, grad::neg), unary(K::Abs, "abs", D::Num, grad::abs),
      unary(K::Exp, "exp", D::Float, grad::exp), unary(K::Log, "log", D::Float, grad::log), unary(K::Sqrt, "sqrt", D::Float, grad::sqrt),
      unary(K::Rsqrt, "rsqrt", D::Float, grad::rsqrt), unary(K::Reciprocal, "reciprocal", D::Float, grad::reciprocal),
      unary(K::Tanh, "tanh", D::Float, grad::tanh), unary(K::Sigmoid, "sigmoid", D::Float, grad::sigmoid), unary(K::Erf, "erf", D::Float, grad::erf),
      unary(K::Sin, "sin", D::Float, grad::sin), unary(K::Cos, "cos", D::Float, grad::cos), unary(K::Floor, "floor", D::Float, grad::zero),
      unary(K::Ceil, "ceil", D::Float, grad::zero), unary(K::Sign, "sign", D::Float, grad::zero), unary(K::Log1p, "log1p", D::Float, grad::log1p),
      unary(K::Asin, "asin", D::Float, grad::asin), unary(K::Acos, "acos", D::Float, grad::acos),
      unary(K::Atan, "atan", D::Float, grad::atan),
      unary(K::Relu, "relu", D::Float, grad::relu), unary(K::Silu, "silu", D::Float, grad::silu),
      {K::Gelu, "gelu", C::Elementwise, 1, 1, 0, D::Float, {optional("approximate", A::String, "none")}, infer::unary, B::Elementwise, grad::gelu},
      unary(K::Not, "not", D::Bool, nullptr),
      binary(K::Add, "add", D::Num, grad::add), binary(K::Sub, "sub", D::Num, grad::sub), binary(K::Mul, "mul", D::Num, grad::mul),
      binary(K::Div, "div", D::Num, grad::div), binary(K::Max, "max", D::Num, grad::maxMin), binary(K::Min, "min", D::Num, grad::maxMin),
      binary(K::Pow, "pow", D::Num, grad::pow), binary(K::ShiftLeft, "shift_left", D::Int, nullptr),
      binary(K::ShiftRight, "shift_right", D::Int, nullptr),
      compare(K::Eq, "eq"), compare(K::Ne, "ne"), compare(K::Lt, "lt"), compare(K::Le, "le"), compare(K::Gt, "gt"),
      compare(K::Ge, "ge"),
      binary(K::And, "and", D::Bool, nullptr), binary(K::Or, "or", D::Bool, nullptr), binary(K::Xor, "xor", D::Bool, nullptr),
      {K::Select, "select", C::Elementwise, 3, 3, 0, D::Any, {}, infer::select, B::Elementwise, grad::select},
      {K::Cast, "cast", C::Elementwise, 1, 1, 0, D::Any, {required("to", A::DType)}, infer::cast, B::Elementwise, grad::cast},
      // The identity on integers in [min, max), a run-time error otherwise; no derivative (integers).
      {K::CheckRange, "check_range", C::Elementwise, 1, 1, 0, D::Int,
       {required("min", A::Int), required("max", A::Int), optional("what", A::String, "check_range: value")},
       infer::checkRange, B::Elementwise},
      {K::Constant, "constant", C::Elementwise, 0, 0, 0, D::Any, {required("value", A::Dense), optional("data", A::Bool, false)}, infer::constant, B::NeverBatched},
      {K::Iota, "iota", C::Elementwise, 0, 0, 0, D::Num, {required("axis", A::Int)}, infer::iota, B::NeverBatched},
      reduce(K::ReduceSum, "reduce_sum", grad::reduceSum), reduce(K::ReduceMean, "reduce_mean", grad::reduceMean), reduce(K::ReduceMax, "reduce_max", grad::reduceMaxMin),
      reduce(K::ReduceMin, "reduce_min", grad::reduceMaxMin), reduce(K::ReduceProd, "reduce_prod", grad::reduceProd),
      argReduce(K::Argmax, "argmax"), argReduce(K::Argmin, "argmin"),
      {K::Softmax, "softmax", C::Reduction, 1, 1, 0, D::Float, {optional("axis", A::Int, -1)}, infer::softmax, B::AxisAttr, grad::softmax},
      {K::LogSoftmax, "log_softmax", C::Reduction, 1, 1, 0, D::Float, {optional("axis", A::Int, -1)}, infer::softmax, B::AxisAttr,
       grad::logSoftmax},
      {K::LayerNorm, "layer_norm", C::Reduction, 3, 3, 0, D::Float,
       {optional("axis", A::Int, -1), optional("epsilon", A::Float, 1e-5)}, infer::layerNorm, B::AxisAttr, grad::layerNorm},
      {K::Matmul, "matmul", C::Library, 2, 2, 0, D::Num, {}, infer::matmul, B::Matmul, grad::matmul},
      {K::Reshape, "reshape", C::Layout, 1, 1, 0, D::Any, {required("shape", A::List)}, infer::reshape, B::Reshape, grad::reshape},
      {K::Transpose, "transpose", C::Layout, 1, 1, 0, D::Any, {required("perm", A::List)}, infer::transpose, B::Transpose, grad::transpose},
      {K::BroadcastTo, "broadcast_to", C::Layout, 1, 1, 0, D::Any, {required("shape", A::List)}, infer::broadcastTo, B::BroadcastTo, grad::broadcastTo},
      {K::Concat, "concat", C::Layout, 1, kAny, 0, D::Any, {required("axis", A::Int)}, infer::concat, B::Concat, grad::concat},
      {K::Slice, "slice", C::Layout, 1, 1, 0, D::Any,
       {required("starts", A::List), required("ends", A::List), computed("axes", A::List, "[0, 1, ...]"), computed("steps", A::List, "1s")},
       infer::slice, B::Slice, grad::slice},
      {K::Gather, "gather", C::Layout, 2, 2, 0, D::Any, {optional("axis", A::Int, 0)}, infer::gather, B::Gather, grad::gather},
      {K::GatherBackward, "gather_backward", C::Library, 2, 2, 0, D::Float,
       {optional("axis", A::Int, 0), required("input_shape", A::List)}, infer::gatherBackward, B::None},
      {K::Pad, "pad", C::Layout, 1, 1, 0, D::Num, {required("pads", A::List), optional("value", A::Float, 0.0)}, infer::pad, B::Pad, grad::pad},
      {K::Conv2d, "conv2d", C::Library, 2, 2, 0, D::Float, convAttrs({layout}), infer::conv2d,
       B::MergeIntoBatch, grad::conv2d},
      {K::Conv2dBackwardData, "conv2d_backward_data", C::Library, 2, 2, 0, D::Float,
       convAttrs({required("input_shape", A::List), layout}), infer::conv2dBackwardData, B::None},
      {K::Conv2dBackwardFilter, "conv2d_backward_filter", C::Library, 2, 2, 0, D::Float,
       convAttrs({required("filter_shape", A::List), layout}), infer::conv2dBackwardFilter, B::None},
      pool(K::MaxPool2d, "max_pool2d", grad::maxPool2d), pool(K::AvgPool2d, "avg_pool2d", grad::avgPool2d),
      {K::MaxPool2dBackward, "max_pool2d_backward", C::Library, 2, 2, 0, D::Float, windowAttrs({layout}),
       infer::maxPool2dBackward, B::None},
      {K::AvgPool2dBackward, "avg_pool2d_backward", C::Library, 1, 1, 0, D::Float,
       windowAttrs({required("input_shape", A::List), layout}), infer::avgPool2dBackward, B::None},
      {K::BatchNorm, "batch_norm", C::Elementwise, 5, 5, 0, D::Float, {optional("epsilon", A::Float, 1e-5)},
       infer::batchNorm, B::MergeIntoBatch, grad::batchNorm},
      {K::SoftmaxCrossEntropy, "softmax_cross_entropy", C::Reduction, 2, 2, 0, D::Float, {}, infer::softmaxCrossEntropy, B::None,
       grad::softmaxCrossEntropy},
      {K::AllReduce, "all_reduce", C::Collective, 1, 1, 0, D::Num, {optional("reduce", A::String, "sum")}, infer::unary, B::Elementwise,
       grad::allReduce},
      // Moves a value between devices of a placed function (passes/placement.h); the identity on one.
      {K::Transfer, "transfer", C::Elementwise, 1, 1, 0, D::Any, {required("from", A::Int), required("to", A::Int)}, infer::unary,
       B::Elementwise, grad::transfer},
      {K::Map, "map", C::Region, 1, kAny, 1, D::Any, {}, infer::map, B::NestedMap},
      {K::While, "while", C::Region, 1, kAny, 2, D::Any, {}, infer::whileLoop, B::None},
      {K::Fusion, "fusion", C::Region, 0, 0, 1, D::Any,
       {optional("kind", A::String, "loop"), optional("epilogue", A::String, "")}, infer::fusion, B::None},
      {K::Return, "return", C::Terminator, 0, kAny, 0, D::Any, {}, infer::terminator, B::Terminator},
      {K::Yield, "yield", C::Terminator, 0, kAny, 0, D::Any, {}, infer::terminator, B::Terminator},
  };
  for (size_t i = 0; i < t.size(); ++i)
    KILN_INTERNAL_CHECK(static_cast<size_t>(t[i].kind) == i, "op table out of order at " + std::string(t[i].name));
  return t;
}

std::string expectedAttrNames(const OpInfo& info) {
  if (info.attrs.empty()) return "it takes no attributes";
  std::string s = "expected one of: ";
  for (size_t i = 0; i < info.attrs.size(); ++i) s += (i ? ", " : "") + std::string(info.attrs[i].name);
  return s;
}

bool attrKindMatches(const Attr& a, AttrKind want) {
  if (want == AttrKind::Float) return a.isNumber();
  if (want == AttrKind::List) return a.getIntList().has_value();
  return a.kind() == want;
}

std::string attrKindWanted(AttrKind k) {
  if (k == AttrKind::List) return "a list of integers";
  return (k == AttrKind::Int ? "an " : "a ") + std::string(attrKindName(k));
}

}  // namespace

Status checkAttribute(const OpInfo& info, std::string_view name, const Attr& value) {
  const AttrSpec* spec = info.findAttr(name);
  if (!spec) return Error("unknown attribute '" + std::string(name) + "' (" + expectedAttrNames(info) + ")");
  if (!attrKindMatches(value, spec->kind))
    return Error("attribute '" + std::string(name) + "' must be " + attrKindWanted(spec->kind) + ", got " + value.str());
  return {};
}

Status checkAgainstTable(const Op& op) {
  const OpInfo& info = op.info();
  int n = static_cast<int>(op.numOperands());
  if (n < info.minOperands || (info.maxOperands != kAny && n > info.maxOperands)) {
    std::string want = info.minOperands == info.maxOperands ? std::to_string(info.minOperands)
                       : info.maxOperands == kAny       ? "at least " + std::to_string(info.minOperands)
                                                        : std::to_string(info.minOperands) + " to " + std::to_string(info.maxOperands);
    return Error("expected " + want + " operand" + (want == "1" ? "" : "s") + ", got " + std::to_string(n));
  }
  if (static_cast<int>(op.numRegions()) != info.numRegions)
    return Error("expected " + std::to_string(info.numRegions) + " region(s), got " + std::to_string(op.numRegions()));
  for (const auto& [name, value] : op.attrs()) KILN_TRY(checkAttribute(info, name, value));
  for (const AttrSpec& spec : info.attrs)
    if (spec.required && !op.findAttr(spec.name)) return Error("missing attribute '" + std::string(spec.name) + "'");
  return {};
}

const std::vector<OpInfo>& allOps() {
  static const std::vector<OpInfo> table = buildTable();
  return table;
}

const OpInfo& opInfo(OpKind kind) { return allOps()[static_cast<size_t>(kind)]; }

std::optional<OpKind> lookupOp(std::string_view name) {
  for (const OpInfo& info : allOps())
    if (info.name == name) return info.kind;
  return std::nullopt;
}

Expected<std::vector<TensorType>> inferResultTypes(const Op& op, const std::vector<TensorType>* annotated) {
  auto prefixed = [&](const Error& e) { return Error(std::string(op.name()) + ": " + e.message(), e.loc()); };
  if (Status s = checkAgainstTable(op); !s) return prefixed(s.error());
  auto types = op.info().infer(op, annotated);
  if (!types) return prefixed(types.error());
  for (const TensorType& t : *types)
    if (!shapeWithinLimits(t.shape)) return prefixed(Error("result type " + t.str() + " is too large (the limit is 2^48 elements)"));
  return types;
}

}  // namespace kiln
