// classifyActivation: evaluate the epilogue ops in double on sample points.
#include "passes/epilogue_match.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numbers>
#include <optional>
#include <unordered_map>

#include "ir/constant_data.h"
#include "ir/shape_rules.h"

namespace kiln::passes {

namespace {

// A constant that is one value everywhere (a scalar or a splat).
std::optional<double> splatValue(const Op& op) {
  if (op.kind() != OpKind::Constant) return std::nullopt;
  const Tensor& t = op.attr("value").getDense();
  if (t.numElements() == 0) return std::nullopt;
  double v = t.getDouble(0);
  for (int64_t i = 1; i < t.numElements(); ++i)
    if (t.getDouble(i) != v) return std::nullopt;
  return v;
}

// The op applied to scalar operands, in double; nullopt for ops this does not evaluate. Casts
// between float types are the identity here: rounding is not what tells activations apart.
std::optional<double> applyScalar(const Op& op, const std::vector<double>& a) {
  switch (op.kind()) {
    case OpKind::Add: return a[0] + a[1];
    case OpKind::Sub: return a[0] - a[1];
    case OpKind::Mul: return a[0] * a[1];
    case OpKind::Div: return a[0] / a[1];
    case OpKind::Max: return std::max(a[0], a[1]);
    case OpKind::Min: return std::min(a[0], a[1]);
    case OpKind::Neg: return -a[0];
    case OpKind::Abs: return std::abs(a[0]);
    case OpKind::Tanh: return std::tanh(a[0]);
    case OpKind::Erf: return std::erf(a[0]);
    case OpKind::Exp: return std::exp(a[0]);
    case OpKind::Sqrt: return std::sqrt(a[0]);
    case OpKind::Sigmoid: return 1 / (1 + std::exp(-a[0]));
    case OpKind::Relu: return a[0] > 0 ? a[0] : 0.0;
    case OpKind::Gelu:
      return op.attr("approximate").getString() == "tanh"
                 ? 0.5 * a[0] * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (a[0] + 0.044715 * a[0] * a[0] * a[0])))
                 : 0.5 * a[0] * (1 + std::erf(a[0] / std::numbers::sqrt2));
    case OpKind::Cast:
      if (isFloat(op.operand(0)->type().dtype) && isFloat(op.result()->type().dtype)) return a[0];
      return std::nullopt;
    default: return std::nullopt;
  }
}

std::optional<double> evaluate(const std::vector<const Op*>& ops, const Value* x, double at) {
  std::unordered_map<const Value*, double> values{{x, at}};
  for (const Op* op : ops) {
    if (op->info().cls != OpClass::Elementwise || op->numResults() != 1) return std::nullopt;
    std::vector<double> operands;
    for (const Value* v : op->operands()) {
      if (auto it = values.find(v); it != values.end()) {
        operands.push_back(it->second);
        continue;
      }
      std::optional<double> c = v->definingOp() ? splatValue(*v->definingOp()) : std::nullopt;
      if (!c) return std::nullopt;  // reads something other than x: not a function of x alone
      operands.push_back(*c);
    }
    auto result = applyScalar(*op, operands);
    if (!result) return std::nullopt;
    values[op->result()] = *result;
  }
  return ops.empty() ? at : values[ops.back()->result()];
}

double geluTanh(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
}
double geluErf(double x) { return 0.5 * x * (1 + std::erf(x / std::numbers::sqrt2)); }
double relu(double x) { return x > 0 ? x : 0.0; }
double relu6(double x) { return std::min(relu(x), 6.0); }

}  // namespace

Activation classifyActivation(const std::vector<const Op*>& ops, const Value* x) {
  // erf- and tanh-gelu differ by up to ~2e-4 around |x| = 2 and 1; constants rounded to f32
  // move a result by ~1e-7 relative, hence the 1e-6 tolerance. The large magnitudes tell a clip
  // from what it clips: relu6 (min(max(x, 0), 6), MobileNet's) equals relu up to 6.
  static const double samples[] = {-1e30, -1e4, -100, -10, -6, -3, -2.25, -2, -1.5, -1, -0.75, -0.5, -0.1, 0,
                                   0.1,    0.5,  0.75, 1,   1.5, 2, 2.25,  3,  6,    6.5, 10,   100,   1e4,  1e30};
  bool isRelu = true, isRelu6 = true, isTanh = true, isErf = true;
  for (double at : samples) {
    auto y = evaluate(ops, x, at);
    if (!y) return Activation::Other;
    auto near = [&](double want) { return std::abs(*y - want) <= 1e-6 * (1 + std::abs(want)); };
    isRelu &= near(relu(at));
    isRelu6 &= near(relu6(at));
    isTanh &= near(geluTanh(at));
    isErf &= near(geluErf(at));
  }
  if (isRelu) return Activation::Relu;
  if (isRelu6) return Activation::Relu6;
  if (isTanh) return Activation::GeluTanh;
  if (isErf) return Activation::GeluErf;
  return Activation::Other;
}

