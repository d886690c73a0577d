// Which loop kernels read an input transposed, and their 32x32 tiles (transpose_tile.h).
#include "codegen/transpose_tile.h"

#include <algorithm>

namespace kiln::codegen {

namespace {
constexpr int64_t kMinTiledElements = 1024;
int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

int64_t TransposeTile::tiles() const {
  int64_t n = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    bool tiled = static_cast<int>(d) == inputInnerAxis || d + 1 == shape.size();
    n *= tiled ? ceilDiv(shape[d], kTile) : shape[d];
  }
  return n;
}

bool movesInnermostAxis(const Op& op) {
  if (op.kind() != OpKind::Transpose) return false;
  std::vector<int64_t> perm = op.intsAttr("perm");
  return perm.size() >= 2 && perm.back() != static_cast<int64_t>(perm.size()) - 1;
}

std::optional<TransposeTile> transposeTile(const KernelGroup& group) {
  if (group.kind != KernelKind::Loop || group.segments.size() != 1) return std::nullopt;
  const Shape& shape = group.segments[0].shape;
  if (shape.size() < 2 || numElements(shape) < kMinTiledElements) return std::nullopt;
  for (const Value* out : group.outputs)
    if (out->type().shape != shape) return std::nullopt;
  TransposeTile tile;
  tile.shape = shape;
  size_t reshapes = 0;
  for (const Op* op : group.ops) {
    if (op->kind() == OpKind::Transpose && !tile.transpose) {
      tile.transpose = op;
      continue;
    }
    if (op->kind() == OpKind::Reshape) {
      ++reshapes;  // each must be on the way from an input to the transpose (below)
      continue;
    }
    if (op->info().cls != OpClass::Elementwise || op->result()->type().shape != shape) return std::nullopt;
  }
  if (!tile.transpose || tile.transpose->result()->type().shape != shape) return std::nullopt;
  // The innermost axis staying innermost: loads and stores agree, no tile needed.
  if (!movesInnermostAxis(*tile.transpose)) return std::nullopt;
  tile.input = tile.transpose->operand(0);
  tile.buffer = tile.input;
  for (const Op* def = tile.buffer->definingOp(); def && def->kind() == OpKind::Reshape && reshapes > 0;
       def = tile.buffer->definingOp()) {
    if (tile.buffer->uses().size() != 1 || std::find(group.ops.begin(), group.ops.end(), def) == group.ops.end())
      return std::nullopt;
    tile.buffer = def->operand(0);
    --reshapes;
  }
  if (reshapes > 0 || std::find(group.inputs.begin(), group.inputs.end(), tile.buffer) == group.inputs.end())
    return std::nullopt;
  // Output axis d reads input axis perm[d]: the input's innermost axis lands on axis a.
  std::vector<int64_t> perm = tile.transpose->intsAttr("perm");
  int last = static_cast<int>(shape.size()) - 1;
  tile.inputInnerAxis = static_cast<int>(std::find(perm.begin(), perm.end(), last) - perm.begin());
  return tile;
}

std::optional<TransposeTile> registerTransposeTile(const KernelGroup& group) {
  std::optional<TransposeTile> tile = transposeTile(group);
  if (!tile || tile->shape[static_cast<size_t>(tile->inputInnerAxis)] < kRegisterBlock || tile->shape.back() < kRegisterBlock)
    return std::nullopt;
  return tile;
}

}  // namespace kiln::codegen
