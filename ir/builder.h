// GraphBuilder: the C++ way to make kiln graphs, as a frontend would (ONNX import, autodiff, tests).
//
//   Module m;
//   GraphBuilder b(m, "main");
//   Value* x = b.param({DType::F32, {64, 784}}, "x");
//   Value* w = b.param({DType::F32, {784, 128}}, "w");
//   Value* y = b.op(OpKind::Relu, {b.op(OpKind::Matmul, {x, w})});
//   Expected<Function*> f = b.finish({y});
//
// Like XLA's XlaBuilder, errors are deferred: a bad op records the first error and yields null,
// later calls with null operands yield null too, and finish() reports that first error.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace kiln {

class GraphBuilder;
// Builds a region's body from its parameters and returns the values it yields.
using RegionFn = std::function<std::vector<Value*>(GraphBuilder& body, const std::vector<Value*>& params)>;

class GraphBuilder {
 public:
  // Starts a new function `name` in `module`.
  GraphBuilder(Module& module, std::string name);
  // Goes on appending to `function`, whose body must have no terminator yet (a pass that took
  // the `return` off to add ops before it); finish() puts a new one back.
  explicit GraphBuilder(Function& function);

  // Source location given to every op appended from now on (a pass building ops on behalf of
  // one written by the user, so that diagnostics and `kiln explain` point at it).
  void setLoc(SourceLoc loc) { loc_ = std::move(loc); }
  // `device` attribute given to every op appended from now on but transfers (a pass building ops
  // on behalf of a placed one: grad, an optimizer update); nullopt: none. writtenDevice reads it.
  void setDevice(std::optional<int64_t> device) { device_ = device; }
  static std::optional<int64_t> writtenDevice(const Value* v);

  Value* param(TensorType type, std::string name = "");
  // Appends an op with inferred result types; returns its only result (null on error).
  Value* op(OpKind kind, const std::vector<Value*>& operands, AttrList attrs = {});
  // Same for ops with several results.
  std::vector<Value*> ops(OpKind kind, const std::vector<Value*>& operands, AttrList attrs = {});
  Value* constant(Tensor value);
  Value* scalar(DType dtype, double value) { return constant(Tensor::scalar(dtype, value)); }
  Value* iota(TensorType type, int64_t axis);
  std::vector<Value*> map(const std::vector<Value*>& xs, const RegionFn& body);
  std::vector<Value*> whileLoop(const std::vector<Value*>& inits, const RegionFn& cond, const RegionFn& body);

  // Returns `results` from the function, sets its result types and verifies it.
  Expected<Function*> finish(const std::vector<Value*>& results);
  // The first error so far, if any.
  Status status() const { return *error_ ? Status(**error_) : Status(); }

 private:
  GraphBuilder(Block& block, std::shared_ptr<std::optional<Error>> error) : block_(&block), error_(std::move(error)) {}
  std::vector<Value*> append(std::unique_ptr<Op> op, const std::vector<TensorType>* annotated);
  bool fail(Error e);
  bool anyNull(const std::vector<Value*>& values) const;
  Status buildRegion(Block& region, const std::vector<TensorType>& paramTypes, const RegionFn& fn);

  Function* function_ = nullptr;
  Block* block_;
  SourceLoc loc_;
  std::optional<int64_t> device_;
  std::shared_ptr<std::optional<Error>> error_;  // shared with nested region builders
};

}  // namespace kiln
