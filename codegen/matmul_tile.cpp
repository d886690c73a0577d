// Which kernels are a matmul with an elementwise epilogue, and their 32x32 output tiles (matmul_tile.h).
#include "codegen/matmul_tile.h"

#include <algorithm>

#include "codegen/host_threads.h"
#include "ir/shape_rules.h"

namespace kiln::codegen {

int64_t MatmulTile::tiles() const {
  int64_t n = 1;
  for (size_t d = 0; d + 2 < shape.size(); ++d) n *= shape[d];
  auto ceilDiv = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  return n * ceilDiv(shape[shape.size() - 2], kTile) * ceilDiv(shape.back(), kTile);
}

namespace {

// A matmul with an elementwise epilogue whose output is at least minRows x minColumns.
std::optional<MatmulTile> matmulLayout(const KernelGroup& group, int64_t minRows, int64_t minColumns) {
  if (group.kind != KernelKind::Loop || group.segments.size() != 1) return std::nullopt;
  MatmulTile tile;
  tile.shape = group.segments[0].shape;
  if (tile.shape.size() < 2 || tile.shape.back() < minColumns || tile.shape[tile.shape.size() - 2] < minRows)
    return std::nullopt;
  for (const Value* out : group.outputs)
    if (out->type().shape != tile.shape) return std::nullopt;
  auto isInput = [&](const Value* v) { return std::find(group.inputs.begin(), group.inputs.end(), v) != group.inputs.end(); };
  // A transpose of an input's last two axes, read in place as a transposed operand.
  auto transposedInput = [&](const Op* op) {
    return isMatrixTranspose(*op) && isInput(op->operand(0));
  };
  for (const Op* op : group.ops) {
    if (op->kind() == OpKind::Matmul && !tile.matmul) {
      tile.matmul = op;
      continue;
    }
    if (transposedInput(op)) continue;  // checked below to be a matmul operand
    if (op->info().cls != OpClass::Elementwise || op->result()->type().shape != tile.shape) return std::nullopt;
  }
  if (!tile.matmul || tile.matmul->result()->type().shape != tile.shape) return std::nullopt;
  for (const Op* op : group.ops)
    if (op != tile.matmul && transposedInput(op) && op->result() != tile.matmul->operand(0) &&
        op->result() != tile.matmul->operand(1))
      return std::nullopt;
  for (size_t i = 0; i < 2; ++i) {
    const Value* operand = tile.matmul->operand(i);
    if (operand->type().rank() < 2) return std::nullopt;
    const Op* producer = operand->definingOp();
    bool inGroup = producer && std::find(group.ops.begin(), group.ops.end(), producer) != group.ops.end();
    if (inGroup && transposedInput(producer)) {
      tile.stored[i] = producer->operand(0);
      tile.transposed[i] = true;
    } else if (isInput(operand)) {
      tile.stored[i] = operand;
    } else {
      return std::nullopt;
    }
  }
  tile.k = tile.matmul->operand(0)->type().shape.back();
  return tile;
}

}  // namespace

std::optional<MatmulTile> matmulTile(const KernelGroup& group) { return matmulLayout(group, kTile, kTile); }

std::optional<MatmulTile> cpuMatmulRows(const KernelGroup& group) { return matmulLayout(group, 1, 8); }

namespace {

int64_t cpuMatmulItemsOf(const MatmulTile& tile, int64_t rows) {
  int64_t batches = 1;
  for (size_t d = 0; d + 2 < tile.shape.size(); ++d) batches *= tile.shape[d];
  auto ceilDiv = [](int64_t x, int64_t y) { return (x + y - 1) / y; };
  return batches * ceilDiv(tile.shape[tile.shape.size() - 2], rows) * ceilDiv(tile.shape.back(), kCpuMatmulColumns);
}

}  // namespace

int64_t cpuMatmulItemRows(const MatmulTile& tile) {
  int64_t rows = kCpuMatmulRows;
  while (rows > kCpuMatmulMicroRows && cpuMatmulItemsOf(tile, rows) < kCpuMatmulItemsPerThread * hostThreads()) rows /= 2;
  return rows;
}

int64_t cpuMatmulItems(const MatmulTile& tile) { return cpuMatmulItemsOf(tile, cpuMatmulItemRows(tile)); }

}  // namespace kiln::codegen
