// Shape arithmetic shared by type inference and the interpreter, so both agree by construction.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/status.h"
#include "ir/types.h"

namespace kiln {

// NumPy broadcasting of two shapes; nullopt if they do not broadcast.
std::optional<Shape> broadcastShapes(const Shape& a, const Shape& b);
// True if `from` broadcasts to exactly `to` (NumPy's broadcast_to rule).
bool broadcastsTo(const Shape& from, const Shape& to);
// Resolves a possibly negative axis against `rank`; nullopt when out of range.
std::optional<int> normalizeAxis(int64_t axis, int rank);
// Sorted, deduplicated axes for a reduction; all axes when `axes` is absent.
Expected<std::vector<int>> reductionAxes(const std::optional<std::vector<int64_t>>& axes, int rank);
// Shape after reducing `axes`, keeping them as size-1 dims or dropping them.
Shape reducedShape(const Shape& in, const std::vector<int>& axes, bool keepdims);

// One axis of an ONNX Slice after clamping: element k of the output reads start + k*step.
struct SliceAxis {
  int64_t start;
  int64_t step;
  int64_t count;
};
// Resolves slice attributes against `shape`; axes not named are taken whole.
Expected<std::vector<SliceAxis>> resolveSlice(const Shape& shape, const std::vector<int64_t>& starts,
                                              const std::vector<int64_t>& ends,
                                              const std::optional<std::vector<int64_t>>& axes,
                                              const std::optional<std::vector<int64_t>>& steps);

// Whether `op` is a transpose that swaps the last two axes and keeps every other one (a batch of
// matrices transposed): what a matmul library takes as a transposed operand instead of a copy.
class Op;
bool isMatrixTranspose(const Op& op);

// conv2d's `layout`: "nhwc" holds x and y channels-last ([N,H,W,C] and [N,OH,OW,O]), the weights
// staying [O,C/groups,kh,kw]; "nchw" (the default) is ONNX's.
bool isChannelsLast(const Op& conv);
// The permutations between the two layouts: kChannelsLast takes [N,C,H,W] to [N,H,W,C]
// (transpose's perm: result axis i is operand axis perm[i]), kChannelsFirst takes it back.
inline const std::vector<int64_t> kChannelsLast{0, 2, 3, 1};
inline const std::vector<int64_t> kChannelsFirst{0, 3, 1, 2};
// `shape` permuted by `perm` as transpose permutes it.
Shape permuteShape(const Shape& shape, const std::vector<int64_t>& perm);

// NumPy matmul shapes: 1-D promotion and broadcast batch dims. Returns the result shape.
Expected<Shape> matmulShape(const Shape& a, const Shape& b);

// A pool's (or its gradient's) windows, its attributes with their defaults: strides default to
// the kernel (pads and dilations carry theirs in the op table).
struct PoolWindow {
  std::vector<int64_t> kernel, strides, pads, dilations;
};
PoolWindow poolWindow(const Op& pool);

// Output size of a sliding window (convolution or pooling) along one spatial axis.
int64_t windowOutputSize(int64_t in, int64_t kernel, int64_t stride, int64_t padBegin, int64_t padEnd,
                         int64_t dilation = 1);

}  // namespace kiln
