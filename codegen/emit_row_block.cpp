// ElementEmitter::emitRowBlock: the CPU's row kernels over short rows, a block of rows side by
// side, one per vector lane (row_block.h).
#include "codegen/element_emitter.h"
#include "codegen/loop_hints.h"
#include "codegen/row_block.h"

namespace kiln::codegen {

void ElementEmitter::emitRowBlock(llvm::Value* item, int64_t rows) {
  const int64_t n = group_.rowLength(), total = group_.numRows();
  llvm::Value* firstRow = b.CreateMul(item, i64(rows), "block.row", true, true);
  Shape full = group_.rows;
  full.insert(full.end(), group_.inner.begin(), group_.inner.end());
  // The block's elements of a buffer: rows * n of them from its first row's, as n vectors.
  auto blockVectors = [&](DType t, llvm::Value* buffer) {
    llvm::Value* start = b.CreateInBoundsGEP(storageType(t), buffer, b.CreateMul(firstRow, i64(n)));
    std::vector<llvm::Value*> pointers;
    for (int64_t j = 0; j < n; ++j) pointers.push_back(b.CreateConstInBoundsGEP1_64(storageType(t), start, static_cast<uint64_t>(j * rows)));
    return pointers;
  };
  auto elementAlign = [](DType t) { return llvm::Align(dtypeSize(t)); };
  // A vector of one element of each of the block's rows.
  auto laneVector = [&](DType t) { return llvm::FixedVectorType::get(storageType(t), static_cast<unsigned>(rows)); };
  auto whole = [&] {
    RowBlock block;
    block.rows = rows;
    for (size_t i = 0; i < group_.inputs.size(); ++i) {
      const Value* v = group_.inputs[i];
      if (v->type().shape != full) continue;
      DType t = v->type().dtype;
      auto* vector = laneVector(t);
      llvm::Value* tile = stackArray(vector, n, "row.block.in");
      std::vector<llvm::Value*> loaded;
      for (llvm::Value* p : blockVectors(t, buffers_[i])) loaded.push_back(b.CreateAlignedLoad(vector, p, elementAlign(t)));
      std::vector<llvm::Value*> columns = rowsToColumns(b, loaded, rows);
      for (int64_t k = 0; k < n; ++k) b.CreateStore(columns[static_cast<size_t>(k)], b.CreateConstInBoundsGEP1_64(vector, tile, static_cast<uint64_t>(k)));
      block.tiles[v] = tile;
    }
    std::vector<size_t> fullOutputs;
    for (size_t k = 0; k < group_.outputs.size(); ++k) {
      const Value* v = group_.outputs[k];
      if (!group_.spansRows(v)) continue;
      block.tiles[v] = stackArray(laneVector(v->type().dtype), n, "row.block.out");
      fullOutputs.push_back(k);
    }
    block.errors = stackArray(b.getInt32Ty(), rows, "row.block.errors");
    bool raises = false;
    loop(rows, {}, [&](llvm::Value* lane, const Values&) {
      rowBlock_ = block;
      rowBlock_->lane = lane;
      b.CreateStore(b.getInt32(0), b.CreateInBoundsGEP(b.getInt32Ty(), block.errors, lane));
      emitRow(b.CreateAdd(firstRow, lane, "row", true, true), i64(0));
      raises = rowBlock_->raises;
      rowBlock_.reset();
      return Values{};
    });
    setLoopHints(lastLoopLatch(), static_cast<int>(rows), 1);
    // The lanes' errors, where there are any, the block's first row first.
    if (raises) {
      auto codeOf = [&](llvm::Value* lane) {
        return b.CreateLoad(b.getInt32Ty(), b.CreateInBoundsGEP(b.getInt32Ty(), block.errors, lane));
      };
      llvm::Value* any = loop(rows, {b.getInt32(0)}, [&](llvm::Value* lane, const Values& c) {
        return Values{b.CreateOr(c[0], codeOf(lane))};
      })[0];
      ifThen(b.CreateICmpNE(any, b.getInt32(0)), [&] {
        loop(rows, {}, [&](llvm::Value* lane, const Values&) {
          llvm::Value* code = codeOf(lane);
          raiseCode(b.CreateICmpNE(code, b.getInt32(0)), code);
          return Values{};
        });
        return Values{};
      }, {});
    }
    for (size_t k : fullOutputs) {
      const Value* v = group_.outputs[k];
      DType t = v->type().dtype;
      auto* vector = laneVector(t);
      llvm::Value* tile = block.tiles.at(v);
      std::vector<llvm::Value*> columns;
      for (int64_t c = 0; c < n; ++c)
        columns.push_back(b.CreateLoad(vector, b.CreateConstInBoundsGEP1_64(vector, tile, static_cast<uint64_t>(c))));
      std::vector<llvm::Value*> rowsOut = columnsToRows(b, columns, rows);
      std::vector<llvm::Value*> pointers = blockVectors(t, buffers_[group_.inputs.size() + k]);
      for (int64_t j = 0; j < n; ++j) b.CreateAlignedStore(rowsOut[static_cast<size_t>(j)], pointers[static_cast<size_t>(j)], elementAlign(t));
    }
    return Values{};
  };
  if (total % rows == 0) {
    whole();
    return;
  }
  // Only the last block is short: its rows one at a time.
  llvm::Value* isWhole = b.CreateICmpSLE(b.CreateAdd(firstRow, i64(rows)), i64(total));
  ifThen(isWhole, whole, {});
  ifThen(b.CreateNot(isWhole), [&] {
    loop(total % rows, {}, [&](llvm::Value* r, const Values&) {
      emitRow(b.CreateAdd(firstRow, r, "row", true, true), i64(0));
      return Values{};
    });
    return Values{};
  }, {});
}

}  // namespace kiln::codegen
