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
// dx[x] += dy[y] * w[w]  and  dw[w] += dy[y] * x[x]. Channels-last runs over the channels-first
// views of x and dy (ChannelsFirstView).
Tensor conv2dBackward(const Op& op, const Tensor& a, const Tensor& b) {
  bool data = op.kind() == OpKind::Conv2dBackwardData;
  const Tensor& dy = data ? a : b;
  const TensorType& type = op.result()->type();
  std::vector<double> other = toDoubles(data ? b : a), dyv = toDoubles(dy);
  std::vector<double> out(static_cast<size_t>(type.numElements()), 0.0);
  ChannelsFirstView xs = channelsFirstView(op, data ? type.shape : a.shape()), ys = channelsFirstView(op, dy.shape());
  forEachConvTerm(op, xs.shape, data ? b.shape() : type.shape, ys.shape, [&](int64_t y, int64_t x, int64_t w) {
    auto at = [](int64_t i) { return static_cast<size_t>(i); };
    if (data) out[at(xs(x))] += dyv[at(ys(y))] * other[at(w)];
    else out[at(w)] += dyv[at(ys(y))] * other[at(xs(x))];
  });
  return fromDoubles(type, out);
}

// Pooling's windows, each sending its dy back: max to the window's first maximal real element
// (row-major in the channels-first view; a NaN is maximal, as max_pool2d lets it win), avg in
// equal shares to its real elements.
Tensor pool2dBackward(const Op& op, const std::vector<const Tensor*>& in) {
  bool isMax = op.kind() == OpKind::MaxPool2dBackward;
  const Tensor& dy = *in.back();
  const TensorType& type = op.result()->type();
  PoolWindow w = poolWindow(op);
  ChannelsFirstView xs = channelsFirstView(op, type.shape), ys = channelsFirstView(op, dy.shape());
  int64_t planes = xs.shape[0] * xs.shape[1], height = xs.shape[2], width = xs.shape[3];
  int64_t outH = ys.shape[2], outW = ys.shape[3];
  std::vector<double> dx(static_cast<size_t>(type.numElements()), 0.0);
  int64_t index = 0;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oy = 0; oy < outH; ++oy)
      for (int64_t ox = 0; ox < outW; ++ox) {
        double g = dy.getDouble(ys(index++));
        std::vector<int64_t> members;
        int64_t best = -1;
        double bestValue = 0;
        for (int64_t ky = 0; ky < w.kernel[0]; ++ky) {
          int64_t iy = oy * w.strides[0] - w.pads[0] + ky * w.dilations[0];
          if (iy < 0 || iy >= height) continue;
          for (int64_t kx = 0; kx < w.kernel[1]; ++kx) {
            int64_t ix = ox * w.strides[1] - w.pads[1] + kx * w.dilations[1];
            if (ix < 0 || ix >= width) continue;
            int64_t at = xs((p * height + iy) * width + ix);
            members.push_back(at);
            if (!isMax) continue;
            double v = in[0]->getDouble(at);
            bool better = best < 0 || (!std::isnan(bestValue) && (std::isnan(v) || v > bestValue));
            if (better) best = at, bestValue = v;
          }
        }
        if (isMax) dx[static_cast<size_t>(best)] += g;
        else
          for (int64_t at : members) dx[static_cast<size_t>(at)] += g / static_cast<double>(members.size());
      }
  return fromDoubles(type, dx);
}

}  // namespace kiln::interp
