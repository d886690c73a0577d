// ElementEmitter::emitCpuConvItem: the CPU's generated convolutions, a register block of outputs
// at a time (conv_rows.h).
#include <llvm/IR/Constants.h>

#include "codegen/conv_rows.h"
#include "codegen/element_emitter.h"

namespace kiln::codegen {

namespace {
// Window loops of at most this many trips are emitted as straight-line code: each kx (and, in
// windows of at most kUnrolledWindow, each ky) is then a constant, so the columns' padding masks
// are computed once per item instead of once per channel.
constexpr int64_t kUnrolledWindowRow = 16, kUnrolledWindow = 64;
// Strides up to this read x's columns as one contiguous run and keep every stride-th (a gather
// beyond: a 3x3 stride-2 conv over f64[4,32,56,56] to 64 channels took 2.0 ms with gathers, 1.55
// with runs, on the 2-core Sapphire Rapids).
constexpr int64_t kContiguousStride = 4;
}  // namespace

void ElementEmitter::emitCpuConvItem(const ConvRows& tile, llvm::Value* item) {
  const Op& conv = *tile.conv;
  const Value* x = conv.operand(0);
  const Value* w = conv.operand(1);
  const Shape &xs = x->type().shape, &ws = w->type().shape, &ys = tile.shape;
  const std::vector<int64_t> strides = conv.intsAttr("strides"), pads = conv.intsAttr("pads"), dil = conv.intsAttr("dilations");
  const int64_t rows = tile.rows, lanes = tile.lanes, vectors = tile.vectors, columns = tile.columns();
  const Index where = delinearize(item, tile.grid());
  llvm::Value* image = where[0];
  llvm::Value* firstOut = b.CreateMul(where[1], i64(rows), "conv.first_channel", true, true);
  llvm::Value* oy = where[2];
  llvm::Value* firstColumn = b.CreateMul(where[3], i64(columns), "conv.first_column", true, true);
  // The block's input channels: those of its (one) group.
  const int64_t groupChannels = ws[1], perGroup = ws[0] / conv.intAttr("groups");
  llvm::Value* firstIn = b.CreateMul(b.CreateUDiv(firstOut, i64(perGroup)), i64(groupChannels));

  const DType xt = x->type().dtype, wt = w->type().dtype;
  llvm::Type* accType = b.getDoubleTy();  // conv2d takes floats only, summed in double
  auto* accVector = llvm::FixedVectorType::get(accType, static_cast<unsigned>(lanes));
  llvm::Type* xStorage = storageType(xt);
  auto* xVector = llvm::FixedVectorType::get(xStorage, static_cast<unsigned>(lanes));
  auto widen = [&](llvm::Value* v, DType t) { return toDouble(fromStorage(v, t)); };
  llvm::Value* xBuffer = buffers_[static_cast<size_t>(inputIndex_.at(x))];
  llvm::Value* wBuffer = buffers_[static_cast<size_t>(inputIndex_.at(w))];

  // The input columns the lanes of vector v read at window column kx (with `count` and `step`:
  // `count` columns `step` apart from its first lane's); a lane reads only where its column lies
  // inside x, not in the padding.
  const int64_t stride = strides[1];
  auto inputColumns = [&](int64_t v, llvm::Value* kx, int64_t count = 0, int64_t step = 0) {
    if (count == 0) count = lanes, step = stride;
    auto n = static_cast<unsigned>(count);
    std::vector<llvm::Constant*> offsets;
    for (int64_t j = 0; j < count; ++j) offsets.push_back(b.getInt64(static_cast<uint64_t>(j * step)));
    llvm::Value* start = b.CreateAdd(b.CreateMul(b.CreateAdd(firstColumn, i64(v * lanes)), i64(stride)),
                                     b.CreateSub(b.CreateMul(kx, i64(dil[1])), i64(pads[1])));
    return b.CreateAdd(b.CreateVectorSplat(n, start), llvm::ConstantVector::get(offsets));
  };
  auto insideMask = [&](llvm::Value* ix) {
    auto n = llvm::cast<llvm::FixedVectorType>(ix->getType())->getNumElements();
    return b.CreateAnd(b.CreateICmpSGE(ix, b.CreateVectorSplat(n, i64(0))), b.CreateICmpSLT(ix, b.CreateVectorSplat(n, i64(xs[3]))));
  };
  const bool unrolledColumns = ws[3] <= kUnrolledWindowRow;
  std::vector<std::vector<llvm::Value*>> masks;  // [kx][v], where the window's columns are unrolled
  if (unrolledColumns)
    for (int64_t kx = 0; kx < ws[3]; ++kx) {
      masks.emplace_back();
      for (int64_t v = 0; v < vectors; ++v) masks.back().push_back(insideMask(inputColumns(v, i64(kx))));
    }

  // The weights of the block's channel r: the last channel's past the output's (one group only).
  std::vector<llvm::Value*> outChannels;
  for (int64_t r = 0; r < rows; ++r) outChannels.push_back(atMost(b.CreateAdd(firstOut, i64(r)), ys[1] - 1));

  // One step of every sum: window position (ci, ky, kx), input row iy (inside x).
  auto step = [&](const Values& acc, llvm::Value* ci, llvm::Value* ky, llvm::Value* kx, llvm::Value* iy,
                  const std::vector<llvm::Value*>* kxMasks) {
    llvm::Value* channel = b.CreateAdd(firstIn, ci);
    std::vector<llvm::Value*> xv, inside;
    for (int64_t v = 0; v < vectors; ++v) {
      llvm::Value* ix = inputColumns(v, kx);
      llvm::Value* mask = kxMasks ? (*kxMasks)[static_cast<size_t>(v)] : insideMask(ix);
      // The row's element at the vector's first column (which may lie in the padding, before the
      // row: a plain GEP, as no lane reads through it there).
      llvm::Value* rowStart = linearize({image, channel, iy, i64(0)}, xs);
      const llvm::Align align(xStorage->getPrimitiveSizeInBits() / 8);
      llvm::Value* first = b.CreateGEP(xStorage, xBuffer, b.CreateAdd(rowStart, b.CreateExtractElement(ix, uint64_t{0})));
      llvm::Value* loaded;
      if (stride == 1) {
        loaded = b.CreateMaskedLoad(xVector, first, align, mask, llvm::Constant::getNullValue(xVector));
      } else if (stride <= kContiguousStride) {
        // The stride x lanes elements from the first lane's, every stride-th one kept: a wide masked
        // load (each element read where it lies inside the row) and a shuffle, not a gather.
        llvm::Value* span = inputColumns(v, kx, stride * lanes, 1);
        auto* wide = llvm::FixedVectorType::get(xStorage, static_cast<unsigned>(stride * lanes));
        llvm::Value* all = b.CreateMaskedLoad(wide, first, align, insideMask(span), llvm::Constant::getNullValue(wide));
        std::vector<int> kept;
        for (int64_t j = 0; j < lanes; ++j) kept.push_back(static_cast<int>(j * stride));
        loaded = b.CreateShuffleVector(all, kept);
      } else {
        llvm::Value* at = b.CreateAdd(b.CreateVectorSplat(static_cast<unsigned>(lanes), rowStart), ix);
        loaded = b.CreateMaskedGather(xVector, b.CreateGEP(xStorage, xBuffer, at), align, mask, llvm::Constant::getNullValue(xVector));
      }
      xv.push_back(widen(loaded, xt));
      inside.push_back(mask);
    }
    Values next;
    for (int64_t r = 0; r < rows; ++r) {
      llvm::Value* at = linearize({outChannels[static_cast<size_t>(r)], ci, ky, kx}, ws);
      llvm::Value* weight = widen(b.CreateLoad(storageType(wt), b.CreateInBoundsGEP(storageType(wt), wBuffer, at)), wt);
      llvm::Value* splat = b.CreateVectorSplat(static_cast<unsigned>(lanes), weight);
      for (int64_t v = 0; v < vectors; ++v) {
        llvm::Value* sum = acc[static_cast<size_t>(r * vectors + v)];
        // Columns in the padding keep their sums: the interpreter adds no term for them.
        next.push_back(b.CreateSelect(inside[static_cast<size_t>(v)], multiplyAdd(sum, xv[static_cast<size_t>(v)], splat), sum));
      }
    }
    return next;
  };
  // The window's columns at input row iy: unrolled where short.
  auto windowRow = [&](Values acc, llvm::Value* ci, llvm::Value* ky, llvm::Value* iy) {
    if (unrolledColumns) {
      for (int64_t kx = 0; kx < ws[3]; ++kx) acc = step(acc, ci, ky, i64(kx), iy, &masks[static_cast<size_t>(kx)]);
      return acc;
    }
    return loop(ws[3], acc, [&](llvm::Value* kx, const Values& s) { return step(s, ci, ky, kx, iy, nullptr); });
  };
  // Window rows in the padding are skipped by the whole block.
  auto windowRows = [&](Values acc, llvm::Value* ci) {
    auto oneRow = [&](llvm::Value* ky, const Values& s) {
      llvm::Value* iy = windowPosition(oy, strides[0], pads[0], ky, dil[0]);
      return ifThen(inRange(iy, xs[2]), [&] { return windowRow(s, ci, ky, iy); }, s);
    };
    if (unrolledColumns && ws[2] * ws[3] <= kUnrolledWindow) {
      for (int64_t ky = 0; ky < ws[2]; ++ky) acc = oneRow(i64(ky), acc);
      return acc;
    }
    return loop(ws[2], acc, oneRow);
  };
  Values zeros(static_cast<size_t>(rows * vectors), llvm::Constant::getNullValue(accVector));
  Values sums = loop(groupChannels, zeros, [&](llvm::Value* ci, const Values& acc) { return windowRows(acc, ci); });

  // The epilogue: the sums to a block on the stack, then the group's outputs at each of the block's
  // elements inside the output.
  llvm::Value* block = stackArray(accType, rows * columns, "conv.sums");
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t v = 0; v < vectors; ++v)
      b.CreateAlignedStore(sums[static_cast<size_t>(r * vectors + v)],
                           b.CreateConstInBoundsGEP1_64(accType, block, static_cast<uint64_t>(r * columns + v * lanes)), llvm::Align(8));
  llvm::Value* channels = atMost(b.CreateSub(i64(ys[1]), firstOut), rows);
  llvm::Value* count = atMost(b.CreateSub(i64(ys[3]), firstColumn), columns);
  storeSumBlock(conv, block, accType, columns, channels, count, [&](llvm::Value* r, llvm::Value* q) {
    return Index{image, b.CreateAdd(firstOut, r), oy, b.CreateAdd(firstColumn, q)};
  }, ys);
}

}  // namespace kiln::codegen
