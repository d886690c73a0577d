// NodeContext: inputs, compile-time folding of inputs that carry shapes or axes, and attributes.
#include "frontend/onnx/onnx_context.h"

#include "frontend/onnx/onnx_tensor.h"
#include "ir/interp/interpreter.h"

namespace kiln::onnx_import {

namespace {
// Folding walks back through the ops that compute a shape (Shape -> Gather -> Concat -> Reshape);
// real models need a handful of steps, so a long walk means the value is not a shape computation.
constexpr int kMaxFoldDepth = 64;
}  // namespace

std::string kilnValueName(const std::string& onnxName) {
  std::string s;
  for (char c : onnxName) s += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.') s = "v" + s;
  return s;
}

std::string NodeContext::where() const {
  std::string s = "node " + std::to_string(index_);
  if (!node_.name().empty()) s += " '" + node_.name() + "'";
  return s + " (" + node_.op_type() + ")";
}

Error NodeContext::unsupported(const std::string& what) const {
  if (g_.unsupported) g_.unsupported->push_back({node_.op_type() + " " + what, {where()}});
  return error("kiln cannot import " + what + " yet");
}

Expected<Value*> NodeContext::input(size_t i) const {
  if (!hasInput(i)) return error("input " + std::to_string(i) + " is required but missing");
  const std::string& name = node_.input(static_cast<int>(i));
  auto it = g_.values.find(name);
  if (it == g_.values.end()) return error("input '" + name + "' is not defined before this node");
  return it->second;
}

Expected<std::vector<Value*>> NodeContext::inputs() const {
  std::vector<Value*> out;
  for (size_t i = 0; i < numInputs(); ++i) {
    if (!hasInput(i)) continue;
    auto v = input(i);
    if (!v) return v.error();
    out.push_back(*v);
  }
  if (out.empty()) return error("needs at least one input");
  return out;
}

std::optional<Tensor> NodeContext::knownValue(Value* v, int depth) {
  if (!v || depth > kMaxFoldDepth) return std::nullopt;
  if (auto it = g_.folded.find(v); it != g_.folded.end()) return it->second;
  if (v->isBlockArgument()) {
    auto it = g_.boundParameters.find(v);
    if (it == g_.boundParameters.end()) return std::nullopt;
    g_.neededAtCompileTime.insert(it->second.first);
    return *it->second.second;
  }
  Op* def = v->definingOp();
  if (def->kind() == OpKind::Constant) return def->attr("value").getDense();
  if (def->numRegions() > 0 || def->numResults() != 1) return std::nullopt;
  std::vector<Tensor> operands;
  for (Value* operand : def->operands()) {
    auto t = knownValue(operand, depth + 1);
    if (!t) return std::nullopt;
    operands.push_back(std::move(*t));
  }
  std::vector<const Tensor*> pointers;
  for (const Tensor& t : operands) pointers.push_back(&t);
  auto result = evaluateOp(*def, pointers);
  if (!result) return std::nullopt;  // a run-time error stays one: the op runs (and reports) later
  g_.folded.emplace(v, *result);
  return std::move(*result);
}

Expected<Tensor> NodeContext::staticInput(size_t i, const std::string& what) {
  auto v = input(i);
  if (!v) return v.error();
  if (auto t = knownValue(*v)) return std::move(*t);
  return error("input " + std::to_string(i) + " ('" + node_.input(static_cast<int>(i)) + "', the " + what +
               ") must be known at compile time: kiln's shapes are static, so it has to be an initializer, a "
               "Constant, computed from those, or an input whose value is given when importing");
}

Expected<std::vector<int64_t>> NodeContext::staticInts(size_t i, const std::string& what) {
  auto t = staticInput(i, what);
  if (!t) return t.error();
  if (!isInt(t->dtype())) return error("the " + what + " input must be an integer tensor, got " + t->type().str());
  if (t->rank() > 1) return error("the " + what + " input must be a scalar or 1-D, got " + t->type().str());
  std::vector<int64_t> out;
  for (int64_t k = 0; k < t->numElements(); ++k) out.push_back(t->getInt(k));
  return out;
}

const onnx::AttributeProto* NodeContext::attr(const std::string& name) const {
  for (const auto& a : node_.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t NodeContext::intAttr(const std::string& name, int64_t def) const {
  const auto* a = attr(name);
  return a && a->type() == onnx::AttributeProto::INT ? a->i() : def;
}

float NodeContext::floatAttr(const std::string& name, float def) const {
  const auto* a = attr(name);
  if (!a) return def;
  if (a->type() == onnx::AttributeProto::FLOAT) return a->f();
  if (a->type() == onnx::AttributeProto::INT) return static_cast<float>(a->i());
  return def;
}

std::string NodeContext::stringAttr(const std::string& name, const std::string& def) const {
  const auto* a = attr(name);
  return a && a->type() == onnx::AttributeProto::STRING ? a->s() : def;
}

std::optional<std::vector<int64_t>> NodeContext::intsAttr(const std::string& name) const {
  const auto* a = attr(name);
  if (!a || a->type() != onnx::AttributeProto::INTS) return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::optional<std::vector<float>> NodeContext::floatsAttr(const std::string& name) const {
  const auto* a = attr(name);
  if (!a || a->type() != onnx::AttributeProto::FLOATS) return std::nullopt;
  return std::vector<float>(a->floats().begin(), a->floats().end());
}

Expected<Tensor> NodeContext::tensorAttr(const std::string& name) const {
  const auto* a = attr(name);
  if (!a || a->type() != onnx::AttributeProto::TENSOR) return error("attribute '" + name + "' must be a tensor");
  return tensorFromProto(a->t(), where() + " attribute '" + name + "'", g_.unsupported);
}

void NodeContext::setOutput(size_t i, Value* v) {
  if (!wantsOutput(i) || !v) return;
  const std::string& name = node_.output(static_cast<int>(i));
  // A value already named (a graph input passed through Identity) keeps its name.
  if (v->name().empty()) v->setName(kilnValueName(name));
  g_.values[name] = v;
}

Status NodeContext::result(Value* y) {
  if (!b().status()) return b().status();
  if (!y) return error("produced no value");
  setOutput(0, y);
  return {};
}

Value* NodeContext::cast(Value* v, DType to) {
  if (!v || v->type().dtype == to) return v;
  return op(OpKind::Cast, {v}, {{"to", Attr(to)}});
}

Value* NodeContext::reshape(Value* v, const Shape& shape) {
  if (!v || v->type().shape == shape) return v;
  return op(OpKind::Reshape, {v}, {{"shape", Attr::ints(shape)}});
}

Value* NodeContext::constantInts(const std::vector<int64_t>& values, DType dtype) {
  Tensor t(TensorType{dtype, {static_cast<int64_t>(values.size())}});
  for (size_t i = 0; i < values.size(); ++i) t.setInt(static_cast<int64_t>(i), values[i]);
  return b().constant(std::move(t));
}

}  // namespace kiln::onnx_import
