// Reduction kernels: reduce_*, argmax/argmin, softmax, log_softmax, layer_norm and
// softmax_cross_entropy. Float math happens in double and is rounded once when stored.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "ir/interp/kernels.h"
#include "ir/shape_rules.h"

namespace kiln::interp {

namespace {

// For each element of x, the flat index of the output element it reduces into.
std::vector<int64_t> reductionTargets(const Shape& shape, const std::vector<int>& axes) {
  std::vector<int64_t> strides(shape.size(), 0);
  int64_t stride = 1;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    if (std::find(axes.begin(), axes.end(), d) != axes.end()) continue;  // reduced: stride 0
    strides[d] = stride;
    stride *= shape[d];
  }
  return stridedIndices(shape, strides);
}

// max and min that propagate NaN, like np.maximum and np.minimum.
double floatMax(double acc, double x) {
  return std::isnan(acc) || std::isnan(x) ? std::numeric_limits<double>::quiet_NaN() : std::max(acc, x);
}
double floatMin(double acc, double x) {
  return std::isnan(acc) || std::isnan(x) ? std::numeric_limits<double>::quiet_NaN() : std::min(acc, x);
}

}  // namespace

// Sums and products of ints wrap; the int mean is the wrapped sum divided by the count, truncated
// toward zero. Over zero elements: sum 0, prod 1, float mean NaN; int mean, max and min have no
// value there and are run-time errors.
Expected<Tensor> reduce(const Op& op, const Tensor& x) {
  Tensor out(op.result()->type());
  std::optional<std::vector<int64_t>> axesAttr;
  if (const Attr* a = op.findAttr("axes")) axesAttr = a->getIntList();
  auto axes = reductionAxes(axesAttr, x.rank());
  KILN_INTERNAL_CHECK(axes.ok(), "reduce: axes were not verified");
  std::vector<int64_t> target = reductionTargets(x.shape(), *axes);
  int64_t count = out.numElements() == 0 ? 0 : x.numElements() / out.numElements();
  OpKind kind = op.kind();
  bool isMaxMin = kind == OpKind::ReduceMax || kind == OpKind::ReduceMin;
  if (count == 0 && out.numElements() > 0 && (isMaxMin || (kind == OpKind::ReduceMean && isInt(x.dtype()))))
    return Error("cannot reduce zero elements of " + x.type().str() + " (the result has no value)");
  size_t m = static_cast<size_t>(out.numElements());

  if (isInt(x.dtype())) {
    // max and min compare order keys (orderKey), which are the values themselves for signed ints.
    bool isUnsignedInt = isUnsigned(x.dtype());
    int64_t identity = kind == OpKind::ReduceProd  ? 1
                       : kind == OpKind::ReduceMax ? std::numeric_limits<int64_t>::min()
                       : kind == OpKind::ReduceMin ? std::numeric_limits<int64_t>::max()
                                                   : 0;
    std::vector<int64_t> acc(m, identity);
    for (int64_t i = 0; i < x.numElements(); ++i) {
      int64_t v = x.getInt(i);
      int64_t& a = acc[static_cast<size_t>(target[i])];
      switch (kind) {
        case OpKind::ReduceMax: a = std::max(a, orderKey(v, isUnsignedInt)); break;
        case OpKind::ReduceMin: a = std::min(a, orderKey(v, isUnsignedInt)); break;
        case OpKind::ReduceProd: a = wrappingMul(a, v); break;
        default: a = wrappingAdd(a, v); break;  // sum, mean
      }
    }
    for (size_t j = 0; j < m; ++j) {
      // count > 0 here: an empty int mean was rejected above. Dividing by a positive count is safe.
      int64_t v = acc[j];
      if (isMaxMin) v = orderKey(v, isUnsignedInt);  // the key back to the value
      else if (kind == OpKind::ReduceMean)
        v = isUnsignedInt ? static_cast<int64_t>(static_cast<uint64_t>(v) / static_cast<uint64_t>(count)) : v / count;
      out.setInt(static_cast<int64_t>(j), v);
    }
    return out;
  }

  std::vector<double> acc(m, kind == OpKind::ReduceProd ? 1.0 : 0.0);
  if (isMaxMin) acc.assign(m, kind == OpKind::ReduceMax ? -INFINITY : INFINITY);
  for (int64_t i = 0; i < x.numElements(); ++i) {
    double v = x.getDouble(i);
    double& a = acc[static_cast<size_t>(target[i])];
    switch (kind) {
      case OpKind::ReduceMax: a = floatMax(a, v); break;
      case OpKind::ReduceMin: a = floatMin(a, v); break;
      case OpKind::ReduceProd: a *= v; break;
      default: a += v; break;  // sum, mean
    }
  }
  for (size_t j = 0; j < m; ++j) {
    double v = kind == OpKind::ReduceMean ? acc[j] / static_cast<double>(count) : acc[j];  // 0/0 = NaN
    out.setDouble(static_cast<int64_t>(j), v);
  }
  return out;
}

