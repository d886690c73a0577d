// Which kernels are a matmul with an elementwise epilogue, and their 32x32 output tiles (matmul_tile.h).
#include "codegen/matmul_tile.h"

#include <algorithm>

namespace kiln::codegen {

int64_t MatmulTile::tiles() const {
  int64_t n = 1;
  for (size_t d = 0; d + 2 < shape.size(); ++d) n *= shape[d];
  auto ceilDiv = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  return n * ceilDiv(shape[shape.size() - 2], kTile) * ceilDiv(shape.back(), kTile);
}

std::optional<MatmulTile> matmulTile(const KernelGroup& group) {
  if (group.kind != KernelKind::Loop || group.segments.size() != 1) return std::nullopt;
  MatmulTile tile;
  tile.shape = group.segments[0].shape;
  if (tile.shape.size() < 2 || tile.shape.back() < kTile || tile.shape[tile.shape.size() - 2] < kTile)
    return std::nullopt;
  for (const Value* out : group.outputs)
    if (out->type().shape != tile.shape) return std::nullopt;
  for (const Op* op : group.ops) {
    if (op->kind() == OpKind::Matmul && !tile.matmul) {
      tile.matmul = op;
      continue;
    }
    if (op->info().cls != OpClass::Elementwise || op->result()->type().shape != tile.shape) return std::nullopt;
  }
  if (!tile.matmul || tile.matmul->result()->type().shape != tile.shape) return std::nullopt;
  for (const Value* operand : tile.matmul->operands()) {
    if (operand->type().rank() < 2) return std::nullopt;
    if (std::find(group.inputs.begin(), group.inputs.end(), operand) == group.inputs.end()) return std::nullopt;
  }
  tile.k = tile.matmul->operand(0)->type().shape.back();
  return tile;
}

}  // namespace kiln::codegen
