// BatchNormalization (inference and training), InstanceNormalization, LRN and
// DepthToSpace/SpaceToDepth (reshape + transpose).
#include <cmath>

#include "frontend/onnx/onnx_converters.h"
#include "frontend/onnx/onnx_window.h"

namespace kiln::onnx_import {

namespace {

// Training mode (opset 14): normalise with the batch's own mean and (population) variance over
// every axis but 1; also output running_mean/var = old * momentum + batch * (1 - momentum).
Status batchNormTraining(NodeContext& c, const std::vector<Value*>& in) {
  int rank = in[0]->type().rank();
  std::vector<int64_t> axes = {0};
  for (int64_t i = 2; i < rank; ++i) axes.push_back(i);
  Shape bs(static_cast<size_t>(rank), 1);
  bs[1] = in[0]->type().shape[1];
  AttrList keep = {{"axes", Attr::ints(axes)}, {"keepdims", Attr(true)}};
  Value* mean = c.op(OpKind::ReduceMean, {in[0]}, keep);
  Value* d = c.op(OpKind::Sub, {in[0], mean});
  Value* var = c.op(OpKind::ReduceMean, {c.op(OpKind::Mul, {d, d})}, keep);
  Value* inv = c.op(OpKind::Rsqrt, {c.op(OpKind::Add, {var, c.scalarLike(in[0], c.floatAttr("epsilon", 1e-5f))})});
  Value* y = c.op(OpKind::Add, {c.op(OpKind::Mul, {c.op(OpKind::Mul, {d, inv}), c.reshape(in[1], bs)}), c.reshape(in[2], bs)});
  double momentum = c.floatAttr("momentum", 0.9f);
  Shape channels = {bs[1]};
  auto running = [&](Value* old, Value* batch) {
    return c.op(OpKind::Add, {c.op(OpKind::Mul, {old, c.scalarLike(old, momentum)}),
                              c.op(OpKind::Mul, {c.reshape(batch, channels), c.scalarLike(old, 1 - momentum)})});
  };
  c.setOutput(1, running(in[3], mean));
  c.setOutput(2, running(in[4], var));
  return c.result(y);
}

Status batchNorm(NodeContext& c) {
  std::vector<Value*> in;
  for (size_t i = 0; i < 5; ++i) {
    auto v = c.input(i);
    if (!v) return v.error();
    in.push_back(*v);
  }
  int rank = in[0]->type().rank();
  if (c.intAttr("training_mode", 0) || c.wantsOutput(1) || c.wantsOutput(2)) return batchNormTraining(c, in);
  if (rank == 4) return c.result(c.op(OpKind::BatchNorm, in, {{"epsilon", Attr(static_cast<double>(c.floatAttr("epsilon", 1e-5f)))}}));
  // Other ranks: (x - mean) / sqrt(var + eps) * scale + bias with [C] lined up on axis 1.
  Shape bs(static_cast<size_t>(rank), 1);
  bs[1] = in[0]->type().shape[1];
  Value* eps = c.scalarLike(in[0], c.floatAttr("epsilon", 1e-5f));
  Value* inv = c.op(OpKind::Rsqrt, {c.op(OpKind::Add, {c.reshape(in[4], bs), eps})});
  Value* y = c.op(OpKind::Mul, {c.op(OpKind::Sub, {in[0], c.reshape(in[3], bs)}), c.op(OpKind::Mul, {inv, c.reshape(in[1], bs)})});
  return c.result(c.op(OpKind::Add, {y, c.reshape(in[2], bs)}));
}

Status instanceNorm(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  auto scale = c.input(1);
  if (!scale) return scale.error();
  auto bias = c.input(2);
  if (!bias) return bias.error();
  int rank = (*x)->type().rank();
  AttrList keep = {{"axes", Attr::ints(spatialAxes(rank))}, {"keepdims", Attr(true)}};
  Shape bs(static_cast<size_t>(rank), 1);
  bs[1] = (*x)->type().shape[1];
  Value* mean = c.op(OpKind::ReduceMean, {*x}, keep);
  Value* d = c.op(OpKind::Sub, {*x, mean});
  Value* var = c.op(OpKind::ReduceMean, {c.op(OpKind::Mul, {d, d})}, keep);
  Value* inv = c.op(OpKind::Rsqrt, {c.op(OpKind::Add, {var, c.scalarLike(*x, c.floatAttr("epsilon", 1e-5f))})});
  Value* y = c.op(OpKind::Mul, {c.op(OpKind::Mul, {d, inv}), c.reshape(*scale, bs)});
  return c.result(c.op(OpKind::Add, {y, c.reshape(*bias, bs)}));
}

// LRN: x / (bias + alpha/size * sum of x^2 over a window of `size` channels)^beta.
Status lrn(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  int64_t size = c.intAttr("size", 0);
  if (size < 1) return c.error("needs size >= 1");
  double alpha = c.floatAttr("alpha", 1e-4f), beta = c.floatAttr("beta", 0.75f), bias = c.floatAttr("bias", 1.0f);
  const Shape& s = (*x)->type().shape;
  int rank = static_cast<int>(s.size());
  std::vector<int64_t> pads(2 * static_cast<size_t>(rank), 0);
  pads[1] = (size - 1) / 2;
  pads[static_cast<size_t>(rank) + 1] = size - 1 - (size - 1) / 2;
  Value* sq = c.op(OpKind::Pad, {c.op(OpKind::Mul, {*x, *x})}, {{"pads", Attr::ints(pads)}});
  Value* sum = nullptr;
  for (int64_t k = 0; k < size; ++k) {
    Value* part = c.op(OpKind::Slice, {sq}, {{"starts", Attr::ints({k})}, {"ends", Attr::ints({k + s[1]})}, {"axes", Attr::ints({1})}});
    sum = sum ? c.op(OpKind::Add, {sum, part}) : part;
  }
  Value* base = c.op(OpKind::Add, {c.op(OpKind::Mul, {sum, c.scalarLike(*x, alpha / static_cast<double>(size))}), c.scalarLike(*x, bias)});
  return c.result(c.op(OpKind::Div, {*x, c.op(OpKind::Pow, {base, c.scalarLike(*x, beta)})}));
}

Status depthToSpace(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  const Shape& s = (*x)->type().shape;
  int64_t b = c.intAttr("blocksize", 0);
  if (s.size() != 4 || b < 1 || s[1] % (b * b)) return c.error("needs [N,C,H,W] with C divisible by blocksize^2");
  int64_t n = s[0], ch = s[1] / (b * b), h = s[2], w = s[3];
  bool crd = c.stringAttr("mode", "DCR") == "CRD";
  Value* r = crd ? c.reshape(*x, {n, ch, b, b, h, w}) : c.reshape(*x, {n, b, b, ch, h, w});
  std::vector<int64_t> perm = crd ? std::vector<int64_t>{0, 1, 4, 2, 5, 3} : std::vector<int64_t>{0, 3, 4, 1, 5, 2};
  return c.result(c.reshape(c.op(OpKind::Transpose, {r}, {{"perm", Attr::ints(perm)}}), {n, ch, h * b, w * b}));
}

Status spaceToDepth(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  const Shape& s = (*x)->type().shape;
  int64_t b = c.intAttr("blocksize", 0);
  if (s.size() != 4 || b < 1 || s[2] % b || s[3] % b) return c.error("needs [N,C,H,W] with H and W divisible by blocksize");
  int64_t n = s[0], ch = s[1], h = s[2] / b, w = s[3] / b;
  Value* r = c.reshape(*x, {n, ch, h, b, w, b});
  Value* t = c.op(OpKind::Transpose, {r}, {{"perm", Attr::ints({0, 3, 5, 1, 2, 4})}});
  return c.result(c.reshape(t, {n, ch * b * b, h, w}));
}

}  // namespace

void addNnConverters(ConverterTable& t) {
  t["BatchNormalization"] = batchNorm;
  t["InstanceNormalization"] = instanceNorm;
  t["LRN"] = lrn;
  t["DepthToSpace"] = depthToSpace;
  t["SpaceToDepth"] = spaceToDepth;
}

}  // namespace kiln::onnx_import