// The first occurrence of the max (min) wins; a NaN counts as larger (smaller) than everything,
// so the first NaN wins, as in NumPy.
Tensor argReduce(const Op& op, const Tensor& x) {
  Tensor out(op.result()->type());
  int axis = *normalizeAxis(op.intAttr("axis"), x.rank());
  AxisSplit s = splitAt(x.shape(), axis);
  bool isMax = op.kind() == OpKind::Argmax;
  bool ints = isInt(x.dtype());
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      auto at = [&](int64_t k) { return (o * s.n + k) * s.inner + i; };
      int64_t best = 0;
      for (int64_t k = 1; k < s.n; ++k) {
        bool better;
        if (ints) {
          bool isUnsignedInt = isUnsigned(x.dtype());
          int64_t v = orderKey(x.getInt(at(k)), isUnsignedInt), b = orderKey(x.getInt(at(best)), isUnsignedInt);
          better = isMax ? v > b : v < b;
        } else {
          double v = x.getDouble(at(k)), b = x.getDouble(at(best));
          if (std::isnan(b)) break;
          better = std::isnan(v) || (isMax ? v > b : v < b);
        }
        if (better) best = k;
      }
      out.setInt(o * s.inner + i, best);
    }
  }
  return out;
}

// softmax: exp(x - max) / sum; log_softmax: x - max - log(sum). A row that is all -inf, or holds
// +inf or NaN, gives NaN, as in NumPy and PyTorch.
Tensor softmax(const Op& op, const Tensor& x) {
  Tensor out(op.result()->type());
  int axis = *normalizeAxis(op.intAttr("axis"), x.rank());
  AxisSplit s = splitAt(x.shape(), axis);
  bool isLog = op.kind() == OpKind::LogSoftmax;
  std::vector<double> row(static_cast<size_t>(s.n));
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      auto at = [&](int64_t k) { return (o * s.n + k) * s.inner + i; };
      double max = -INFINITY;
      for (int64_t k = 0; k < s.n; ++k) {
        row[k] = x.getDouble(at(k));
        max = floatMax(max, row[k]);
      }
      double sum = 0;
      for (int64_t k = 0; k < s.n; ++k) sum += std::exp(row[k] - max);
      for (int64_t k = 0; k < s.n; ++k)
        out.setDouble(at(k), isLog ? row[k] - max - std::log(sum) : std::exp(row[k] - max) / sum);
    }
  }
  return out;
}

// Normalises each block of x.shape[axis:] with its own mean and biased variance (both in double).
Tensor layerNorm(const Op& op, const Tensor& x, const Tensor& scale, const Tensor& bias) {
  Tensor out(op.result()->type());
  double epsilon = op.floatAttr("epsilon");
  int64_t inner = scale.numElements();  // scale has shape x.shape[axis:]
  int64_t outer = inner == 0 ? 0 : x.numElements() / inner;
  for (int64_t o = 0; o < outer; ++o) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < inner; ++j) mean += x.getDouble(o * inner + j);
    mean /= static_cast<double>(inner);
    for (int64_t j = 0; j < inner; ++j) {
      double d = x.getDouble(o * inner + j) - mean;
      var += d * d;
    }
    var /= static_cast<double>(inner);
    double invStd = 1.0 / std::sqrt(var + epsilon);
    for (int64_t j = 0; j < inner; ++j) {
      double y = (x.getDouble(o * inner + j) - mean) * invStd;
      out.setDouble(o * inner + j, y * scale.getDouble(j) + bias.getDouble(j));
    }
  }
  return out;
}

// mean over rows i of logsumexp(logits[i]) - logits[i, labels[i]]; labels of any int dtype.
Expected<Tensor> softmaxCrossEntropy(const Op& op, const Tensor& logits, const Tensor& labels) {
  Tensor out(op.result()->type());
  int64_t rows = logits.shape()[0], classes = logits.shape()[1];
  double total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t label = labels.getInt(r);
    if (label < 0 || label >= classes)
      return Error("label " + std::to_string(label) + " at index " + std::to_string(r) + " is outside [0, " +
                   std::to_string(classes) + ")");
    double max = -INFINITY;
    for (int64_t k = 0; k < classes; ++k) max = floatMax(max, logits.getDouble(r * classes + k));
    double sum = 0;
    for (int64_t k = 0; k < classes; ++k) sum += std::exp(logits.getDouble(r * classes + k) - max);
    total += max + std::log(sum) - logits.getDouble(r * classes + label);
  }
  out.setDouble(0, total / static_cast<double>(rows));
  return out;
}

}  // namespace kiln::interp