bool isLibraryBias(const Op& hero, const Value& bias) {
  Shape s = bias.type().shape;
  const Shape& result = hero.result()->type().shape;
  if (hero.kind() == OpKind::Matmul) {
    bool bIsVector = hero.operand(1)->type().rank() == 1;
    int64_t n = bIsVector ? 1 : result.back();  // NumPy's 1-D promotion: B [k] is [k,1]
    if (bias.type().numElements() == 1) return n == 1;
    if (bIsVector || s.empty() || s.size() > result.size() || s.back() != n) return false;
    return std::all_of(s.begin(), s.end() - 1, [](int64_t d) { return d == 1; });
  }
  if (hero.kind() != OpKind::Conv2d || s.size() > 4 || result.size() != 4) return false;
  s.insert(s.begin(), 4 - s.size(), 1);
  if (isChannelsLast(hero)) return s[0] == 1 && s[1] == 1 && s[2] == 1 && s[3] == result[3];
  return s[0] == 1 && s[2] == 1 && s[3] == 1 && s[1] == result[1];
}

bool isLibraryResidual(const Op& hero, const Op& add, const Value* x) {
  if (add.kind() != OpKind::Add || add.operand(0) == add.operand(1)) return false;
  if (add.operand(0) != x && add.operand(1) != x) return false;
  const Value* other = add.operand(0) == x ? add.operand(1) : add.operand(0);
  const Op* op = other->definingOp();
  if (op && op->kind() == OpKind::Constant && !isConstantData(other)) return false;  // an immediate, no buffer
  return other->type() == hero.result()->type();
}

std::string libraryEpilogueProblem(const Op& hero, const std::vector<const Op*>& epilogue,
                                   const std::function<bool(const Op*)>& inGroup, PassTarget target) {
  bool matmul = hero.kind() == OpKind::Matmul;
  DType t = hero.result()->type().dtype;
  // On the CPU an f64 matmul or conv2d is a generated kernel (oneDNN has no f64), which computes
  // any elementwise epilogue from its sums before the store (codegen/matmul_tile.h, conv_rows.h).
  bool generated = isInt(t) || (t == DType::F64 && target == PassTarget::Cpu);
  if ((!matmul && hero.kind() != OpKind::Conv2d) || epilogue.empty() || generated) return "";
  std::string names;
  for (const Op* op : epilogue) names += (names.empty() ? "" : ",") + std::string(op->name());
  std::string what = "epilogue '" + names + "' after " + std::string(hero.name()) + " is not one a library applies (";
  bool channelsLast = !matmul && isChannelsLast(hero);
  what += matmul ? "a bias add, a residual add and relu or tanh-gelu, each optional"
         : channelsLast ? "a bias add, then a residual add and relu or relu6, each optional"
                        : "a bias add, then a residual add and relu, each optional";
  if (t == DType::F64) return what + "; none on f64)";
  // The library writes the hero's dtype: an epilogue that ends in another (a cast) is no library's.
  if (DType out = epilogue.back()->result()->type().dtype; out != t)
    return what + ", in " + std::string(dtypeName(t)) + ", not ending in " + std::string(dtypeName(out)) + ")";
  what += ")";
  // A bias the library reads from a buffer: from outside the group, through reshapes in it
  // (codegen/library_call.cpp reads it so), not a value the kernel computes or holds.
  auto biasBuffer = [&](const Value* v) {
    while (v->definingOp() && v->definingOp()->kind() == OpKind::Reshape && inGroup(v->definingOp()))
      v = v->definingOp()->operand(0);
    const Op* op = v->definingOp();
    if (op && op->kind() == OpKind::Constant && !isConstantData(v)) return false;  // copied into every kernel
    return !op || !inGroup(op);
  };
  const Value* x = hero.result();
  size_t first = 0;
  const Op& add = *epilogue[0];
  if (add.kind() == OpKind::Add && add.operand(0) != add.operand(1)) {
    const Value* other = add.operand(0) == x ? add.operand(1) : add.operand(0);
    if (isLibraryBias(hero, *other) && biasBuffer(other)) x = add.result(), first = 1;
  }
  // A residual, read from a buffer (computed outside the group), after the bias (a conv2d's: cuDNN
  // adds z only in its fused call, which adds a bias too).
  if (first < epilogue.size() && (matmul || first == 1) && isLibraryResidual(hero, *epilogue[first], x)) {
    const Op& residual = *epilogue[first];
    const Value* other = residual.operand(0) == x ? residual.operand(1) : residual.operand(0);
    if (!other->definingOp() || !inGroup(other->definingOp())) x = residual.result(), ++first;
  }
  std::vector<const Op*> activation(epilogue.begin() + static_cast<ptrdiff_t>(first), epilogue.end());
  if (activation.empty()) return "";
  Activation a = classifyActivation(activation, x);
  // Only oneDNN runs a channels-last conv2d (kiln's cuDNN calls take NCHW: on the GPU the
  // generated kernel runs it, epilogue and all), and oneDNN clips as well. (Not silu: oneDNN
  // 2.6's swish post-op made EfficientNet-B0's 16->96 1x1 conv 0.18 -> 0.62 ms, slower than the
  // conv and kiln's loop kernel after it.)
  bool convActivation = a == Activation::Relu || (channelsLast && a == Activation::Relu6);
  bool applies = matmul ? a == Activation::Relu || a == Activation::GeluTanh : convActivation && first >= 1;
  return applies ? "" : what;
}

}  // namespace kiln::passes
