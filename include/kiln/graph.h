// Graphs: a module of kiln functions, parsed from .kiln text, imported from an ONNX model or built
// in C++ with FunctionBuilder. Part of kiln's public API (docs/api.md); the IR's own classes
// stay inside kiln. A Graph is immutable and cheap to copy (copies share it).
//
//   kiln::Expected<kiln::Graph> g = kiln::Graph::load("examples/mlp.kiln");
//   if (!g) { std::cerr << g.error().str() << "\n"; return 1; }
//   for (const kiln::ValueInfo& p : g->signature()->params) std::cout << p.name << "\n";
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "kiln/status.h"
#include "kiln/tensor.h"
#include "kiln/types.h"

namespace kiln {

class Module;
class Value;
class GraphBuilder;

// A parameter (with its name) or a result of a function.
struct ValueInfo {
  std::string name;
  TensorType type;
};

// A function's name, parameters and result types.
struct Signature {
  std::string name;
  std::vector<ValueInfo> params;
  std::vector<ValueInfo> results;  // names are empty: results are unnamed
};

class Graph {
 public:
  // .kiln text; `filename` names it in error locations ("model.kiln:3:9: error: ...").
  static Expected<Graph> parse(std::string_view text, const std::string& filename = "<text>");
  // A .kiln file, or an ONNX model (a path ending in .onnx; initializers become constants).
  static Expected<Graph> load(const std::string& path);

  // Function names, in the order written; the entry is @main, else the first.
  std::vector<std::string> functions() const;
  std::string entry() const;
  // The signature of `function` ("" or "main" or "@main"; "" is the entry).
  Expected<Signature> signature(const std::string& function = "") const;
  // The whole module as canonical .kiln text (parses back to the same text).
  std::string text() const;

  // Runs `function` on the reference interpreter: slow and exact, the oracle every backend is
  // tested against. One input per parameter, with its exact type.
  Expected<std::vector<Tensor>> interpret(const std::vector<Tensor>& inputs, const std::string& function = "") const;
  // Inputs for `function` with random values (floats in [-1, 1), ints in a small range), the
  // same for the same seed: for trying a graph out.
  Expected<std::vector<Tensor>> randomInputs(uint64_t seed = 0, const std::string& function = "") const;

  // For kiln's own implementation: the module (the IR's classes are internal).
  const std::shared_ptr<const Module>& module() const { return module_; }
  explicit Graph(std::shared_ptr<const Module> module);

 private:
  std::shared_ptr<const Module> module_;
};

// An attribute value, as the text format writes it: `axis = 1`, `axes = [0, 2]`,
// `epsilon = 1e-5`, `keepdims = true`, `direction = "forward"`, `dtype = f16`.
using Attribute = std::variant<bool, int64_t, double, std::string, DType, std::vector<int64_t>, std::vector<double>>;
using Attributes = std::map<std::string, Attribute>;

// A value of the function being built. Null when the op that made it failed (see FunctionBuilder).
class Node {
 public:
  Node() = default;
  explicit operator bool() const { return value_ != nullptr; }
  // Its type (a default TensorType for a null node).
  TensorType type() const;

 private:
  friend class FunctionBuilder;
  explicit Node(Value* value) : value_(value) {}
  Value* value_ = nullptr;
};

// Builds one function, op by op, each result type inferred as the text format infers it. Like
// XLA's XlaBuilder it defers errors: a bad op records the first error and returns a null Node,
// later ops on null operands return null too, and finish() reports that first error.
//
//   kiln::FunctionBuilder b("main");
//   kiln::Node x = b.param({kiln::DType::F32, {8, 16}}, "x");
//   kiln::Node y = b.op("reduce_sum", {b.op("mul", {x, b.scalar(kiln::DType::F32, 2)})}, {{"axes", std::vector<int64_t>{1}}});
//   kiln::Expected<kiln::Graph> g = b.finish({y});
class FunctionBuilder {
 public:
  explicit FunctionBuilder(std::string name = "main");
  ~FunctionBuilder();
  FunctionBuilder(const FunctionBuilder&) = delete;
  FunctionBuilder& operator=(const FunctionBuilder&) = delete;

  Node param(const TensorType& type, const std::string& name = "");
  Node constant(const Tensor& value);
  Node scalar(DType dtype, double value);
  // The op named as in the text format (`kiln ops` lists them: "add", "matmul", "softmax", ...),
  // with its only result; attributes not given take their defaults.
  Node op(std::string_view name, const std::vector<Node>& operands, const Attributes& attributes = {});
  // The same for ops with several results.
  std::vector<Node> ops(std::string_view name, const std::vector<Node>& operands, const Attributes& attributes = {});
  // Returns `results` and verifies the function: the graph holding it, or the first error.
  Expected<Graph> finish(const std::vector<Node>& results);
  // The first error so far, if any.
  Status status() const;

 private:
  std::vector<Value*> values(const std::vector<Node>& nodes);
  void fail(Error e);  // records e unless an earlier error is recorded
  std::unique_ptr<Module> module_;
  std::unique_ptr<GraphBuilder> builder_;
  Status error_;  // an error of the public layer (an unknown op name), before any op is built
};

}  // namespace kiln
