// rowBlockRows and the shuffles that move a block of short rows into columns and back.
#include "codegen/row_block.h"

#include <algorithm>

#include <llvm/IR/DerivedTypes.h>

namespace kiln::codegen {

int64_t rowBlockRows(const KernelGroup& group, int lanes) {
  const int64_t n = group.rowLength();
  // A row of exactly one vector goes as well on its own (softmax over f32[256000,16] within noise,
  // layer norm 1.5 against 1.7 ms side by side), and its columns draw on every vector of the block.
  if (group.kind != KernelKind::Row || lanes < 2 || n < 2 || n >= 2 * lanes || n == lanes || group.numRows() < lanes) return 1;
  return lanes;
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
    llvm::Value* first0 = in[static_cast<size_t>(sources[0])];
    llvm::Value* acc;
    if (sources.size() == 1) {
      std::vector<int> m(static_cast<size_t>(width));
      for (int64_t lane = 0; lane < width; ++lane) m[static_cast<size_t>(lane)] = static_cast<int>(perm[static_cast<size_t>(first + lane)] % width);
      acc = b.CreateShuffleVector(first0, m);
    } else {
      acc = b.CreateShuffleVector(first0, in[static_cast<size_t>(sources[1])], mask(sources[1], false, true));
      for (size_t s = 2; s < sources.size(); ++s)
        acc = b.CreateShuffleVector(acc, in[static_cast<size_t>(sources[s])], mask(sources[s], true, false));
    }
    out.push_back(acc);
  }
  return out;
}

std::vector<int64_t> rowsToColumns(int64_t rows, int64_t columns) {
  std::vector<int64_t> perm(static_cast<size_t>(rows * columns));
  for (int64_t k = 0; k < columns; ++k)
    for (int64_t r = 0; r < rows; ++r) perm[static_cast<size_t>(k * rows + r)] = r * columns + k;
  return perm;
}

std::vector<int64_t> columnsToRows(int64_t rows, int64_t columns) {
  std::vector<int64_t> perm(static_cast<size_t>(rows * columns));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < columns; ++k) perm[static_cast<size_t>(r * columns + k)] = k * rows + r;
  return perm;
}

}  // namespace kiln::codegen
