// classifyActivation: evaluate the epilogue ops in double on sample points.
#include "codegen/epilogue_match.h"

#include <cmath>
#include <numbers>
#include <optional>
#include <unordered_map>

namespace kiln::codegen {

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

}  // namespace

Activation classifyActivation(const std::vector<const Op*>& ops, const Value* x) {
  // erf- and tanh-gelu differ by up to ~2e-4 around |x| = 2 and 1; constants rounded to f32
  // move a result by ~1e-7 relative, hence the 1e-6 tolerance.
  static const double samples[] = {-6, -3, -2.25, -2, -1.5, -1, -0.75, -0.5, -0.1, 0, 0.1, 0.5, 0.75, 1, 1.5, 2, 2.25, 3, 6};
  bool isRelu = true, isTanh = true, isErf = true;
  for (double at : samples) {
    auto y = evaluate(ops, x, at);
    if (!y) return Activation::Other;
    auto near = [&](double want) { return std::abs(*y - want) <= 1e-6 * (1 + std::abs(want)); };
    isRelu &= near(relu(at));
    isTanh &= near(geluTanh(at));
    isErf &= near(geluErf(at));
  }
  if (isRelu) return Activation::Relu;
  if (isTanh) return Activation::GeluTanh;
  if (isErf) return Activation::GeluErf;
  return Activation::Other;
}

}  // namespace kiln::codegen
