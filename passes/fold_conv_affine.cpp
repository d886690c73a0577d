// fold-conv-affine: conv2d(x, w) followed by per-channel scales and shifts becomes
// conv2d(x, w * a) + b. See the header for what qualifies.
#include "passes/fold_conv_affine.h"

#include <cmath>
#include <optional>
#include <unordered_map>
#include <vector>

#include "ir/interp/interpreter.h"
#include "ir/shape_rules.h"
#include "passes/rewrite.h"

namespace kiln::passes {

namespace {

// Constant expressions bigger than this are not evaluated: per-channel factors and weights are
// far smaller, and evaluating a big one would cost compile time for nothing.
constexpr int64_t kMaxEvaluatedElements = int64_t{1} << 24;
// How many ops deep a constant expression may be (sqrt(var + eps) reshaped is three).
constexpr int kMaxExpressionDepth = 16;

// The values of constant expressions: a `constant`, or a region-free op whose operands all are
// constant expressions. Remembers what it evaluated, so a weight read by several ops is computed
// once per pass.
class ConstantExpressions {
 public:
  const Tensor* value(const Value* v, int depth = 0) {
    // A constant's own tensor, not a copy: weights are most of a model's memory.
    const Op* op = v->definingOp();
    if (op && op->kind() == OpKind::Constant) return &op->findAttr("value")->getDense();
    if (auto it = memo_.find(v); it != memo_.end()) return it->second ? &*it->second : nullptr;
    std::optional<Tensor> result = evaluate(v, depth);
    auto [it, inserted] = memo_.emplace(v, std::move(result));
    return it->second ? &*it->second : nullptr;
  }

 private:
  std::optional<Tensor> evaluate(const Value* v, int depth) {
    const Op* op = v->definingOp();
    if (!op || depth > kMaxExpressionDepth || op->numRegions() > 0 || op->numResults() != 1 ||
        v->type().numElements() > kMaxEvaluatedElements)
      return std::nullopt;
    if (op->info().cls == OpClass::Collective || op->info().cls == OpClass::Terminator || op->numOperands() == 0)
      return std::nullopt;
    std::vector<const Tensor*> inputs;
    for (const Value* operand : op->operands()) {
      const Tensor* t = value(operand, depth + 1);
      if (!t) return std::nullopt;
      inputs.push_back(t);
    }
    Expected<Tensor> result = evaluateOp(*op, inputs);
    if (!result.ok()) return std::nullopt;  // an op that raises stays in the program to raise there
    return std::move(*result);
  }

