// Internal to the reference interpreter: the kernels interpreter.cpp dispatches to, by op family,
// and the indexing helpers they share.
//
// Conventions for every kernel:
//  - It gets verified operands and allocates its result with the op's result type.
//  - Run-time errors are returned without the op name or location; the dispatcher adds both.
//  - Floats: elementwise ops compute in float (f16, bf16, f32) or double (f64) and round once when
//    storing (Tensor::setDouble). Reductions, softmax, norms, matmul, conv and pooling accumulate
//    in double for every float dtype and round once at the end, so the oracle is at least as
//    accurate as any backend.
//  - Integers compute modulo 2^64 (in uint64) and wrap to their width on store (Tensor::setInt):
//    two's-complement wraparound, never undefined behaviour.
#pragma once

#include <cstdint>
#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include "ir/ir.h"
#include "ir/tensor.h"

namespace kiln::interp {

// ---- elementwise.cpp ----
Tensor unary(const Op& op, const Tensor& x);                               // neg .. gelu, not
Expected<Tensor> binary(const Op& op, const Tensor& a, const Tensor& b);   // arithmetic, compare, logic
Tensor select(const Op& op, const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor cast(const Op& op, const Tensor& x);
Expected<Tensor> checkRange(const Op& op, const Tensor& x);  // x, or an error naming the first bad element
Tensor iota(const Op& op);

// ---- reductions.cpp ----
Expected<Tensor> reduce(const Op& op, const Tensor& x);  // reduce_sum/mean/max/min/prod
Tensor argReduce(const Op& op, const Tensor& x);         // argmax, argmin
Tensor softmax(const Op& op, const Tensor& x);           // softmax, log_softmax
Tensor layerNorm(const Op& op, const Tensor& x, const Tensor& scale, const Tensor& bias);
Expected<Tensor> softmaxCrossEntropy(const Op& op, const Tensor& logits, const Tensor& labels);

// ---- layout.cpp ----
Tensor reshape(const Op& op, const Tensor& x);
Tensor transpose(const Op& op, const Tensor& x);
Tensor broadcastTo(const Op& op, const Tensor& x);
Tensor concat(const Op& op, const std::vector<const Tensor*>& xs);
Tensor slice(const Op& op, const Tensor& x);
Expected<Tensor> gather(const Op& op, const Tensor& x, const Tensor& indices);
Tensor pad(const Op& op, const Tensor& x);

// ---- nn.cpp ----
// A conv2d's or pool's (or their backward ops') operand or result seen channels-first: its
// [N,C,H,W] shape, and where each element of that view (in row-major order) is stored: at itself,
// or for a channels-last layout at its [n,h,w,c] position. Channels-last ops compute the
// channels-first op over these views.
struct ChannelsFirstView {
  Shape shape;
  std::vector<int64_t> positions;  // empty: channels-first, each element where it is
  int64_t operator()(int64_t i) const { return positions.empty() ? i : positions[static_cast<size_t>(i)]; }
};
ChannelsFirstView channelsFirstView(const Op& op, const Shape& stored);
Tensor matmul(const Op& op, const Tensor& a, const Tensor& b);
Tensor conv2d(const Op& op, const Tensor& x, const Tensor& w);
// Every product of conv2d's sums, in order: term(y, x, w) for output element y, input element x
// and weight element w (row-major indices), padding skipped.
void forEachConvTerm(const Op& op, const Shape& xs, const Shape& ws, const Shape& ys,
                     const std::function<void(int64_t y, int64_t x, int64_t w)>& term);
// Every window of a pool over channels-first `xs` giving `ys`: its index in ys (row-major) and
// its real elements' indices in xs, row-major in the window; padding never takes part. Drives
// pool2d and the pools' gradients (backward.cpp).
void forEachPoolWindow(const Op& op, const Shape& xs, const Shape& ys,
                       const std::function<void(int64_t window, const std::vector<int64_t>& members)>& visit);
Tensor pool2d(const Op& op, const Tensor& x);  // max_pool2d, avg_pool2d
Tensor batchNorm(const Op& op, const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& mean,
                 const Tensor& var);

// ---- backward.cpp (the backward ops) ----
Expected<Tensor> gatherBackward(const Op& op, const Tensor& dy, const Tensor& indices);
Tensor conv2dBackward(const Op& op, const Tensor& a, const Tensor& b);  // _data(dy, w), _filter(x, dy)
Tensor pool2dBackward(const Op& op, const std::vector<const Tensor*>& in);  // max(x, dy), avg(dy)

// ---- indexing.cpp: shared helpers ----

// For each element of `shape` in row-major order: base + sum_d index[d] * strides[d]. With the
// source's strides permuted, zeroed or scaled this maps an output element to its source element
// for transpose, broadcasting, slicing and reductions alike.
std::vector<int64_t> stridedIndices(const Shape& shape, const std::vector<int64_t>& strides, int64_t base = 0);
// Source index of every element of `to` when `from` is broadcast to it (NumPy rules).
std::vector<int64_t> broadcastIndices(const Shape& from, const Shape& to);
// A tensor of `type` whose element i is src's element indices[i] (bytes copied, any dtype).
Tensor gatherElements(const TensorType& type, const Tensor& src, const std::vector<int64_t>& indices);

// The shape split around `axis`: `outer` blocks of `n` rows of `inner` contiguous elements.
struct AxisSplit {
  int64_t outer;
  int64_t n;
  int64_t inner;
};
AxisSplit splitAt(const Shape& shape, int axis);

// Every element widened to double (floats exactly; i64 beyond 2^53 rounds) or read as int64.
std::vector<double> toDoubles(const Tensor& t);
std::vector<int64_t> toInts(const Tensor& t);

// A contraction's product (matmul, conv2d and its gradients) added to its running sum. f64
// products add in one rounding, fma, as BLAS and XLA compute them and as kiln's kernels emit them
// (ElementEmitter::multiplyAdd); the product of two widened f32, f16 or bf16 values is exact in
// double, so for those the plain sum is the same and spares a call to fma.
template <bool Fused>
inline double multiplyAdd(double a, double b, double sum) {
  if constexpr (Fused) return std::fma(a, b, sum);
  else return sum + a * b;
}
inline double multiplyAdd(double a, double b, double sum, bool fused) {
  return fused ? multiplyAdd<true>(a, b, sum) : multiplyAdd<false>(a, b, sum);
}

// Slice i along axis 0 (a tensor of `rowType`), and its inverse: store `row` as slice i of `dst`.
Tensor takeRow(const Tensor& x, int64_t i, const TensorType& rowType);
void putRow(Tensor& dst, int64_t i, const Tensor& row);

inline void copyElement(Tensor& dst, int64_t di, const Tensor& src, int64_t si) {
  size_t size = dtypeSize(src.dtype());
  std::memcpy(static_cast<uint8_t*>(dst.data()) + static_cast<size_t>(di) * size,
              static_cast<const uint8_t*>(src.data()) + static_cast<size_t>(si) * size, size);
}

// A signed int whose order is the int element's order: the element for signed dtypes; for
// unsigned ones (read zero-extended, u64 as its bits) the bits with the top bit flipped. Its
// own inverse.
inline int64_t orderKey(int64_t v, bool isUnsigned) {
  return isUnsigned ? static_cast<int64_t>(static_cast<uint64_t>(v) ^ (uint64_t{1} << 63)) : v;
}

// Two's-complement arithmetic without undefined behaviour (C++20 defines the uint64 -> int64 wrap).
inline int64_t wrappingAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t wrappingSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
inline int64_t wrappingMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

}  // namespace kiln::interp
