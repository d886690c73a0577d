// emitKernels: one kernel per group of a plan, each the target's loop over output elements around
// the shared element emitter; collects the kernel errors the module can raise.
#include "codegen/kernel_emitter.h"

#include <algorithm>

#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include "codegen/column_reduction.h"
#include "codegen/conv_rows.h"
#include "codegen/scatter_rows.h"
#include "codegen/element_emitter.h"
#include "codegen/matmul_tile.h"
#include "codegen/streaming_stores.h"
#include "codegen/transpose_tile.h"
#include "ir/shape_rules.h"

namespace kiln::codegen {

int64_t vectorWidth(const KernelGroup& group, const TargetHooks& target) {
  size_t widest = 1;
  for (const auto* values : {&group.inputs, &group.outputs})
    for (const Value* v : *values) widest = std::max(widest, dtypeSize(v->type().dtype));
  return target.elementsPerItem(widest);
}

int64_t elementsPerItem(const KernelGroup& group, const TargetHooks& target) {
  for (const Op* op : group.ops)
    if (op->info().cls == OpClass::Reduction) return 1;
  return vectorWidth(group, target);
}

namespace {
// Whether a transpose of `group` that moves its operand's innermost axis makes values of `shape`.
bool readsTransposed(const KernelGroup& group, const Shape& shape) {
  for (const Op* op : group.ops)
    if (movesInnermostAxis(*op) && op->result()->type().shape == shape) return true;
  return false;
}

// The tile layouts of `group` where `target` tiles through shared memory.
std::optional<TransposeTile> transposeTileOf(const KernelGroup& group, const TargetHooks& target) {
  return target.sharedMemoryTiles() ? transposeTile(group) : std::nullopt;
}
// The CPU's tiles of such a kernel, blocks transposed in registers.
std::optional<TransposeTile> registerTileOf(const KernelGroup& group, const TargetHooks& target) {
  return target.transposesInRegisters() ? registerTransposeTile(group) : std::nullopt;
}
std::optional<MatmulTile> matmulTileOf(const KernelGroup& group, const TargetHooks& target) {
  return target.sharedMemoryTiles() ? matmulTile(group) : std::nullopt;
}
// The CPU's layout of a generated matmul (matmul_tile.h), where the target tiles column reductions
// (the same loop order: accumulators for a row's neighbouring outputs, the sum's axis outside).
std::optional<MatmulTile> cpuMatmulRowsOf(const KernelGroup& group, const TargetHooks& target) {
  return target.tilesColumnReductions() ? cpuMatmulRows(group) : std::nullopt;
}
// The CPU's layout of a generated convolution (conv_rows.h).
std::optional<ConvRows> cpuConvRowsOf(const KernelGroup& group, const TargetHooks& target) {
  return target.tilesColumnReductions() ? cpuConvRows(group, target.floatSumLanes()) : std::nullopt;
}
// The layout of a generated gather_backward (scatter_rows.h): the CPU's blocks, or the GPU's rows.
std::optional<ScatterRows> scatterRowsOf(const KernelGroup& group, const TargetHooks& target) {
  if (target.tilesColumnReductions()) return cpuScatterRows(group);
  return target.sharedMemoryTiles() ? gpuScatterRows(group) : std::nullopt;
}
}  // namespace

int lanesPerItem(const KernelGroup& group, const TargetHooks& target) {
  if (group.kind == KernelKind::Row) return target.rowLanes(group);
  bool tiled = transposeTileOf(group, target) || matmulTileOf(group, target);
  return tiled ? static_cast<int>(kTile * kTileRows) : 1;
}

namespace {
// Whether `target` loops `group` segment by segment (ItemPart), one element or one column tile
// per item.
bool loopsByPart(const KernelGroup& group, const TargetHooks& target) {
  return group.kind == KernelKind::Loop && !transposeTileOf(group, target) && !registerTileOf(group, target) &&
         !matmulTileOf(group, target) && !cpuMatmulRowsOf(group, target) && !cpuConvRowsOf(group, target) &&
         !scatterRowsOf(group, target) && elementsPerItem(group, target) == 1;
}
std::optional<ColumnTiles> columnTilesOf(const KernelGroup& group, const Segment& segment, const TargetHooks& target) {
  return target.tilesColumnReductions() ? columnTiles(group, segment) : std::nullopt;
}
}  // namespace

int64_t poolWindowColumns(const KernelGroup& group, const Segment& segment) {
  if (group.kind != KernelKind::Loop || segment.shape.empty() || readsTransposed(group, segment.shape)) return 1;
  for (const Op* op : group.ops) {
    // (Channels-last rows are channels: they vectorise as they are.)
    if (!isDisjointMaxPoolBackward(*op) || isChannelsLast(*op) || op->result()->type().shape != segment.shape) continue;
    int64_t stride = poolWindow(*op).strides[1];
    if (stride > 1 && segment.shape.back() % stride == 0) return stride;
  }
  return 1;
}

std::vector<int64_t> columnBreaksOf(const KernelGroup& group, const Segment& segment) {
  if (group.kind != KernelKind::Loop || segment.shape.empty()) return {};
  const int64_t row = segment.shape.back();
  const auto last = static_cast<int>(segment.shape.size()) - 1;
  std::vector<int64_t> breaks;
  for (const Op* op : group.ops) {
    if (op->result()->type().shape != segment.shape) continue;
    if (op->kind() == OpKind::Pad) {
      int64_t begin = op->intsAttr("pads")[static_cast<size_t>(last)], inner = op->operand(0)->type().shape.back();
      breaks.push_back(begin);          // before: the fill
      breaks.push_back(begin + inner);  // after: the fill again
    } else if (op->kind() == OpKind::Concat && normalizeAxis(op->intAttr("axis"), last + 1) == last) {
      int64_t offset = 0;
      for (const Value* operand : op->operands()) breaks.push_back(offset += operand->type().shape.back());
    }
  }
  std::sort(breaks.begin(), breaks.end());
  breaks.erase(std::unique(breaks.begin(), breaks.end()), breaks.end());
  std::erase_if(breaks, [row](int64_t b) { return b <= 0 || b >= row; });
  if (breaks.size() > kMaxColumnBreaks) breaks.clear();
  return breaks;
}

int64_t loopRowLength(const KernelGroup& group, const Segment& segment) {
  const Shape& shape = segment.shape;
  if (shape.empty()) return 0;
  const auto rank = static_cast<int>(shape.size());
  // Whether dims [first, rank) of `value`'s shape (aligned to the segment's from the right, as
  // broadcasting aligns them) are all the segment's or all broadcast.
  auto uniform = [&](const Shape& value, int first) {
    const int offset = rank - static_cast<int>(value.size());
    bool spans = false, broadcast = false;
    for (int d = std::max(first, 0); d < rank; ++d) {
      if (shape[d] == 1) continue;
      bool one = d < offset || value[d - offset] == 1;
      (one ? broadcast : spans) = true;
    }
    return !(spans && broadcast) && offset >= 0;
  };
  std::vector<const Shape*> shapes;
  for (const Op* op : group.ops) {
    bool pointwise = (op->info().cls == OpClass::Elementwise && op->kind() != OpKind::Iota) ||
                     op->kind() == OpKind::BroadcastTo;
    if (!pointwise || group.segments.size() != 1) return shape.back();
    shapes.push_back(&op->result()->type().shape);
    for (const Value* operand : op->operands()) shapes.push_back(&operand->type().shape);
  }
  int first = rank - 1;
  while (first > 0 && std::all_of(shapes.begin(), shapes.end(), [&](const Shape* v) { return uniform(*v, first - 1); }))
    --first;
  return numElements(Shape(shape.begin() + first, shape.end()));
}

std::optional<MovedAxis> movedShortAxisOf(const KernelGroup& group, const Segment& segment) {
  const Shape& shape = segment.shape;
  const auto rank = static_cast<int64_t>(shape.size());
  if (group.kind != KernelKind::Loop || rank < 2 || !readsTransposed(group, shape)) return std::nullopt;
  std::optional<int64_t> to;  // the output dim the input's innermost axis lands on
  for (const Op* op : group.ops) {
    if (!movesInnermostAxis(*op) || op->result()->type().shape != shape) continue;
    std::vector<int64_t> perm = op->intsAttr("perm");
    auto lands = std::find(perm.begin(), perm.end(), rank - 1) - perm.begin();
    if (perm.back() != rank - 2 || (to && *to != lands)) return std::nullopt;
    to = lands;
  }
  int64_t extent = shape[static_cast<size_t>(*to)];
  if (extent < 2 || extent > kMaxMovedExtent) return std::nullopt;
  return MovedAxis{extent, numElements(Shape(shape.begin() + *to + 1, shape.end()))};
}

int64_t windowColumnsOf(const KernelGroup& group, const Segment& segment, const TargetHooks& target) {
  return target.loopsPoolWindows() && loopsByPart(group, target) ? poolWindowColumns(group, segment) : 1;
}

int64_t numWorkItems(const KernelGroup& group, const TargetHooks& target) {
  if (group.kind == KernelKind::Row) return (group.numRows() + target.rowsPerItem(group) - 1) / target.rowsPerItem(group);
  if (auto tile = transposeTileOf(group, target)) return tile->tiles();
  if (auto tile = registerTileOf(group, target)) return tile->tiles();
  if (auto tile = matmulTileOf(group, target)) return tile->tiles();
  if (auto rows = cpuMatmulRowsOf(group, target)) return cpuMatmulItems(*rows);
  if (auto conv = cpuConvRowsOf(group, target)) return conv->items();
  if (auto scatter = scatterRowsOf(group, target)) return scatter->items();
  int64_t width = elementsPerItem(group, target), items = 0;
  for (const Segment& s : group.segments) {
    auto columns = loopsByPart(group, target) ? columnTilesOf(group, s, target) : std::nullopt;
    items += columns ? columns->items() : (numElements(s.shape) + width - 1) / width / windowColumnsOf(group, s, target);
  }
  return items;
}

int64_t outputsPerWorkItem(const KernelGroup& group, const TargetHooks& target) {
  if (group.kind == KernelKind::Row) return target.rowsPerItem(group);
  if (transposeTileOf(group, target) || matmulTileOf(group, target)) return 1;
  if (auto rows = cpuMatmulRowsOf(group, target)) return cpuMatmulItemRows(*rows) * kCpuMatmulColumns;
  if (auto conv = cpuConvRowsOf(group, target)) return conv->rows * conv->columns();
  if (auto scatter = scatterRowsOf(group, target)) return scatter->rows * scatter->columns;
  if (registerTileOf(group, target)) return kTile * kTile;
  int64_t most = elementsPerItem(group, target);
  if (loopsByPart(group, target))
    for (const Segment& s : group.segments) {
      if (auto columns = columnTilesOf(group, s, target)) most = std::max(most, columns->tile);
      else most = std::max(most, windowColumnsOf(group, s, target));
    }
  return most;
}

namespace {
// Whether the rows in which a loop kernel stores output `k` are whole cache lines, or there is
// only one. The vectoriser leaves each row's last few elements to scalar stores; in rows that end
// mid-line those share lines with the next row's streaming stores, and a line written both ways
// leaves the core as pieces: x + y[56] over f32[32,64,56,56] took 10.9 ms streaming, 1.2 ms at
// the rate of the same kernel on an eighth of it (which does not stream); x + y[W] over 24 MiB,
// streaming against plain (2-core Zen 3): W = 120 5.7 against 1.3 ms, 500 2.2 against 1.4, 1000
// 1.6 against 1.1. A row kernel's rows are not the question (softmax over rows of 1000 f32:
// 2.08 ms streaming against 2.20), nor are tiles.
bool storesWholeLines(const KernelGroup& group, const std::vector<ItemPart>& parts, size_t k) {
  auto bytes = static_cast<int64_t>(dtypeSize(group.outputs[k]->type().dtype));
  for (size_t s = 0; s < parts.size(); ++s) {
    const std::vector<size_t>& outputs = group.segments[s].outputs;
    if (std::find(outputs.begin(), outputs.end(), k) != outputs.end())
      return parts[s].rowLength == parts[s].items || parts[s].rowLength * parts[s].columnsPerItem * bytes % kCpuCacheLineBytes == 0;
  }
  return true;  // tiles and items of whole vectors
}
}  // namespace

std::vector<KernelError> emitKernels(llvm::Module& module, TargetHooks& target, const BlockPlan& plan) {
  ErrorTable errors;
  for (const KernelGroup* group : plan.allGroups()) {
    std::vector<uint64_t> alignments;
    for (const auto* values : {&group->inputs, &group->outputs})
      for (const Value* v : *values) alignments.push_back(bufferAlignment(v));
    bool row = group->kind == KernelKind::Row;
    std::optional<TransposeTile> transposed = transposeTileOf(*group, target);
    std::optional<TransposeTile> registerTile = registerTileOf(*group, target);
    std::optional<MatmulTile> tiledMatmul = matmulTileOf(*group, target);
    std::optional<MatmulTile> cpuMatmul = cpuMatmulRowsOf(*group, target);
    std::optional<ConvRows> cpuConv = cpuConvRowsOf(*group, target);
    std::optional<ScatterRows> scatter = scatterRowsOf(*group, target);
    // A loop kernel of one element per item may be looped shape by shape (segment by segment)
    // and row by row; a segment of column reductions, one tile of columns per item.
    std::vector<ItemPart> parts;
    std::vector<std::optional<ColumnTiles>> columns;
    if (loopsByPart(*group, target))
      for (const Segment& s : group->segments) {
        columns.push_back(columnTilesOf(*group, s, target));
        int64_t k = windowColumnsOf(*group, s, target);
        if (columns.back()) parts.push_back({columns.back()->items(), 0, false, 1, 0, 0, {}});
        else if (k > 1) parts.push_back({numElements(s.shape) / k, s.shape.back() / k, false, k, 0, 0, {}});
        else {
          std::optional<MovedAxis> moved = movedShortAxisOf(*group, s);
          parts.push_back({numElements(s.shape), loopRowLength(*group, s), readsTransposed(*group, s.shape), 1,
                           moved ? moved->extent : 0, moved ? moved->stride : 0, columnBreaksOf(*group, s)});
        }
      }
    llvm::Function* kernel = target.emitKernel(
        module, group->name, alignments, numWorkItems(*group, target), lanesPerItem(*group, target), parts,
        [&](llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& buffers, llvm::Value* status, llvm::Value* item,
            llvm::Value* lane, llvm::Value* column, int part) {
          ElementEmitter emitter(b, target, *group, buffers, status, errors);
          if (part >= 0) emitter.setItemPart(parts[static_cast<size_t>(part)], item, column);
          if (part >= 0 && columns[static_cast<size_t>(part)])
            emitter.emitColumnTileItem(static_cast<size_t>(part), *columns[static_cast<size_t>(part)], item);
          else if (part >= 0) emitter.emitSegmentItem(static_cast<size_t>(part), item);
          else if (row && target.rowsPerItem(*group) > 1) emitter.emitRowBlock(item, target.rowsPerItem(*group));
          else if (row) emitter.emitRow(item, lane);
          else if (transposed) emitter.emitTileItem(*transposed, item, lane);
          else if (registerTile) emitter.emitRegisterTileItem(*registerTile, item);
          else if (tiledMatmul) emitter.emitMatmulTileItem(*tiledMatmul, item, lane);
          else if (cpuMatmul) emitter.emitCpuMatmulItem(*cpuMatmul, item);
          else if (cpuConv) emitter.emitCpuConvItem(*cpuConv, item);
          else if (scatter) emitter.emitScatterItem(*scatter, item);
          else emitter.emitLoopItem(item);
        });
    // Outputs too big for the caches stream past them (streaming_stores.h). The generated matmuls
    // and convolutions (what oneDNN does not take: f16, f64, integers) and the scatter blocks,
    // whose stores are short rows of a block, are left as they were.
    if (!tiledMatmul && !cpuMatmul && !cpuConv && !scatter) {
      auto read = static_cast<int64_t>(group->bytesRead()), written = static_cast<int64_t>(group->bytesWritten());
      std::vector<int> streaming;
      for (size_t k = 0; k < group->outputs.size(); ++k)
        if (target.streamsOutput(static_cast<int64_t>(group->outputs[k]->type().byteSize()), read, written) &&
            storesWholeLines(*group, parts, k))
          streaming.push_back(static_cast<int>(group->inputs.size() + k));
      markStreamingOutputs(*kernel, streaming);
    }
    // A kernel that does not verify is a bug in kiln: stop here, naming the kernel and the problem.
    std::string problems;
    llvm::raw_string_ostream os(problems);
    if (llvm::verifyFunction(*kernel, &os)) internalError(__FILE__, __LINE__, "kernel " + group->name + " is invalid: " + problems);
  }
  return errors.take();
}

}  // namespace kiln::codegen