  std::unordered_map<const Value*, std::optional<Tensor>> memo_;
};

// y = a[o] * conv[o] + b[o] per output channel o, built up op by op.
struct Affine {
  std::vector<double> a, b;
  bool scales = false;  // a mul or div is among the ops (else it is only bias adds)
  int ops = 0;
};

// k's value at output channel o when k broadcasts against the convolution's [n, o, h, w] result
// along the channel axis alone (every other dim 1), or nullopt when it does not.
std::optional<std::vector<double>> perChannel(const Tensor& k, int64_t channels) {
  const Shape& shape = k.shape();
  if (shape.size() > 4) return std::nullopt;
  bool alongChannels = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    bool isChannelAxis = 4 - shape.size() + i == 1;
    if (isChannelAxis && shape[i] == channels && channels != 1) alongChannels = true;
    else if (shape[i] != 1) return std::nullopt;
  }
  std::vector<double> values(static_cast<size_t>(channels));
  for (int64_t o = 0; o < channels; ++o) values[static_cast<size_t>(o)] = k.getDouble(alongChannels ? o : 0);
  return values;
}

// Applies `user` (reading the chain's current value `current`) to `affine`; false when it is not
// a per-channel scale or shift.
bool extend(Affine& affine, const Op& user, const Value* current, ConstantExpressions& constants) {
  if (user.numOperands() != 2 || user.result()->type() != current->type()) return false;
  OpKind kind = user.kind();
  if (kind != OpKind::Add && kind != OpKind::Sub && kind != OpKind::Mul && kind != OpKind::Div) return false;
  bool currentFirst = user.operand(0) == current;
  const Value* other = user.operand(currentFirst ? 1 : 0);
  if (other == current) return false;  // y * y
  const Tensor* k = constants.value(other);
  if (!k) return false;
  std::optional<std::vector<double>> values = perChannel(*k, static_cast<int64_t>(affine.a.size()));
  if (!values) return false;
  if (kind == OpKind::Div && !currentFirst) return false;  // k / y is not affine in y
  for (size_t o = 0; o < values->size(); ++o) {
    double c = (*values)[o];
    double &a = affine.a[o], &b = affine.b[o];
    switch (kind) {
      case OpKind::Add: b += c; break;
      case OpKind::Sub: currentFirst ? (b -= c) : (a = -a, b = c - b); break;
      case OpKind::Mul: a *= c, b *= c; break;
      default: a /= c, b /= c; break;
    }
  }
  affine.scales |= kind == OpKind::Mul || kind == OpKind::Div || (kind == OpKind::Sub && !currentFirst);
  ++affine.ops;
  return true;
}

// folded[o, ...] = weights[o, ...] * a[o], computed in double and rounded once (a model's weights
// are millions of elements: typed loops, not Tensor's per-element dtype dispatch). False when a
// finite weight becomes infinite.
template <class T>
bool scaleWeights(const Tensor& weights, const std::vector<double>& a, Tensor& folded) {
  const T* in = static_cast<const T*>(weights.data());
  T* out = static_cast<T*>(folded.data());
  const size_t perChannel = static_cast<size_t>(weights.numElements()) / a.size();
  for (size_t o = 0, i = 0; o < a.size(); ++o)
    for (size_t k = 0; k < perChannel; ++k, ++i) {
      out[i] = static_cast<T>(static_cast<double>(in[i]) * a[o]);
      if (std::isinf(out[i]) && std::isfinite(in[i])) return false;
    }
  return true;
}

// Folds the chain after `conv` if there is one worth folding; true if it did.
bool foldAfter(Op& conv, ConstantExpressions& constants) {
  const TensorType& type = conv.result()->type();
  // (Channels-first only: it runs before the channels-last pass, which writes the other layout.)
  if ((type.dtype != DType::F32 && type.dtype != DType::F64) || isChannelsLast(conv)) return false;
  const Tensor* weights = constants.value(conv.operand(1));
  if (!weights) return false;
  const int64_t channels = type.shape[1];
  if (channels == 0 || weights->numElements() == 0) return false;
  Affine affine{std::vector<double>(static_cast<size_t>(channels), 1.0),
                std::vector<double>(static_cast<size_t>(channels), 0.0)};
  Value* current = conv.result();
  Op* last = nullptr;
  while (current->uses().size() == 1) {
    Op& user = *current->uses().front().user;
    if (user.parentBlock() != conv.parentBlock() || !extend(affine, user, current, constants)) break;
    last = &user;
    current = user.result();
  }
  if (!last || (!affine.scales && affine.ops == 1)) return false;

  Tensor folded = Tensor::uninitialized(weights->type());
  bool overflows = type.dtype == DType::F32 ? !scaleWeights<float>(*weights, affine.a, folded)
                                            : !scaleWeights<double>(*weights, affine.a, folded);
  if (overflows) return false;
  Tensor bias = Tensor::uninitialized(TensorType{type.dtype, {channels, 1, 1}});
  for (int64_t o = 0; o < channels; ++o) {
    bias.setDouble(o, affine.b[static_cast<size_t>(o)]);
    if (!std::isfinite(bias.getDouble(o)) || !std::isfinite(affine.a[static_cast<size_t>(o)])) return false;
  }

  std::string name = conv.result()->name();
  Value* w = insertConstantBefore(*last, std::move(folded), name.empty() ? "" : name + ".folded_weight");
  Value* b = insertConstantBefore(*last, std::move(bias), name.empty() ? "" : name + ".folded_bias");
  Value* y = insertOpBefore(*last, OpKind::Conv2d, {conv.operand(0), w}, conv.attrs(), name);
  Value* shifted = insertOpBefore(*last, OpKind::Add, {y, b}, {}, last->result()->name());
  last->result()->replaceAllUsesWith(shifted);
  return true;
}

bool foldIn(Block& block, ConstantExpressions& constants) {
  bool changed = false;
  std::vector<Op*> convs;
  for (const auto& op : block.ops()) {
    for (size_t r = 0; r < op->numRegions(); ++r) changed |= foldIn(*op->region(r), constants);
    if (op->kind() == OpKind::Conv2d) convs.push_back(op.get());
  }
  for (Op* conv : convs) changed |= foldAfter(*conv, constants);
  return changed;
}

}  // namespace

PassResult foldConvAffine(Module& module, PassContext&) {
  bool changed = false;
  ConstantExpressions constants;
  for (const auto& f : module.functions()) changed |= foldIn(f->body(), constants);
  return changed;
}

}  // namespace kiln::passes
