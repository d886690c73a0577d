// Which loop kernels read an input transposed, and their 32x32 tiles (transpose_tile.h).
#include "codegen/transpose_tile.h"

#include <algorithm>
#include <set>

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

namespace {

// The ops of `group` that the transpose's operand depends on, within the group.
std::set<const Op*> opsBefore(const KernelGroup& group, const Op& transpose) {
  std::set<const Op*> before;
  std::vector<const Value*> work{transpose.operand(0)};
  while (!work.empty()) {
    const Op* def = work.back()->definingOp();
    work.pop_back();
    if (!def || std::find(group.ops.begin(), group.ops.end(), def) == group.ops.end() || !before.insert(def).second) continue;
    for (const Value* operand : def->operands()) work.push_back(operand);
  }
  return before;
}

// The group input that elementwise ops of the operand's shape make `operand` from, each reading
// the chain through its only operand of that shape (the rest broadcast); null where there is no
// such chain.
const Value* elementwiseChainStart(const KernelGroup& group, const Value* operand) {
  const Shape& shape = operand->type().shape;
  const Value* at = operand;
  for (const Op* def = at->definingOp(); def && std::find(group.ops.begin(), group.ops.end(), def) != group.ops.end();
       def = at->definingOp()) {
    if (def->info().cls != OpClass::Elementwise || def->result()->type().shape != shape) return nullptr;
    const Value* next = nullptr;
    for (const Value* v : def->operands()) {
      if (v->type().numElements() < numElements(shape)) continue;
      if (next || v->type().shape != shape) return nullptr;
      next = v;
    }
    if (!next) return nullptr;
    at = next;
  }
  return std::find(group.inputs.begin(), group.inputs.end(), at) != group.inputs.end() ? at : nullptr;
}

}  // namespace

std::optional<TransposeTile> transposeTile(const KernelGroup& group, bool elementwiseBefore) {
  if (group.kind != KernelKind::Loop || group.segments.size() != 1) return std::nullopt;
  const Shape& shape = group.segments[0].shape;
  if (shape.size() < 2 || numElements(shape) < kMinTiledElements) return std::nullopt;
  for (const Value* out : group.outputs)
    if (out->type().shape != shape) return std::nullopt;
  TransposeTile tile;
  tile.shape = shape;
  for (const Op* op : group.ops)
    if (op->kind() == OpKind::Transpose) {
      tile.transpose = op;
      break;
    }
  if (!tile.transpose || tile.transpose->result()->type().shape != shape) return std::nullopt;
  // The innermost axis staying innermost: loads and stores agree, no tile needed.
  if (!movesInnermostAxis(*tile.transpose)) return std::nullopt;
  tile.input = tile.transpose->operand(0);
  tile.stacked = tile.input;
  const std::set<const Op*> before = opsBefore(group, *tile.transpose);
  // After the transpose (or beside it): elementwise ops on the output's shape.
  for (const Op* op : group.ops)
    if (op != tile.transpose && !before.count(op) && (op->info().cls != OpClass::Elementwise || op->result()->type().shape != shape))
      return std::nullopt;
  // Before it: reshapes from an input, each read by the next alone.
  bool reshapes = std::all_of(before.begin(), before.end(), [](const Op* op) { return op->kind() == OpKind::Reshape; });
  tile.buffer = tile.input;
  size_t left = before.size();
  for (const Op* def = tile.buffer->definingOp(); reshapes && def && def->kind() == OpKind::Reshape && left > 0;
       def = tile.buffer->definingOp()) {
    if (tile.buffer->uses().size() != 1 || !before.count(def)) return std::nullopt;
    tile.buffer = def->operand(0);
    --left;
  }
  bool fromInput = std::find(group.inputs.begin(), group.inputs.end(), tile.buffer) != group.inputs.end();
  if (!reshapes || left > 0 || !fromInput) {
    // Or elementwise ops from an input, whatever else computes what they broadcast.
    const Value* start = elementwiseBefore ? elementwiseChainStart(group, tile.input) : nullptr;
    if (!start) return std::nullopt;
    tile.buffer = tile.stacked = start;
  }
  // Output axis d reads input axis perm[d]: the input's innermost axis lands on axis a.
  std::vector<int64_t> perm = tile.transpose->intsAttr("perm");
  int last = static_cast<int>(shape.size()) - 1;
  tile.inputInnerAxis = static_cast<int>(std::find(perm.begin(), perm.end(), last) - perm.begin());
  return tile;
}

std::optional<TransposeTile> registerTransposeTile(const KernelGroup& group) {
  std::optional<TransposeTile> tile = transposeTile(group, /*elementwiseBefore=*/true);
  if (!tile || tile->shape[static_cast<size_t>(tile->inputInnerAxis)] < kRegisterBlock || tile->shape.back() < kRegisterBlock)
    return std::nullopt;
  return tile;
}

}  // namespace kiln::codegen
