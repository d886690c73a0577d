// FunctionBuilder: the public face of GraphBuilder, ops named as in the text format.
#include <type_traits>

#include "ir/builder.h"
#include "ir/op_table.h"
#include "kiln/graph.h"

namespace kiln {

namespace {

Attr toAttr(const Attribute& a) {
  return std::visit(
      [](const auto& v) -> Attr {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          return Attr::ints(v);
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          Attr::List list(v.begin(), v.end());
          return Attr(std::move(list));
        } else {
          return Attr(v);
        }
      },
      a);
}

}  // namespace

TensorType Node::type() const { return value_ ? value_->type() : TensorType{}; }

FunctionBuilder::FunctionBuilder(std::string name)
    : module_(std::make_unique<Module>()), builder_(std::make_unique<GraphBuilder>(*module_, std::move(name))) {}

FunctionBuilder::~FunctionBuilder() = default;

Node FunctionBuilder::param(const TensorType& type, const std::string& name) {
  if (!module_ || !module_->entry()->body().empty()) {
    fail(Error("param " + name + ": parameters come before the first op"));
    return Node();
  }
  return Node(builder_->param(type, name));
}

Node FunctionBuilder::constant(const Tensor& value) { return Node(builder_->constant(value)); }

Node FunctionBuilder::scalar(DType dtype, double value) { return Node(builder_->scalar(dtype, value)); }

std::vector<Value*> FunctionBuilder::values(const std::vector<Node>& nodes) {
  std::vector<Value*> out;
  for (const Node& n : nodes) out.push_back(n.value_);
  return out;
}

std::vector<Node> FunctionBuilder::ops(std::string_view name, const std::vector<Node>& operands,
                                       const Attributes& attributes) {
  std::optional<OpKind> kind = lookupOp(name);
  if (!kind || !module_) {
    fail(Error(module_ ? "unknown op '" + std::string(name) + "' (`kiln ops` lists them)" : "the function is finished"));
    return {};
  }
  AttrList attrs;
  for (const auto& [key, value] : attributes) attrs.emplace_back(key, toAttr(value));
  std::vector<Node> results;
  for (Value* v : builder_->ops(*kind, values(operands), std::move(attrs))) results.push_back(Node(v));
  return results;
}

Node FunctionBuilder::op(std::string_view name, const std::vector<Node>& operands, const Attributes& attributes) {
  std::vector<Node> results = ops(name, operands, attributes);
  if (results.size() > 1) fail(Error(std::string(name) + " has " + std::to_string(results.size()) + " results: build it with ops()"));
  return results.size() == 1 ? results[0] : Node();
}

Status FunctionBuilder::status() const { return error_.ok() ? builder_->status() : error_; }

void FunctionBuilder::fail(Error e) {
  if (status().ok()) error_ = std::move(e);
}

Expected<Graph> FunctionBuilder::finish(const std::vector<Node>& results) {
  if (!module_) return Error("finish() was called already: the function is finished");
  KILN_TRY(status());
  auto f = builder_->finish(values(results));
  if (!f) return f.error();
  return Graph(std::shared_ptr<const Module>(std::move(module_)));
}

}  // namespace kiln
