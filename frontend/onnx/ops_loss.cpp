// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (log_softmax along axis 1, then the same
// loss). The class of each element is picked with a one-hot select and a sum over the class axis,
// which is exact; ignore_index entries pick nothing and weigh 0.
#include "frontend/onnx/onnx_converters.h"

namespace kiln::onnx_import {

namespace {

// loss over x [N,C,d..] and target [N,d..]; weight [C] is optional.
Expected<Value*> nllLoss(NodeContext& c, Value* x, Value* target, Value* weight) {
  const Shape& xs = x->type().shape;
  const Shape& ts = target->type().shape;
  if (xs.size() < 2 || ts.size() + 1 != xs.size())
    return c.error("expects input [N,C,...] and target [N,...], got " + x->type().str() + " and " + target->type().str());
  DType t = x->type().dtype;
  Shape tKept = ts;
  tKept.insert(tKept.begin() + 1, 1);
  Value* k = c.b().iota({target->type().dtype, xs}, 1);
  Value* mask = c.op(OpKind::Eq, {k, c.reshape(target, tKept)});
  Value* picked = c.op(OpKind::ReduceSum, {c.op(OpKind::Select, {mask, x, c.scalar(t, 0)})}, {{"axes", Attr::ints({1})}});
  Value* w;
  Value* valid = nullptr;
  if (c.hasAttr("ignore_index"))
    valid = c.op(OpKind::Ne, {target, c.scalarLike(target, static_cast<double>(c.intAttr("ignore_index", 0)))});
  if (weight) {
    Value* safe = valid ? c.op(OpKind::Select, {valid, target, c.scalarLike(target, 0)}) : target;
    w = c.op(OpKind::Gather, {weight, safe});
    if (valid) w = c.op(OpKind::Select, {valid, w, c.scalar(t, 0)});
  } else {
    w = valid ? c.cast(valid, t) : c.op(OpKind::BroadcastTo, {c.scalar(t, 1)}, {{"shape", Attr::ints(ts)}});
  }
  Value* loss = c.op(OpKind::Neg, {c.op(OpKind::Mul, {picked, w})});
  std::string reduction = c.stringAttr("reduction", "mean");
  if (reduction == "none") return loss;
  Value* sum = c.op(OpKind::ReduceSum, {loss});
  if (reduction == "sum") return sum;
  if (reduction != "mean") return c.error("unknown reduction '" + reduction + "'");
  return c.op(OpKind::Div, {sum, c.op(OpKind::ReduceSum, {w})});
}

Status negativeLogLikelihood(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  auto target = c.input(1);
  if (!target) return target.error();
  Value* weight = nullptr;
  if (c.hasInput(2)) {
    auto w = c.input(2);
    if (!w) return w.error();
    weight = *w;
  }
  auto loss = nllLoss(c, *x, *target, weight);
  if (!loss) return loss.error();
  return c.result(*loss);
}

Status softmaxCrossEntropy(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  auto labels = c.input(1);
  if (!labels) return labels.error();
  Value* weight = nullptr;
  if (c.hasInput(2)) {
    auto w = c.input(2);
    if (!w) return w.error();
    weight = *w;
  }
  Value* logProb = c.op(OpKind::LogSoftmax, {*x}, {{"axis", Attr(int64_t{1})}});
  if (!logProb) return c.b().status();
  auto loss = nllLoss(c, logProb, *labels, weight);
  if (!loss) return loss.error();
  c.setOutput(1, logProb);
  return c.result(*loss);
}

}  // namespace

void addLossConverters(ConverterTable& t) {
  t["NegativeLogLikelihoodLoss"] = negativeLogLikelihood;
  t["SoftmaxCrossEntropyLoss"] = softmaxCrossEntropy;
}

}  // namespace kiln::onnx_import
