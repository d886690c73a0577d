// Dense kernels: matmul, conv2d, max/avg pooling and batch_norm. Float inputs are widened to
// double once, products are summed in double (f64 ones fused, multiplyAdd) and each result is
// rounded once when stored; int
// matmul wraps modulo 2^64 and then to its width.
#include <algorithm>
#include <functional>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ir/interp/kernels.h"
#include "ir/shape_rules.h"

namespace kiln::interp {

namespace {

// One M x K times K x N row-major product; store(i, v) receives element i of the M x N result.
// Fused: f64 products add to the sum in one rounding (multiplyAdd).
template <class T, bool Fused = false, class Store>
void matmulBlock(const T* a, const T* b, int64_t m, int64_t k, int64_t n, std::vector<T>& acc, Store store) {
  for (int64_t i = 0; i < m; ++i) {
    acc.assign(static_cast<size_t>(n), T(0));
    for (int64_t p = 0; p < k; ++p) {
      T av = a[i * k + p];
      const T* brow = b + p * n;
      for (int64_t j = 0; j < n; ++j) {
        if constexpr (std::is_same_v<T, int64_t>) acc[j] = wrappingAdd(acc[j], wrappingMul(av, brow[j]));
        else acc[j] = multiplyAdd<Fused>(av, brow[j], acc[j]);
      }
    }
    for (int64_t j = 0; j < n; ++j) store(i * n + j, acc[j]);
  }
}

}  // namespace

// NumPy matmul: a 1-D a is a row [1,K], a 1-D b a column [K,1] (those dims are dropped from the
// result); leading batch dims broadcast.
Tensor matmul(const Op& op, const Tensor& a, const Tensor& b) {
  Tensor out(op.result()->type());
  Shape as = a.rank() == 1 ? Shape{1, a.shape()[0]} : a.shape();
  Shape bs = b.rank() == 1 ? Shape{b.shape()[0], 1} : b.shape();
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  Shape batchA(as.begin(), as.end() - 2), batchB(bs.begin(), bs.end() - 2);
  Shape batch = *broadcastShapes(batchA, batchB);
  std::vector<int64_t> ia = broadcastIndices(batchA, batch), ib = broadcastIndices(batchB, batch);
  // Dropping 1-D promotion's unit dims leaves row-major order unchanged: out is [batch.., m, n].
  if (isInt(out.dtype())) {
    std::vector<int64_t> av = toInts(a), bv = toInts(b), acc;
    for (size_t bi = 0; bi < ia.size(); ++bi) {
      int64_t outBase = static_cast<int64_t>(bi) * m * n;
      matmulBlock<int64_t>(av.data() + ia[bi] * m * k, bv.data() + ib[bi] * k * n, m, k, n, acc,
                           [&](int64_t i, int64_t v) { out.setInt(outBase + i, v); });
    }
  } else {
    std::vector<double> av = toDoubles(a), bv = toDoubles(b), acc;
    auto blocks = [&](auto fused) {
      for (size_t bi = 0; bi < ia.size(); ++bi) {
        int64_t outBase = static_cast<int64_t>(bi) * m * n;
        matmulBlock<double, decltype(fused)::value>(av.data() + ia[bi] * m * k, bv.data() + ib[bi] * k * n, m, k, n, acc,
                                                    [&](int64_t i, double v) { out.setDouble(outBase + i, v); });
      }
    };
    if (a.dtype() == DType::F64) blocks(std::true_type{});
    else blocks(std::false_type{});
  }
  return out;
}

// ONNX Conv (cross-correlation): out[n,o,y,x] = sum over c, ky, kx of
//   in[n, g*C/groups + c, y*sy - top + ky*dy, x*sx - left + kx*dx] * w[o, c, ky, kx]
// with g = o / (O/groups) and out-of-range input positions reading zero padding: the terms
// forEachConvTerm visits, which also drives the backward convolutions (backward.cpp).
void forEachConvTerm(const Op& op, const Shape& xs, const Shape& ws, const Shape& ys,
                     const std::function<void(int64_t y, int64_t x, int64_t w)>& term) {
  std::vector<int64_t> strides = op.intsAttr("strides"), pads = op.intsAttr("pads"), dil = op.intsAttr("dilations");
  int64_t channels = xs[1], height = xs[2], width = xs[3];
  int64_t outChannels = ws[0], groupChannels = ws[1], kh = ws[2], kw = ws[3];
  int64_t outPerGroup = outChannels / op.intAttr("groups");
  int64_t index = 0;
  for (int64_t nb = 0; nb < xs[0]; ++nb)
    for (int64_t o = 0; o < outChannels; ++o)
      for (int64_t oy = 0; oy < ys[2]; ++oy)
        for (int64_t ox = 0; ox < ys[3]; ++ox, ++index) {
          int64_t firstChannel = (o / outPerGroup) * groupChannels;
          for (int64_t c = 0; c < groupChannels; ++c)
            for (int64_t ky = 0; ky < kh; ++ky) {
              int64_t iy = oy * strides[0] - pads[0] + ky * dil[0];
              if (iy < 0 || iy >= height) continue;
              for (int64_t kx = 0; kx < kw; ++kx) {
                int64_t ix = ox * strides[1] - pads[1] + kx * dil[1];
                if (ix < 0 || ix >= width) continue;
                term(index, ((nb * channels + firstChannel + c) * height + iy) * width + ix,
                     ((o * groupChannels + c) * kh + ky) * kw + kx);
              }
            }
        }
}

ChannelsFirstView channelsFirstView(const Op& op, const Shape& stored) {
  if (!isChannelsLast(op)) return {stored, {}};
  Shape s = permuteShape(stored, kChannelsFirst);
  return {s, stridedIndices(s, {s[1] * s[2] * s[3], 1, s[3] * s[1], s[1]})};
}

Tensor conv2d(const Op& op, const Tensor& x, const Tensor& w) {
  Tensor out(op.result()->type());
  std::vector<double> xv = toDoubles(x), wv = toDoubles(w), sums(static_cast<size_t>(out.numElements()), 0.0);
  ChannelsFirstView xs = channelsFirstView(op, x.shape()), ys = channelsFirstView(op, out.shape());
  bool fused = x.dtype() == DType::F64;
  forEachConvTerm(op, xs.shape, w.shape(), ys.shape, [&](int64_t y, int64_t xi, int64_t wi) {
    double& sum = sums[static_cast<size_t>(ys(y))];
    sum = multiplyAdd(xv[static_cast<size_t>(xs(xi))], wv[static_cast<size_t>(wi)], sum, fused);
  });
  for (size_t i = 0; i < sums.size(); ++i) out.setDouble(static_cast<int64_t>(i), sums[i]);
  return out;
}

// Every window of a pool over channels-first `xs` giving `ys`, in ys's row-major order: its
// index in ys and its real elements' indices in xs (row-major in the window; padding never takes
// part). pads < kernel (checked by the verifier) leaves every window at least one real element.
void forEachPoolWindow(const Op& op, const Shape& xs, const Shape& ys,
                       const std::function<void(int64_t window, const std::vector<int64_t>& members)>& visit) {
  PoolWindow w = poolWindow(op);
  int64_t planes = xs[0] * xs[1], height = xs[2], width = xs[3];
  std::vector<int64_t> members;
  int64_t window = 0;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oy = 0; oy < ys[2]; ++oy)
      for (int64_t ox = 0; ox < ys[3]; ++ox) {
        members.clear();
        for (int64_t ky = 0; ky < w.kernel[0]; ++ky) {
          int64_t iy = oy * w.strides[0] - w.pads[0] + ky * w.dilations[0];
          if (iy < 0 || iy >= height) continue;
          for (int64_t kx = 0; kx < w.kernel[1]; ++kx) {
            int64_t ix = ox * w.strides[1] - w.pads[1] + kx * w.dilations[1];
            if (ix >= 0 && ix < width) members.push_back((p * height + iy) * width + ix);
          }
        }
        visit(window++, members);
      }
}

