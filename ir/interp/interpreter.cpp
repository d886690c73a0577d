// The reference interpreter's driver: checks inputs, walks blocks op by op, dispatches each op to
// its kernel, and runs the region ops (map, while) itself.
#include "ir/interp/interpreter.h"

#include <string>
#include <unordered_map>

#include "ir/interp/kernels.h"

namespace kiln {

namespace {

// The values computed so far in one block; a region's frame sees its enclosing frames' values.
class Frame {
 public:
  explicit Frame(const Frame* parent = nullptr) : parent_(parent) {}

  void bind(const Value* v, Tensor t) { values_.insert_or_assign(v, std::move(t)); }
  const Tensor& lookup(const Value* v) const {
    for (const Frame* f = this; f; f = f->parent_)
      if (auto it = f->values_.find(v); it != f->values_.end()) return it->second;
    internalError(__FILE__, __LINE__, "interpreter: value used before it is computed (unverified function?)");
  }

 private:
  const Frame* parent_;
  std::unordered_map<const Value*, Tensor> values_;
};

std::string prefixed(const Op& op, const std::string& message) { return std::string(op.name()) + ": " + message; }

// Runs the kernel of one op that is neither a region op nor a terminator. The switch has no
// default, so an op added to KILN_OPS without a kernel is a compiler warning (-Wswitch).
Expected<Tensor> runKernel(const Op& op, const std::vector<const Tensor*>& in) {
  using namespace interp;
  switch (op.kind()) {
    case OpKind::Neg:
    case OpKind::Abs:
    case OpKind::Exp:
    case OpKind::Log:
    case OpKind::Sqrt:
    case OpKind::Rsqrt:
    case OpKind::Reciprocal:
    case OpKind::Tanh:
    case OpKind::Sigmoid:
    case OpKind::Erf:
    case OpKind::Sin:
    case OpKind::Cos:
    case OpKind::Floor:
    case OpKind::Ceil:
    case OpKind::Sign:
    case OpKind::Log1p:
    case OpKind::Asin:
    case OpKind::Acos:
    case OpKind::Atan:
    case OpKind::Relu:
    case OpKind::Silu:
    case OpKind::Gelu:
    case OpKind::Not: return unary(op, *in[0]);
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Div:
    case OpKind::Max:
    case OpKind::Min:
    case OpKind::Pow:
    case OpKind::ShiftLeft:
    case OpKind::ShiftRight:
    case OpKind::Eq:
    case OpKind::Ne:
    case OpKind::Lt:
    case OpKind::Le:
    case OpKind::Gt:
    case OpKind::Ge:
    case OpKind::And:
    case OpKind::Or:
    case OpKind::Xor: return binary(op, *in[0], *in[1]);
    case OpKind::Select: return select(op, *in[0], *in[1], *in[2]);
    case OpKind::Cast: return cast(op, *in[0]);
    case OpKind::Constant: return op.attr("value").getDense();
    case OpKind::Iota: return iota(op);
    case OpKind::ReduceSum:
    case OpKind::ReduceMean:
    case OpKind::ReduceMax:
    case OpKind::ReduceMin:
    case OpKind::ReduceProd: return reduce(op, *in[0]);
    case OpKind::Argmax:
    case OpKind::Argmin: return argReduce(op, *in[0]);
    case OpKind::Softmax:
    case OpKind::LogSoftmax: return softmax(op, *in[0]);
    case OpKind::LayerNorm: return layerNorm(op, *in[0], *in[1], *in[2]);
    case OpKind::Matmul: return matmul(op, *in[0], *in[1]);
    case OpKind::Reshape: return reshape(op, *in[0]);
    case OpKind::Transpose: return transpose(op, *in[0]);
    case OpKind::BroadcastTo: return broadcastTo(op, *in[0]);
    case OpKind::Concat: return concat(op, in);
    case OpKind::Slice: return slice(op, *in[0]);
    case OpKind::Gather: return gather(op, *in[0], *in[1]);
    case OpKind::GatherBackward: return gatherBackward(op, *in[0], *in[1]);
    case OpKind::Pad: return pad(op, *in[0]);
    case OpKind::Conv2d: return conv2d(op, *in[0], *in[1]);
    case OpKind::Conv2dBackwardData:
    case OpKind::Conv2dBackwardFilter: return conv2dBackward(op, *in[0], *in[1]);
    case OpKind::MaxPool2d:
    case OpKind::AvgPool2d: return pool2d(op, *in[0]);
    case OpKind::MaxPool2dBackward:
    case OpKind::AvgPool2dBackward: return pool2dBackward(op, in);
    case OpKind::BatchNorm: return batchNorm(op, *in[0], *in[1], *in[2], *in[3], *in[4]);
    case OpKind::SoftmaxCrossEntropy: return softmaxCrossEntropy(op, *in[0], *in[1]);
    case OpKind::CheckRange: return checkRange(op, *in[0]);
    // One replica: the sum and the mean over replicas are both the value itself.
    case OpKind::AllReduce: return *in[0];
    // The values of a placed function are the same on every device.
    case OpKind::Transfer: return *in[0];
    case OpKind::Map:
    case OpKind::While:
    case OpKind::Fusion:
    case OpKind::Return:
    case OpKind::Yield: break;  // run by Interpreter::runOp and runBlock, never here
  }
  internalError(__FILE__, __LINE__, "interpreter: no kernel for " + std::string(op.name()));
}

class Interpreter {
 public:
  explicit Interpreter(const InterpretOptions& options) : options_(options) {}

