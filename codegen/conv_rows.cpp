// Which kernels are a generated convolution with an elementwise epilogue, and their blocks of
// outputs (conv_rows.h).
#include "codegen/conv_rows.h"

#include <algorithm>

#include "ir/shape_rules.h"

namespace kiln::codegen {

Shape ConvRows::grid() const {
  auto ceilDiv = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  return {shape[0], ceilDiv(shape[1], rows), shape[2], ceilDiv(shape[3], columns())};
}

std::optional<ConvRows> cpuConvRows(const KernelGroup& group, int floatLanes) {
  const Op* conv = heroWithElementwiseEpilogue(group, OpKind::Conv2d, 2);
  if (!conv || isChannelsLast(*conv)) return std::nullopt;
  ConvRows layout;
  layout.conv = conv;
  layout.shape = group.segments[0].shape;
  // A block's channels share x, so they lie in one group: as many as divide the group's outputs
  // (with one group, the last block's missing channels are computed from the last one and dropped).
  const int64_t channels = layout.shape[1], groups = conv->intAttr("groups"), perGroup = channels / groups;
  layout.lanes = std::max(2, floatLanes / 2);
  layout.vectors = layout.shape[3] > layout.lanes ? 2 : 1;
  layout.rows = std::min((floatLanes >= 16 ? kCpuConvSumsWide : kCpuConvSumsNarrow) / layout.vectors, channels);
  if (groups > 1)
    while (perGroup % layout.rows != 0) --layout.rows;
  return layout;
}

}  // namespace kiln::codegen
