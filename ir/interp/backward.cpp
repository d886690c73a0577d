// The backward ops (docs/ir.md): each is the adjoint of its forward op, computed here by walking
// the forward op's loops and scattering each cotangent element back to what produced it, in
// double, each result rounded once. (Generated code computes the same sums gathered per output
// element instead; the tests check both against finite differences and against each other.)
#include <cmath>
#include <vector>

#include "ir/interp/kernels.h"
#include "ir/shape_rules.h"

namespace kiln::interp {

namespace {

Tensor fromDoubles(const TensorType& type, const std::vector<double>& values) {
  Tensor out(type);
  for (size_t i = 0; i < values.size(); ++i) out.setDouble(static_cast<int64_t>(i), values[i]);
  return out;
}

}  // namespace

// gather_backward: zeros of input_shape, then dy's slices added at the rows gather read.
Expected<Tensor> gatherBackward(const Op& op, const Tensor& dy, const Tensor& indices) {
  const TensorType& type = op.result()->type();
  int axis = *normalizeAxis(op.intAttr("axis"), type.rank());
  AxisSplit s = splitAt(type.shape, axis);
  int64_t numIndices = indices.numElements();
  std::vector<double> dx(static_cast<size_t>(type.numElements()), 0.0);
  int64_t dyIndex = 0;
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t j = 0; j < numIndices; ++j) {
      int64_t index = indices.getInt(j);
      if (index < -s.n || index >= s.n)
        return Error("index " + std::to_string(index) + " is out of range [" + std::to_string(-s.n) + ", " +
                     std::to_string(s.n) + ") for axis " + std::to_string(axis));
      int64_t row = index < 0 ? index + s.n : index;
      for (int64_t i = 0; i < s.inner; ++i) dx[(o * s.n + row) * s.inner + i] += dy.getDouble(dyIndex++);
    }
  return fromDoubles(type, dx);
}

// conv2d's terms (forEachConvTerm), each product's contribution to y sent back to x or w:
// dx[x] += dy[y] * w[w]  and  dw[w] += dy[y] * x[x] (multiplyAdd). Channels-last runs over the channels-first
// views of x and dy (ChannelsFirstView).
Tensor conv2dBackward(const Op& op, const Tensor& a, const Tensor& b) {
  bool data = op.kind() == OpKind::Conv2dBackwardData;
  const Tensor& dy = data ? a : b;
  const TensorType& type = op.result()->type();
  std::vector<double> other = toDoubles(data ? b : a), dyv = toDoubles(dy);
  std::vector<double> out(static_cast<size_t>(type.numElements()), 0.0);
  ChannelsFirstView xs = channelsFirstView(op, data ? type.shape : a.shape()), ys = channelsFirstView(op, dy.shape());
  bool fused = dy.dtype() == DType::F64;
  forEachConvTerm(op, xs.shape, data ? b.shape() : type.shape, ys.shape, [&](int64_t y, int64_t x, int64_t w) {
    auto at = [](int64_t i) { return static_cast<size_t>(i); };
    double& sum = data ? out[at(xs(x))] : out[at(w)];
    sum = multiplyAdd(dyv[at(ys(y))], other[at(data ? w : xs(x))], sum, fused);
  });
  return fromDoubles(type, out);
}

// Pooling's windows (forEachPoolWindow), each sending its dy back: max to the window's first
// maximal real element (row-major in the channels-first view; a NaN is maximal, as max_pool2d
// lets it win), avg in equal shares to its real elements.
Tensor pool2dBackward(const Op& op, const std::vector<const Tensor*>& in) {
  bool isMax = op.kind() == OpKind::MaxPool2dBackward;
  const Tensor& dy = *in.back();
  const TensorType& type = op.result()->type();
  ChannelsFirstView xs = channelsFirstView(op, type.shape), ys = channelsFirstView(op, dy.shape());
  std::vector<double> dx(static_cast<size_t>(type.numElements()), 0.0);
  forEachPoolWindow(op, xs.shape, ys.shape, [&](int64_t window, const std::vector<int64_t>& members) {
    double g = dy.getDouble(ys(window));
    if (!isMax) {
      for (int64_t at : members) dx[static_cast<size_t>(xs(at))] += g / static_cast<double>(members.size());
      return;
    }
    int64_t best = -1;
    double bestValue = 0;
    for (int64_t at : members) {
      double v = in[0]->getDouble(xs(at));
      if (best < 0 || (!std::isnan(bestValue) && (std::isnan(v) || v > bestValue))) best = xs(at), bestValue = v;
    }
    dx[static_cast<size_t>(best)] += g;
  });
  return fromDoubles(type, dx);
}

}  // namespace kiln::interp
