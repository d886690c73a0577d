// ElementEmitter::emitScatterItem: generated gather_backward, a block of output rows
// at a time (scatter_rows.h).
#include "codegen/element_emitter.h"
#include "codegen/scatter_rows.h"

namespace kiln::codegen {

void ElementEmitter::emitScatterItem(const ScatterRows& tile, llvm::Value* item) {
  const Op& op = *tile.op;
  const Value* dy = op.operand(0);
  const Value* indices = op.operand(1);
  const Shape& shape = tile.shape;
  const Index where = delinearize(item, tile.grid());
  llvm::Value* outer = where[0];
  llvm::Value* firstRow = b.CreateMul(where[1], i64(tile.rows), "scatter.first_row", true, true);
  llvm::Value* firstColumn = b.CreateMul(where[2], i64(tile.columns), "scatter.first_column", true, true);
  llvm::Value* rowCount = atMost(b.CreateSub(i64(tile.n), firstRow), tile.rows);
  llvm::Value* columnCount = atMost(b.CreateSub(i64(tile.inner), firstColumn), tile.columns);

  llvm::Type* accType = b.getDoubleTy();  // summed in double, as the interpreter sums
  llvm::Value* sums = stackArray(accType, tile.rows * tile.columns, "scatter.sums");
  b.CreateMemSet(sums, b.getInt8(0), static_cast<uint64_t>(tile.rows * tile.columns * 8), llvm::MaybeAlign(8));

  const DType dyType = dy->type().dtype, indexType = indices->type().dtype;
  llvm::Value* dyBuffer = buffers_[static_cast<size_t>(inputIndex_.at(dy))];
  llvm::Value* indexBuffer = buffers_[static_cast<size_t>(inputIndex_.at(indices))];
  llvm::Type* dyStorage = storageType(dyType);
  llvm::Type* indexStorage = storageType(indexType);
  // Index j's slice of dy starts at (outer * numIndices + j) * inner: dy is [outer, indices, inner].
  llvm::Value* outerSlices = b.CreateMul(outer, i64(tile.numIndices));
  auto addSlice = [&](llvm::Value* j, llvm::Value* local) {
    llvm::Value* from = b.CreateAdd(b.CreateMul(b.CreateAdd(outerSlices, j), i64(tile.inner)), firstColumn);
    llvm::Value* to = b.CreateMul(local, i64(tile.columns));
    loop(columnCount, {}, [&](llvm::Value* c, const Values&) {
      llvm::Value* sum = b.CreateInBoundsGEP(accType, sums, b.CreateAdd(to, c));
      llvm::Value* term = b.CreateLoad(dyStorage, b.CreateInBoundsGEP(dyStorage, dyBuffer, b.CreateAdd(from, c)));
      b.CreateStore(b.CreateFAdd(b.CreateLoad(accType, sum), toDouble(fromStorage(term, dyType))), sum);
      return Values{};
    });
  };
  // Index j's row relative to the block (i64, or a vector of them): a row of another block, or an
  // index out of range, lands at or past rowCount as an unsigned number.
  auto localRow = [&](llvm::Value* raw) {
    llvm::Type* type = raw->getType();
    auto splat = [&](int64_t v) { return llvm::ConstantInt::get(type, static_cast<uint64_t>(v), true); };
    llvm::Value* row = b.CreateSelect(b.CreateICmpSLT(raw, splat(0)), b.CreateAdd(raw, splat(tile.n)), raw);
    auto* vector = llvm::dyn_cast<llvm::FixedVectorType>(type);
    return b.CreateSub(row, vector ? b.CreateVectorSplat(vector->getNumElements(), firstRow) : firstRow);
  };
  auto indexAt = [&](llvm::Value* j) {
    return toI64(b.CreateLoad(indexStorage, b.CreateInBoundsGEP(indexStorage, indexBuffer, j)), indexType);
  };
  // The range check, once per kernel (item 0): the other items pass such an index by.
  ifThen(b.CreateICmpEQ(item, i64(0)), [&] {
    loop(tile.numIndices, {}, [&](llvm::Value* j, const Values&) {
      gatherBackwardRow(*this, op, indexAt(j), tile.n);
      return Values{};
    });
    return Values{};
  }, {});
  // The indices kScatterScan at a time: one vector compare finds those in the block (few: a block
  // is a small share of the rows), and only those are visited, lowest first (index order).
  const int64_t whole = tile.numIndices / kScatterScan;
  auto* scanType = llvm::FixedVectorType::get(indexStorage, static_cast<unsigned>(kScatterScan));
  if (whole > 0)
    loop(whole, {}, [&](llvm::Value* v, const Values&) {
      llvm::Value* first = b.CreateMul(v, i64(kScatterScan));
      // Aligned as one index is: the buffer may be no more (a map body's slice).
      const llvm::Align indexAlign(indexStorage->getPrimitiveSizeInBits() / 8);
      llvm::Value* raws = b.CreateAlignedLoad(scanType, b.CreateInBoundsGEP(indexStorage, indexBuffer, first), indexAlign);
      llvm::Value* locals = localRow(toI64(raws, indexType));
      llvm::Value* inBlock = b.CreateICmpULT(locals, b.CreateVectorSplat(static_cast<unsigned>(kScatterScan), rowCount));
      llvm::Value* mask = b.CreateZExt(b.CreateBitCast(inBlock, b.getIntNTy(static_cast<unsigned>(kScatterScan))), b.getInt64Ty());
      ifThen(b.CreateICmpNE(mask, i64(0)), [&] {
        llvm::Value* hits = b.CreateUnaryIntrinsic(llvm::Intrinsic::ctpop, mask);
        loop(hits, {mask}, [&](llvm::Value*, const Values& left) {
          llvm::Value* k = b.CreateBinaryIntrinsic(llvm::Intrinsic::cttz, left[0], b.getTrue());
          addSlice(b.CreateAdd(first, k), b.CreateExtractElement(locals, k));
          return Values{b.CreateAnd(left[0], b.CreateSub(left[0], i64(1)))};
        });
        return Values{};
      }, {});
      return Values{};
    });
  // The rest one at a time.
  loop(tile.numIndices - whole * kScatterScan, {}, [&](llvm::Value* r, const Values&) {
    llvm::Value* j = b.CreateAdd(i64(whole * kScatterScan), r);
    llvm::Value* local = localRow(indexAt(j));
    return ifThen(b.CreateICmpULT(local, rowCount), [&] {
      addSlice(j, local);
      return Values{};
    }, {});
  });

  // The epilogue: the group's outputs at each of the block's elements.
  const Shape outerShape(shape.begin(), shape.begin() + tile.axis), innerShape(shape.begin() + tile.axis + 1, shape.end());
  const Index outerIndex = outerShape.empty() ? Index{} : delinearize(outer, outerShape);
  storeSumBlock(op, sums, accType, tile.columns, rowCount, columnCount, [&](llvm::Value* r, llvm::Value* q) {
    Index index = outerIndex;
    index.push_back(b.CreateAdd(firstRow, r));
    if (!innerShape.empty())
      for (llvm::Value* v : delinearize(b.CreateAdd(firstColumn, q), innerShape)) index.push_back(v);
    return index;
  }, shape);
}

}  // namespace kiln::codegen
