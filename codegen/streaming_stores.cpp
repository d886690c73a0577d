// markStreamingOutputs and streamStores: see streaming_stores.h.
#include "codegen/streaming_stores.h"

#include "codegen/host_caches.h"

#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/Transforms/Utils/BasicBlockUtils.h>

#include <set>
#include <string>

namespace kiln::codegen {

namespace {

constexpr const char* kStreamingBuffers = "kiln-streaming-buffers";

// The buffer index whose pointer `object` is, when it is loaded from slot i of `buffers` (the
// kernel's buffer array: emitKernel loads each slot once, in the entry block); else -1.
int bufferIndexOf(const llvm::Value* object, const llvm::Argument* buffers) {
  const auto* load = llvm::dyn_cast<llvm::LoadInst>(object);
  if (!load) return -1;
  const llvm::Value* slot = load->getPointerOperand();
  if (slot == buffers) return 0;
  const auto* gep = llvm::dyn_cast<llvm::GetElementPtrInst>(slot);
  if (!gep || gep->getPointerOperand() != buffers || gep->getNumIndices() != 1) return -1;
  const auto* index = llvm::dyn_cast<llvm::ConstantInt>(gep->idx_begin()->get());
  if (!index) return -1;
  // GEPs of the array are in pointer-sized elements, or in bytes once instcombine has canonicalised them.
  uint64_t scale = gep->getSourceElementType()->isIntegerTy(8) ? 8 : 1;
  return index->getZExtValue() % scale ? -1 : static_cast<int>(index->getZExtValue() / scale);
}

std::set<int> streamingBuffers(const llvm::Function& f) {
  std::set<int> buffers;
  llvm::StringRef list = f.getFnAttribute(kStreamingBuffers).getValueAsString();
  while (!list.empty()) {
    auto [item, rest] = list.split(',');
    int index = 0;
    if (!item.getAsInteger(10, index)) buffers.insert(index);
    list = rest;
  }
  return buffers;
}

// `store` as: if its address is aligned to the vector's size, a non-temporal store; else itself.
void streamWhenAligned(llvm::StoreInst* store, uint64_t bytes) {
  llvm::IRBuilder<> b(store);
  llvm::Value* address = b.CreatePtrToInt(store->getPointerOperand(), b.getInt64Ty());
  llvm::Value* aligned = b.CreateICmpEQ(b.CreateAnd(address, b.getInt64(bytes - 1)), b.getInt64(0), "stream.aligned");
  llvm::Instruction* thenTerm = nullptr;
  llvm::Instruction* elseTerm = nullptr;
  llvm::SplitBlockAndInsertIfThenElse(aligned, store, &thenTerm, &elseTerm);
  auto* streaming = llvm::cast<llvm::StoreInst>(store->clone());
  streaming->setAlignment(llvm::Align(bytes));
  streaming->setMetadata(llvm::LLVMContext::MD_nontemporal,
                         llvm::MDNode::get(store->getContext(), llvm::ConstantAsMetadata::get(b.getInt32(1))));
  streaming->insertBefore(thenTerm);
  store->moveBefore(elseTerm);
}

}  // namespace

int64_t streamingOutputBytes() { return 2 * hostCaches().l2Bytes; }

int64_t streamingKernelBytes(bool writesMoreThanItReads) {
  return writesMoreThanItReads ? hostCaches().lastLevelBytes : hostCaches().lastLevelBytes / 2;
}

bool streamsOutput(int64_t outputBytes, int64_t readBytes, int64_t writtenBytes) {
  return outputBytes >= streamingOutputBytes() &&
         readBytes + writtenBytes > streamingKernelBytes(writtenBytes > readBytes);
}

void markStreamingOutputs(llvm::Function& kernel, const std::vector<int>& buffers) {
  if (buffers.empty()) return;
  std::string list;
  for (int b : buffers) list += (list.empty() ? "" : ",") + std::to_string(b);
  kernel.addFnAttr(kStreamingBuffers, list);
}

void streamStores(llvm::Module& module) {
  for (llvm::Function& f : module) {
    if (f.isDeclaration() || !f.hasFnAttribute(kStreamingBuffers) || f.arg_empty()) continue;
    std::set<int> buffers = streamingBuffers(f);
    const llvm::DataLayout& layout = module.getDataLayout();
    std::vector<std::pair<llvm::StoreInst*, uint64_t>> stores;
    for (llvm::BasicBlock& block : f)
      for (llvm::Instruction& inst : block) {
        auto* store = llvm::dyn_cast<llvm::StoreInst>(&inst);
        if (!store || !store->getValueOperand()->getType()->isVectorTy() || store->isVolatile()) continue;
        uint64_t bytes = layout.getTypeStoreSize(store->getValueOperand()->getType()).getFixedValue();
        if (bytes != 16 && bytes != 32 && bytes != 64) continue;  // an x86 vector register's width
        int buffer = bufferIndexOf(llvm::getUnderlyingObject(store->getPointerOperand()), f.getArg(0));
        if (buffer >= 0 && buffers.count(buffer)) stores.push_back({store, bytes});
      }
    if (stores.empty()) continue;
    for (auto [store, bytes] : stores) streamWhenAligned(store, bytes);
    // Streaming stores are weakly ordered: fence them before the kernel returns.
    for (llvm::BasicBlock& block : f)
      if (auto* ret = llvm::dyn_cast<llvm::ReturnInst>(block.getTerminator())) {
        llvm::IRBuilder<> b(ret);
        b.CreateIntrinsic(llvm::Intrinsic::x86_sse_sfence, {}, {});
      }
  }
}

}  // namespace kiln::codegen