// max_pool2d is the max of the window's real elements (a NaN wins, as in max), avg_pool2d their
// mean (count_include_pad = false). Channels-last pools the channels-first view's planes
// (ChannelsFirstView).
Tensor pool2d(const Op& op, const Tensor& x) {
  Tensor out(op.result()->type());
  bool isMax = op.kind() == OpKind::MaxPool2d;
  ChannelsFirstView xs = channelsFirstView(op, x.shape()), ys = channelsFirstView(op, out.shape());
  forEachPoolWindow(op, xs.shape, ys.shape, [&](int64_t window, const std::vector<int64_t>& members) {
    double acc = isMax ? -INFINITY : 0.0;
    for (int64_t at : members) {
      double v = x.getDouble(xs(at));
      if (!isMax) acc += v;
      else if (std::isnan(v) || std::isnan(acc)) acc = std::numeric_limits<double>::quiet_NaN();
      else acc = std::max(acc, v);
    }
    out.setDouble(ys(window), isMax ? acc : acc / static_cast<double>(members.size()));
  });
  return out;
}

// Inference form over axis 1: y = (x - mean[c]) / sqrt(var[c] + epsilon) * scale[c] + bias[c].
Tensor batchNorm(const Op& op, const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& mean,
                 const Tensor& var) {
  Tensor out(op.result()->type());
  double epsilon = op.floatAttr("epsilon");
  AxisSplit s = splitAt(x.shape(), 1);
  for (int64_t i = 0; i < x.numElements(); ++i) {
    int64_t c = (i / s.inner) % s.n;
    double y = (x.getDouble(i) - mean.getDouble(c)) / std::sqrt(var.getDouble(c) + epsilon);
    out.setDouble(i, y * scale.getDouble(c) + bias.getDouble(c));
  }
  return out;
}

}  // namespace kiln::interp
