// interleaveCount, setLoopHints and keepRolled: llvm.loop metadata for the CPU's loops.
#include "codegen/loop_hints.h"

#include <llvm/IR/Constants.h>
#include <llvm/ADT/STLExtras.h>
#include <llvm/IR/Metadata.h>

#include <vector>

namespace kiln::codegen {

namespace {
// Shorter loops spend their time around the vector loop (a row's setup, the scalar remainder):
// interleaving gained nothing measurable there (EfficientNet-B0's SiLU over rows of 96 f32:
// 0.58-0.62 ms either way) and only added code to compile.
constexpr int64_t kMinVectors = 16;

// 4 or 2 where that many divide `vectors`, else `otherwise`.
int wholeGroups(int64_t vectors, int otherwise) {
  for (int k : {4, 2})
    if (vectors >= k && vectors % k == 0) return k;
  return otherwise;
}

}  // namespace

int interleaveCount(int64_t trips, int lanes) {
  if (lanes <= 0 || trips <= 0) return 0;
  int64_t vectors = trips / lanes;  // whole vectors; what is left runs one element at a time anyway
  return vectors < kMinVectors ? 0 : wholeGroups(vectors, 0);
}

int shortLoopInterleave(int64_t trips, int lanes) {
  return lanes <= 0 || trips <= 0 ? 1 : wholeGroups(trips / lanes, 1);
}

namespace {

// Sets `latch`'s loop ID: a distinct node naming itself (operand 0), then `hints`.
void setLoopId(llvm::Instruction* latch, std::vector<llvm::Metadata*> hints) {
  hints.insert(hints.begin(), nullptr);
  llvm::MDNode* loopId = llvm::MDNode::getDistinct(latch->getContext(), hints);
  loopId->replaceOperandWith(0, loopId);
  latch->setMetadata(llvm::LLVMContext::MD_loop, loopId);
}

// A loop hint: its name alone (a flag such as unroll.disable), or its name and a value.
llvm::Metadata* hintNode(llvm::LLVMContext& c, const char* name) { return llvm::MDNode::get(c, {llvm::MDString::get(c, name)}); }
llvm::Metadata* hintNode(llvm::LLVMContext& c, const char* name, llvm::Constant* value) {
  return llvm::MDNode::get(c, {llvm::MDString::get(c, name), llvm::ConstantAsMetadata::get(value)});
}
llvm::Metadata* hintNode(llvm::LLVMContext& c, const char* name, int64_t value) {
  return hintNode(c, name, llvm::ConstantInt::get(llvm::Type::getInt32Ty(c), static_cast<uint64_t>(value)));
}

}  // namespace

void setLoopHints(llvm::Instruction* latch, int width, int interleave, bool rolledUntilVectorised) {
  if (width <= 0 && interleave <= 0) return;
  llvm::LLVMContext& c = latch->getContext();
  std::vector<llvm::Metadata*> hints;
  if (width > 0) {
    hints.push_back(hintNode(c, "llvm.loop.vectorize.width", width));
    hints.push_back(hintNode(c, "llvm.loop.vectorize.enable", llvm::ConstantInt::getTrue(c)));
  }
  if (width > 0 && rolledUntilVectorised) {
    // The loops the vectoriser makes (the vector loop and the remainder) carry only its "done"
    // mark, free to be unrolled then.
    llvm::Metadata* vectorised = hintNode(c, "llvm.loop.isvectorized", 1);
    hints.push_back(hintNode(c, "llvm.loop.unroll.disable"));
    for (const char* followup : {"llvm.loop.vectorize.followup_vectorized", "llvm.loop.vectorize.followup_epilogue"})
      hints.push_back(llvm::MDNode::get(c, {llvm::MDString::get(c, followup), vectorised}));
  }
  if (interleave > 0) hints.push_back(hintNode(c, "llvm.loop.interleave.count", interleave));
  setLoopId(latch, std::move(hints));
}

void keepRolled(llvm::Instruction* latch) { setLoopId(latch, {hintNode(latch->getContext(), "llvm.loop.unroll.disable")}); }

void keepVectorLoopRolled(llvm::Instruction* latch) {
  llvm::LLVMContext& c = latch->getContext();
  constexpr const char* kFollowup = "llvm.loop.vectorize.followup_vectorized";
  std::vector<llvm::Metadata*> hints;
  if (llvm::MDNode* id = latch->getMetadata(llvm::LLVMContext::MD_loop))
    for (const llvm::MDOperand& hint : llvm::drop_begin(id->operands())) {
      auto* node = llvm::dyn_cast<llvm::MDNode>(hint.get());
      auto* name = node && node->getNumOperands() ? llvm::dyn_cast<llvm::MDString>(node->getOperand(0)) : nullptr;
      if (!name || name->getString() != kFollowup) hints.push_back(hint.get());
    }
  // A followup names every attribute of the loop it makes: the vectoriser's mark, and no unrolling.
  hints.push_back(llvm::MDNode::get(c, {llvm::MDString::get(c, kFollowup), hintNode(c, "llvm.loop.isvectorized", 1),
                                        hintNode(c, "llvm.loop.unroll.disable")}));
  setLoopId(latch, std::move(hints));
}

}  // namespace kiln::codegen
