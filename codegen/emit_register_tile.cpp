// ElementEmitter::emitRegisterTileItem: the CPU's transposing loop kernels, a tile at a time, the
// input moved through blocks transposed in vector registers (transpose_tile.h).
#include <array>

#include "codegen/element_emitter.h"
#include "codegen/transpose_tile.h"

namespace kiln::codegen {

namespace {

constexpr int64_t kBlock = kRegisterBlock;
using Block = std::array<llvm::Value*, kBlock>;

// The transpose of a block held as kBlock vectors of kBlock elements (row r: rows[r]): its
// columns as vectors. Transposing swaps each bit of the row index with the same bit of the
// column index; one stage per bit, the stages in any order: for the bit of value `half`, rows i
// and i + half (i without that bit) trade the halves of their elements that differ in it, two
// shuffles of two vectors each. LLVM lowers the 24 shuffles of an 8x8 block of f32 to AVX's
// lane permutes, unpacks and shuffles.
Block transposeBlock(llvm::IRBuilder<>& b, Block rows) {
  for (int64_t half = kBlock / 2; half >= 1; half /= 2) {
    std::array<int, kBlock> low{}, high{};  // masks into the two rows' 2 * kBlock elements
    for (int64_t c = 0; c < kBlock; ++c) {
      bool upper = (c & half) != 0;
      low[static_cast<size_t>(c)] = static_cast<int>(upper ? kBlock + c - half : c);
      high[static_cast<size_t>(c)] = static_cast<int>(upper ? kBlock + c : c + half);
    }
    Block next{};
    for (int64_t i = 0; i < kBlock; ++i) {
      if (i & half) continue;
      auto top = static_cast<size_t>(i), bottom = static_cast<size_t>(i + half);
      next[top] = b.CreateShuffleVector(rows[top], rows[bottom], low);
      next[bottom] = b.CreateShuffleVector(rows[top], rows[bottom], high);
    }
    rows = next;
  }
  return rows;
}

}  // namespace

void ElementEmitter::emitRegisterTileItem(const TransposeTile& tile, llvm::Value* item) {
  const Shape& shape = tile.shape;
  const auto a = static_cast<size_t>(tile.inputInnerAxis), last = shape.size() - 1;
  const Index origin = tileOrigin(tile, item);
  auto outputIndex = [&](llvm::Value* k, llvm::Value* l) {
    Index o = origin;
    o[a] = b.CreateAdd(origin[a], k);
    o[last] = b.CreateAdd(origin[last], l);
    return o;
  };
  // The tile's extent along a and along the last axis: kTile, less at the tensor's far edges.
  auto extent = [&](size_t axis) { return atMost(b.CreateSub(i64(shape[axis]), origin[axis]), kTile); };
  llvm::Value* countA = extent(a);
  llvm::Value* countLast = extent(last);
  DType t = tile.stacked->type().dtype;
  llvm::Type* storage = storageType(t);
  const uint64_t elementBytes = storage->getPrimitiveSizeInBits() / 8;
  llvm::Value* input = buffers_[static_cast<size_t>(inputIndex_.at(tile.buffer))];
  const Shape& inputShape = tile.input->type().shape;
  auto inputAt = [&](llvm::Value* k, llvm::Value* l) {
    return b.CreateInBoundsGEP(storage, input, linearize(transposeSource(tile, outputIndex(k, l)), inputShape));
  };
  // stack[k][l]: the input element at output (origin + k along a, origin + l along the last axis),
  // in the kernel's entry block (a fixed stack slot).
  llvm::Value* stack = stackArray(storage, kTile * kTile, "transpose.tile");
  auto stackAt = [&](llvm::Value* k, llvm::Value* l) {
    return b.CreateInBoundsGEP(storage, stack, b.CreateAdd(b.CreateMul(k, i64(kTile)), l));
  };
  // Into the stack tile, block by block: a whole block as kBlock vector loads along a (the input's
  // innermost axis), transposed, and kBlock vector stores along the last axis; a block the
  // tensor's edge cuts, element by element.
  auto* vector = llvm::FixedVectorType::get(storage, static_cast<unsigned>(kBlock));
  const llvm::Align align(elementBytes);
  // The blocks of a run along the last axis (kBlock rows of the input) one after another, so that
  // each input cache line is used whole before the next run's lines evict it (rows a power of two
  // bytes apart share a cache set).
  loopNest({kTile / kBlock, kTile / kBlock}, {}, [&](const Index& blocks, const Values&) {
    llvm::Value* l0 = b.CreateMul(blocks[0], i64(kBlock));
    llvm::Value* k0 = b.CreateMul(blocks[1], i64(kBlock));
    llvm::Value* kEnd = b.CreateAdd(k0, i64(kBlock));
    llvm::Value* lEnd = b.CreateAdd(l0, i64(kBlock));
    llvm::Value* whole = b.CreateAnd(b.CreateICmpSLE(kEnd, countA), b.CreateICmpSLE(lEnd, countLast));
    ifThen(whole, [&] {
      Block rows{};
      for (int64_t r = 0; r < kBlock; ++r)
        rows[static_cast<size_t>(r)] = b.CreateAlignedLoad(vector, inputAt(k0, b.CreateAdd(l0, i64(r))), align);
      Block columns = transposeBlock(b, rows);
      for (int64_t c = 0; c < kBlock; ++c) b.CreateAlignedStore(columns[static_cast<size_t>(c)], stackAt(b.CreateAdd(k0, i64(c)), l0), align);
      return Values{};
    }, {});
    llvm::Value* cut = b.CreateAnd(b.CreateNot(whole), b.CreateAnd(b.CreateICmpSLT(k0, countA), b.CreateICmpSLT(l0, countLast)));
    ifThen(cut, [&] {
      loop(b.CreateSub(atMost(kEnd, countA), k0), {}, [&](llvm::Value* dk, const Values&) {
        llvm::Value* k = b.CreateAdd(k0, dk);
        loop(b.CreateSub(atMost(lEnd, countLast), l0), {}, [&](llvm::Value* dl, const Values&) {
          llvm::Value* l = b.CreateAdd(l0, dl);
          b.CreateStore(b.CreateLoad(storage, inputAt(k, l)), stackAt(k, l));
          return Values{};
        });
        return Values{};
      });
      return Values{};
    }, {});
    return Values{};
  });
  // The outputs, a row along the output's innermost axis at a time, the transposed input read
  // from the stack tile: contiguous loads and stores, widened by the vectoriser.
  loop(countA, {}, [&](llvm::Value* k, const Values&) {
    loop(countLast, {}, [&](llvm::Value* l, const Values&) {
      Index index = outputIndex(k, l);
      preloaded_.push_back({{tile.stacked, transposeSource(tile, index)}, fromStorage(b.CreateLoad(storage, stackAt(k, l)), t)});
      storeTileElement(index, shape);
      return Values{};
    });
    return Values{};
  });
}

}  // namespace kiln::codegen
