// decompose: each composite op becomes the primitives the interpreter's kernel computes, in the
// same order (ir/interp/reductions.cpp, nn.cpp, elementwise.cpp), built in front of it.
//
// Numerics: the interpreter computes reductions and norms in double and rounds once; the
// primitives round each intermediate to the compute dtype, so f32 results may differ by about an
// ulp. f16 and bf16 inputs are cast to f32, decomposed there and cast back once, rather than
// rounding every intermediate to 11 or 8 bits. gelu and silu are elementwise in the interpreter
// (computed in float or double), so their decompositions match it exactly.
#include "passes/decompose.h"

#include <cmath>
#include <numbers>
#include <string>

#include "passes/rewrite.h"

namespace kiln::passes {

namespace {

// Builds the replacement of one composite in front of it: same location, values named after the
// composite's result (`%y` gives `%y.max`, `%y.exp`, ...), arithmetic in the compute dtype.
class Expansion {
 public:
  explicit Expansion(Op& composite)
      : at_(composite), base_(composite.result()->name()), dtype_(composite.result()->type().dtype) {
    compute_ = dtype_ == DType::F16 || dtype_ == DType::BF16 ? DType::F32 : dtype_;
  }

  DType computeDType() const { return compute_; }

  Value* op(OpKind kind, const std::vector<Value*>& operands, std::string_view suffix, AttrList attrs = {}) {
    return insertOpBefore(at_, kind, operands, std::move(attrs), name(suffix));
  }
  Value* scalar(double v, std::string_view suffix) {
    return insertConstantBefore(at_, Tensor::scalar(compute_, v), name(suffix));
  }
  Value* iota(const TensorType& type, int64_t axis, std::string_view suffix) {
    return insertIotaBefore(at_, type, axis, name(suffix));
  }
  // An input in the compute dtype (cast up from f16/bf16).
  Value* widen(Value* v) {
    if (v->type().dtype == compute_) return v;
    return op(OpKind::Cast, {v}, (v->name().empty() ? std::string("in") : v->name()) + "." + std::string(dtypeName(compute_)),
              {{"to", Attr(compute_)}});
  }
  // Replaces the composite with `result`, cast back to its dtype, and erases it.
  void finish(Value* result) {
    if (result->type().dtype != dtype_) result = op(OpKind::Cast, {result}, "", {{"to", Attr(dtype_)}});
    result->setName(base_);
    replaceOp(at_, result);
  }

 private:
  std::string name(std::string_view suffix) const {
    if (base_.empty() || suffix.empty()) return "";
    return base_ + "." + std::string(suffix);
  }

