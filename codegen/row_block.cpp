// rowBlockRows and the shuffles that move a block of short rows into columns and back.
#include "codegen/row_block.h"

#include <algorithm>

#include <llvm/IR/DerivedTypes.h>

namespace kiln::codegen {

int64_t rowBlockRows(const KernelGroup& group, int lanes) {
  // From two vectors up a row goes as fast on its own (softmax over f32[128000,32] 1.40 ms one at a
  // time, 1.54 in blocks; rows of 64 1.28 against 1.67), and the unrolled rows compile slower.
  const int64_t n = group.rowLength();
  if (group.kind != KernelKind::Row || lanes < 2 || n < 2 || n >= 2 * lanes || group.numRows() < lanes ||
      group.numRows() * n < kMinRowBlockElements)
    return 1;
  // A row of exactly one vector that only reduces (a sum over rows of 16 f32) is one load and a
  // horizontal reduction on its own: 0.35 ms over f32[262144,16], 0.42 in blocks, whose transposes
  // pay off where the full rows come back out (softmax, layer norm).
  bool fullOutputs = std::any_of(group.outputs.begin(), group.outputs.end(), [&](const Value* v) { return group.spansRows(v); });
  return n == lanes && !fullOutputs ? 1 : lanes;
}

std::vector<llvm::Value*> permuteAcrossVectors(llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& in,
                                               const std::vector<int64_t>& perm) {
  const auto width = static_cast<int64_t>(llvm::cast<llvm::FixedVectorType>(in.front()->getType())->getNumElements());
  std::vector<llvm::Value*> out;
  for (int64_t first = 0; first < static_cast<int64_t>(perm.size()); first += width) {
    // The vectors of `in` this result draws from, in the order its lanes first need them.
    std::vector<int64_t> sources;
    for (int64_t lane = 0; lane < width; ++lane) {
      int64_t source = perm[static_cast<size_t>(first + lane)] / width;
      if (std::find(sources.begin(), sources.end(), source) == sources.end()) sources.push_back(source);
    }
    // The first two sources in one shuffle, then each further one into the lanes it supplies,
    // the lanes gathered so far kept (mask entries below `width` pick from the accumulated vector,
    // from `width` on from the next source).
    auto mask = [&](int64_t source, bool keepOthers, bool firstPair) {
      std::vector<int> m(static_cast<size_t>(width));
      for (int64_t lane = 0; lane < width; ++lane) {
        int64_t at = perm[static_cast<size_t>(first + lane)];
        int slot = -1;
        if (at / width == source) slot = static_cast<int>(width + at % width);
        else if (firstPair && at / width == sources[0]) slot = static_cast<int>(at % width);
        else if (keepOthers) slot = static_cast<int>(lane);
        m[static_cast<size_t>(lane)] = slot;
      }
      return m;
    };
    // (One source: its shuffle with a poison second, whose lanes no mask entry picks.)
    llvm::Value* first0 = in[static_cast<size_t>(sources[0])];
    llvm::Value* second = sources.size() > 1 ? in[static_cast<size_t>(sources[1])] : llvm::PoisonValue::get(first0->getType());
    llvm::Value* acc = b.CreateShuffleVector(first0, second, mask(sources.size() > 1 ? sources[1] : -1, false, true));
    for (size_t s = 2; s < sources.size(); ++s)
      acc = b.CreateShuffleVector(acc, in[static_cast<size_t>(sources[s])], mask(sources[s], true, false));
    out.push_back(acc);
  }
  return out;
}

namespace {

// out[2i] = in[i], out[2i + 1] = in[half + i] over `count` elements, and its inverse.
std::vector<int64_t> interleaveHalves(int64_t count) {
  std::vector<int64_t> perm(static_cast<size_t>(count));
  for (int64_t i = 0; i < count / 2; ++i) {
    perm[static_cast<size_t>(2 * i)] = i;
    perm[static_cast<size_t>(2 * i + 1)] = count / 2 + i;
  }
  return perm;
}
std::vector<int64_t> deinterleave(int64_t count) {
  std::vector<int64_t> perm(static_cast<size_t>(count));
  for (int64_t i = 0; i < count / 2; ++i) {
    perm[static_cast<size_t>(i)] = 2 * i;
    perm[static_cast<size_t>(count / 2 + i)] = 2 * i + 1;
  }
  return perm;
}

}  // namespace

std::vector<llvm::Value*> rowsToColumns(llvm::IRBuilder<>& b, std::vector<llvm::Value*> vectors, int64_t rows) {
  const auto count = static_cast<int64_t>(vectors.size()) * rows;
  for (int64_t stage = 1; stage < rows; stage *= 2) vectors = permuteAcrossVectors(b, vectors, interleaveHalves(count));
  return vectors;
}

std::vector<llvm::Value*> columnsToRows(llvm::IRBuilder<>& b, std::vector<llvm::Value*> vectors, int64_t rows) {
  const auto count = static_cast<int64_t>(vectors.size()) * rows;
  for (int64_t stage = 1; stage < rows; stage *= 2) vectors = permuteAcrossVectors(b, vectors, deinterleave(count));
  return vectors;
}

}  // namespace kiln::codegen
