// What an ONNX op converter sees: one node, its inputs as kiln values (or as compile-time tensors
// where the op needs them so), its attributes with ONNX's defaults, and a GraphBuilder to emit
// kiln ops with. Internal to frontend/onnx.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "frontend/onnx/onnx_import.h"
#include "frontend/onnx/onnx_proto.h"
#include "ir/builder.h"

namespace kiln::onnx_import {

// Graph-wide state of one import attempt.
struct GraphState {
  GraphBuilder* builder = nullptr;
  int64_t opset = 0;  // of the default ("ai.onnx") domain
  std::map<std::string, Value*> values;  // ONNX value name -> kiln value
  // Parameters whose value is known at compile time (given inputs, initializers made parameters),
  // by the parameter, with its ONNX name.
  std::map<const Value*, std::pair<std::string, const Tensor*>> boundParameters;
  // ONNX names of bound parameters whose value an op needed: the next attempt makes them constants.
  std::set<std::string> neededAtCompileTime;
  std::map<const Value*, Tensor> folded;  // compile-time values computed so far
  std::vector<OnnxUnsupported>* unsupported = nullptr;
};

class NodeContext {
 public:
  NodeContext(GraphState& graph, const onnx::NodeProto& node, int index) : g_(graph), node_(node), index_(index) {}

  GraphBuilder& b() { return *g_.builder; }
  int64_t opset() const { return g_.opset; }
  const std::string& opType() const { return node_.op_type(); }

  // Inputs: an absent optional input has an empty name (or lies past the end).
  size_t numInputs() const { return static_cast<size_t>(node_.input_size()); }
  bool hasInput(size_t i) const { return i < numInputs() && !node_.input(static_cast<int>(i)).empty(); }
  Expected<Value*> input(size_t i) const;
  // All present inputs (variadic ops: Sum, Max, Concat).
  Expected<std::vector<Value*>> inputs() const;
  // Input i's value at compile time: an initializer, a Constant, a given input, or computed from
  // those. `what` names the input in the error when it is not known ("shape").
  Expected<Tensor> staticInput(size_t i, const std::string& what);
  Expected<std::vector<int64_t>> staticInts(size_t i, const std::string& what);
  // The compile-time value of `v`, if it has one (nullopt otherwise).
  std::optional<Tensor> knownValue(Value* v, int depth = 0);

  // Attributes, with the defaults that ONNX specifies for the op.
  const onnx::AttributeProto* attr(const std::string& name) const;
  bool hasAttr(const std::string& name) const { return attr(name) != nullptr; }
  int64_t intAttr(const std::string& name, int64_t def) const;
  float floatAttr(const std::string& name, float def) const;
  std::string stringAttr(const std::string& name, const std::string& def) const;
  std::optional<std::vector<int64_t>> intsAttr(const std::string& name) const;
  std::optional<std::vector<float>> floatsAttr(const std::string& name) const;
  Expected<Tensor> tensorAttr(const std::string& name) const;

  size_t numOutputs() const { return static_cast<size_t>(node_.output_size()); }
  bool wantsOutput(size_t i) const { return i < numOutputs() && !node_.output(static_cast<int>(i)).empty(); }
  // Binds output i to `v` (a null `v` means the builder failed; its error is reported by the caller).
  void setOutput(size_t i, Value* v);
  // Binds output 0 to `y` and returns the status of the node's ops so far (the builder's first error).
  Status result(Value* y);

  // "node 3 'relu_1' (Relu)": where errors point.
  std::string where() const;
  Error error(const std::string& message) const { return Error(where() + ": " + message); }
  // An error for something the op does that kiln cannot import yet; recorded for the summary.
  Error unsupported(const std::string& what) const;

  // Small builders the converters share.
  Value* scalar(DType dtype, double v) { return b().scalar(dtype, v); }
  Value* scalarLike(Value* like, double v) { return like ? b().scalar(like->type().dtype, v) : nullptr; }
  Value* op(OpKind kind, const std::vector<Value*>& operands, AttrList attrs = {}) { return b().op(kind, operands, std::move(attrs)); }
  Value* cast(Value* v, DType to);
  Value* reshape(Value* v, const Shape& shape);
  Value* constantInts(const std::vector<int64_t>& values, DType dtype = DType::I64);

 private:
  GraphState& g_;
  const onnx::NodeProto& node_;
  int index_;
};

// "x.1/out" -> "x.1_out": a legal kiln value name ([A-Za-z_][A-Za-z0-9_.]*) for an ONNX name.
std::string kilnValueName(const std::string& onnxName);

}  // namespace kiln::onnx_import