  Op& at_;
  std::string base_;
  DType dtype_;
  DType compute_;
};

int64_t normalizedAxis(const Op& op) {
  int64_t axis = op.intAttr("axis");
  return axis < 0 ? axis + op.operand(0)->type().rank() : axis;
}

// softmax(x) = e / reduce_sum(e) with e = exp(x - reduce_max(x)), along `axis`;
// log_softmax(x) = (x - m) - log(reduce_sum(exp(x - m))). Rows holding +inf or NaN, or all -inf,
// give NaN through x - m, as the kernel does.
void decomposeSoftmax(Op& op) {
  Expansion e(op);
  Value* x = e.widen(op.operand(0));
  AttrList reduceAttrs = {{"axes", Attr::ints({normalizedAxis(op)})}, {"keepdims", Attr(true)}};
  Value* m = e.op(OpKind::ReduceMax, {x}, "max", reduceAttrs);
  Value* shifted = e.op(OpKind::Sub, {x, m}, "shifted");
  Value* ex = e.op(OpKind::Exp, {shifted}, "exp");
  Value* sum = e.op(OpKind::ReduceSum, {ex}, "sum", reduceAttrs);
  if (op.kind() == OpKind::Softmax) return e.finish(e.op(OpKind::Div, {ex, sum}, "div"));
  Value* logSum = e.op(OpKind::Log, {sum}, "logsum");
  e.finish(e.op(OpKind::Sub, {shifted, logSum}, "sub"));
}

// layer_norm(x, scale, bias) over axes axis..rank-1: d = x - mean(x), var = mean(d * d) (biased),
// y = d * rsqrt(var + epsilon) * scale + bias; scale and bias (shape x.shape[axis:]) broadcast
// from the right.
void decomposeLayerNorm(Op& op) {
  Expansion e(op);
  Value* x = e.widen(op.operand(0));
  Value* scale = e.widen(op.operand(1));
  Value* bias = e.widen(op.operand(2));
  std::vector<int64_t> axes;
  for (int64_t a = normalizedAxis(op); a < x->type().rank(); ++a) axes.push_back(a);
  AttrList reduceAttrs = {{"axes", Attr::ints(axes)}, {"keepdims", Attr(true)}};
  Value* mean = e.op(OpKind::ReduceMean, {x}, "mean", reduceAttrs);
  Value* d = e.op(OpKind::Sub, {x, mean}, "centered");
  Value* sq = e.op(OpKind::Mul, {d, d}, "square");
  Value* var = e.op(OpKind::ReduceMean, {sq}, "var", reduceAttrs);
  Value* eps = e.scalar(op.floatAttr("epsilon"), "eps");
  Value* inv = e.op(OpKind::Rsqrt, {e.op(OpKind::Add, {var, eps}, "var_eps")}, "rstd");
  Value* normed = e.op(OpKind::Mul, {d, inv}, "normed");
  Value* scaled = e.op(OpKind::Mul, {normed, scale}, "scaled");
  e.finish(e.op(OpKind::Add, {scaled, bias}, "shifted"));
}

// batch_norm(x, scale, bias, mean, var) over channel axis 1:
// y = (x - mean) / sqrt(var + epsilon) * scale + bias, with the [C] operands reshaped to
// [C,1,...,1] so they broadcast against [N,C,...] (no reshape for rank-2 x). sqrt(var + eps) is
// computed on the [C] vector, once per channel.
void decomposeBatchNorm(Op& op) {
  Expansion e(op);
  Value* x = e.widen(op.operand(0));
  int rank = x->type().rank();
  int64_t channels = x->type().shape[1];
  Shape perChannel(static_cast<size_t>(rank - 1), 1);
  perChannel[0] = channels;
  auto toChannelAxis = [&](Value* v, std::string_view suffix) {
    if (rank == 2) return v;
    return e.op(OpKind::Reshape, {v}, suffix, {{"shape", Attr::ints(perChannel)}});
  };
  Value* scale = toChannelAxis(e.widen(op.operand(1)), "scale");
  Value* bias = toChannelAxis(e.widen(op.operand(2)), "bias");
  Value* mean = toChannelAxis(e.widen(op.operand(3)), "mean");
  Value* eps = e.scalar(op.floatAttr("epsilon"), "eps");
  Value* varEps = e.op(OpKind::Add, {e.widen(op.operand(4)), eps}, "var_eps");
  Value* stddev = toChannelAxis(e.op(OpKind::Sqrt, {varEps}, "std_c"), "std");
  Value* normed = e.op(OpKind::Div, {e.op(OpKind::Sub, {x, mean}, "centered"), stddev}, "normed");
  Value* scaled = e.op(OpKind::Mul, {normed, scale}, "scaled");
  e.finish(e.op(OpKind::Add, {scaled, bias}, "shifted"));
}

// gelu "none": 0.5x * (1 + erf(x / sqrt 2)); gelu "tanh": 0.5x * (1 + tanh(k (x + 0.044715 x^3)))
// with k = sqrt(2/pi), each step in the order and with the constants (rounded to the compute
// dtype) of the interpreter and codegen/emit_elementwise.cpp.
void decomposeGelu(Op& op) {
  Expansion e(op);
  Value* x = e.widen(op.operand(0));
  bool isDouble = e.computeDType() == DType::F64;
  Value* halfX = e.op(OpKind::Mul, {e.scalar(0.5, "half"), x}, "half_x");
  Value* one = e.scalar(1.0, "one");
  if (op.attr("approximate").getString() == "tanh") {
    double k = isDouble ? std::sqrt(2.0 / std::numbers::pi) : double(std::sqrt(2.0f / std::numbers::pi_v<float>));
    Value* cube = e.op(OpKind::Mul, {e.scalar(0.044715, "c"), x}, "cx");
    cube = e.op(OpKind::Mul, {cube, x}, "cx2");
    cube = e.op(OpKind::Mul, {cube, x}, "cx3");
    Value* inner = e.op(OpKind::Mul, {e.scalar(k, "k"), e.op(OpKind::Add, {x, cube}, "poly")}, "inner");
    Value* t = e.op(OpKind::Tanh, {inner}, "tanh");
    return e.finish(e.op(OpKind::Mul, {halfX, e.op(OpKind::Add, {one, t}, "one_plus")}, "mul"));
  }
  double sqrt2 = isDouble ? std::numbers::sqrt2 : double(std::numbers::sqrt2_v<float>);
  Value* erf = e.op(OpKind::Erf, {e.op(OpKind::Div, {x, e.scalar(sqrt2, "sqrt2")}, "scaled")}, "erf");
  e.finish(e.op(OpKind::Mul, {halfX, e.op(OpKind::Add, {one, erf}, "one_plus")}, "mul"));
}

// silu(x) = x * sigmoid(x).
void decomposeSilu(Op& op) {
  Expansion e(op);
  Value* x = e.widen(op.operand(0));
  e.finish(e.op(OpKind::Mul, {x, e.op(OpKind::Sigmoid, {x}, "sigmoid")}, "mul"));
}

// softmax_cross_entropy(z [N,K], labels [N]) = mean over rows r of logsumexp(z[r]) - z[r, labels[r]]:
// the row reductions softmax uses (max and sum of exp(z - max), kept [N,1] so CSE shares them with
// a gradient's softmax of the same logits) and the label's logit picked by a one-hot select summed
// along the row, which is exact. The labels pass through check_range first, which keeps the op's
// run-time error for a label outside [0, K). Whole, the op was one loop over every row and class
// (a single GPU thread for the whole batch); as primitives each row is a row kernel's.
void decomposeSoftmaxCrossEntropy(Op& op) {
  Expansion e(op);
  Value* z = e.widen(op.operand(0));
  Value* labels = op.operand(1);
  const Shape& zs = z->type().shape;
  AttrList checkAttrs = {{"min", Attr(int64_t{0})}, {"max", Attr(zs[1])}, {"what", Attr(std::string("softmax_cross_entropy: label"))}};
  Value* checked = e.op(OpKind::CheckRange, {labels}, "label", checkAttrs);
  AttrList rowAttrs = {{"axes", Attr::ints({1})}, {"keepdims", Attr(true)}};
  Value* m = e.op(OpKind::ReduceMax, {z}, "max", rowAttrs);
  Value* ex = e.op(OpKind::Exp, {e.op(OpKind::Sub, {z, m}, "shifted")}, "exp");
  Value* sum = e.op(OpKind::ReduceSum, {ex}, "sum", rowAttrs);
  Value* logSumExp = e.op(OpKind::Add, {m, e.op(OpKind::Log, {sum}, "logsum")}, "logsumexp");
  Value* classes = e.iota({labels->type().dtype, zs}, 1, "classes");
  Value* column = e.op(OpKind::Reshape, {checked}, "label_column", {{"shape", Attr::ints({zs[0], 1})}});
  Value* onehot = e.op(OpKind::Eq, {classes, column}, "onehot");
  Value* picked = e.op(OpKind::ReduceSum, {e.op(OpKind::Select, {onehot, z, e.scalar(0.0, "zero")}, "masked")}, "picked",
                       rowAttrs);
  Value* rowLoss = e.op(OpKind::Sub, {logSumExp, picked}, "row_loss");
  e.finish(e.op(OpKind::ReduceMean, {rowLoss}, "mean"));
}

// Rewrites the composite `op` and returns true, or returns false if it stays.
bool decomposeOp(Op& op) {
  // An empty result needs no arithmetic, and the primitives could fail where the composite does
  // not: softmax over a zero-length axis of f32[3,0] would become reduce_max of zero elements into
  // a non-empty f32[3,1], a run-time error.
  if (op.numResults() == 1 && op.result()->type().numElements() == 0) return false;
  switch (op.kind()) {
    case OpKind::Softmax:
    case OpKind::LogSoftmax: decomposeSoftmax(op); return true;
    case OpKind::LayerNorm: decomposeLayerNorm(op); return true;
    case OpKind::BatchNorm: decomposeBatchNorm(op); return true;
    case OpKind::Gelu: decomposeGelu(op); return true;
    case OpKind::Silu: decomposeSilu(op); return true;
    case OpKind::SoftmaxCrossEntropy: decomposeSoftmaxCrossEntropy(op); return true;
    default: return false;
  }
}

bool decomposeBlock(Block& block) {
  bool changed = false;
  auto& ops = block.ops();
  for (auto it = ops.begin(); it != ops.end();) {
    Op* op = it->get();
    ++it;  // the replacement goes in front of op, and op is erased
    for (size_t r = 0; r < op->numRegions(); ++r) changed |= decomposeBlock(*op->region(r));
    changed |= decomposeOp(*op);
  }
  return changed;
}

}  // namespace

PassResult decompose(Module& module, PassContext& context) {
  bool changed = false;
  for (const auto& f : module.functions()) changed |= decomposeBlock(f->body());
  return changed;
}

}  // namespace kiln::passes