  // Runs `block` in `frame` (its arguments already bound) and returns what its terminator returns.
  Expected<std::vector<Tensor>> runBlock(const Block& block, Frame& frame) {
    for (const auto& opPtr : block.ops()) {
      const Op& op = *opPtr;
      if (op.info().cls == OpClass::Terminator) {
        std::vector<Tensor> results;
        for (Value* v : op.operands()) results.push_back(frame.lookup(v));
        return results;
      }
      auto results = runOp(op, frame);
      if (!results) return results.error();
      for (size_t i = 0; i < results->size(); ++i) frame.bind(op.result(i), std::move((*results)[i]));
    }
    return Error("block has no terminator (was the function verified?)");
  }

 private:
  Expected<std::vector<Tensor>> runOp(const Op& op, const Frame& frame) {
    if (op.kind() == OpKind::Map) return runMap(op, frame);
    if (op.kind() == OpKind::While) return runWhile(op, frame);
    if (op.kind() == OpKind::Fusion) {
      // A fused group computes what its ops compute one by one.
      Frame inner(&frame);
      return runBlock(*op.region(0), inner);
    }
    std::vector<const Tensor*> inputs;
    for (Value* v : op.operands()) inputs.push_back(&frame.lookup(v));
    auto result = runKernel(op, inputs);
    if (!result) {
      // check_range's message names its subject itself (`what`: "softmax_cross_entropy: label").
      if (op.kind() == OpKind::CheckRange) return Error(result.error().message(), op.loc());
      return Error(prefixed(op, result.error().message()), op.loc());
    }
    if (op.kind() == OpKind::AllReduce && options_.allReduce) KILN_TRY(options_.allReduce(op, *result));
    return std::vector<Tensor>{std::move(*result)};
  }

  // Runs the body once per slice along axis 0 of the operands and stacks what it yields.
  // Errors inside the body already name their own op and location.
  Expected<std::vector<Tensor>> runMap(const Op& op, const Frame& frame) {
    const Block& body = *op.region(0);
    std::vector<Tensor> results;
    for (Value* r : op.results()) results.emplace_back(r->type());
    int64_t n = op.operand(0)->type().shape[0];
    for (int64_t i = 0; i < n; ++i) {
      Frame inner(&frame);
      for (size_t k = 0; k < op.numOperands(); ++k)
        inner.bind(body.argument(k), interp::takeRow(frame.lookup(op.operand(k)), i, body.argument(k)->type()));
      auto ys = runBlock(body, inner);
      if (!ys) return ys.error();
      for (size_t k = 0; k < results.size(); ++k) interp::putRow(results[k], i, (*ys)[k]);
    }
    return results;
  }

  Expected<std::vector<Tensor>> runWhile(const Op& op, const Frame& frame) {
    const Block& cond = *op.region(0);
    const Block& body = *op.region(1);
    std::vector<Tensor> carried;
    for (Value* v : op.operands()) carried.push_back(frame.lookup(v));
    for (int64_t iteration = 0;; ++iteration) {
      Frame condFrame(&frame);
      for (size_t k = 0; k < carried.size(); ++k) condFrame.bind(cond.argument(k), carried[k]);
      auto keepGoing = runBlock(cond, condFrame);
      if (!keepGoing) return keepGoing.error();
      if (!(*keepGoing)[0].getBool(0)) return carried;
      if (iteration >= options_.maxWhileIterations)
        return Error(prefixed(op, "no result after " + std::to_string(options_.maxWhileIterations) +
                                      " iterations (InterpretOptions::maxWhileIterations)"),
                     op.loc());
      Frame bodyFrame(&frame);
      for (size_t k = 0; k < carried.size(); ++k) bodyFrame.bind(body.argument(k), std::move(carried[k]));
      auto next = runBlock(body, bodyFrame);
      if (!next) return next.error();
      carried = std::move(*next);
    }
  }

  const InterpretOptions& options_;
};

}  // namespace

Expected<Tensor> evaluateOp(const Op& op, const std::vector<const Tensor*>& inputs) {
  KILN_INTERNAL_CHECK(op.numRegions() == 0 && op.info().cls != OpClass::Terminator,
                      "evaluateOp: " + std::string(op.name()) + " is not a single-kernel op");
  KILN_INTERNAL_CHECK(inputs.size() == op.numOperands(), "evaluateOp: one input per operand");
  return runKernel(op, inputs);
}

Expected<std::vector<Tensor>> interpret(const Function& function, const std::vector<Tensor>& inputs,
                                        const InterpretOptions& options) {
  std::vector<Value*> params = function.params();
  if (inputs.size() != params.size())
    return Error("@" + function.name() + " takes " + std::to_string(params.size()) + " input" +
                 (params.size() == 1 ? "" : "s") + ", got " + std::to_string(inputs.size()));
  Frame frame;
  for (size_t i = 0; i < params.size(); ++i) {
    if (inputs[i].type() != params[i]->type()) {
      std::string name = params[i]->name().empty() ? "" : " (%" + params[i]->name() + ")";
      return Error("input " + std::to_string(i) + name + ": expected " + params[i]->type().str() + ", got " +
                   inputs[i].type().str());
    }
    frame.bind(params[i], inputs[i]);
  }
  return Interpreter(options).runBlock(function.body(), frame);
}

}  // namespace kiln
