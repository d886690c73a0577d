#include "codegen/kernel_dedup.h"

#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/ModuleSlotTracker.h>
#include <llvm/Support/raw_ostream.h>

namespace kiln::codegen {

namespace {

// A kernel's code is its entry function plus the internal functions and globals the emitter
// named after it ("k3_add.loop", "k3_add.literal"): its name up to the first '.'.
std::string ownerOf(llvm::StringRef name) { return name.split('.').first.str(); }

// Everything a kernel owns, printed, with the kernel's name replaced: equal text, equal code.
// `slots` is shared by every kernel: a print without one numbers the whole module again, which
// made finding copies quadratic in the number of kernels.
std::string kernelText(const std::string& kernel, const std::vector<llvm::GlobalValue*>& owned,
                       llvm::ModuleSlotTracker& slots) {
  std::string text;
  llvm::raw_string_ostream os(text);
  for (llvm::GlobalValue* value : owned) value->print(os, slots);
  os.flush();
  std::string normalized;
  normalized.reserve(text.size());
  for (size_t at = 0;;) {
    size_t next = text.find(kernel, at);
    normalized.append(text, at, next == std::string::npos ? std::string::npos : next - at);
    if (next == std::string::npos) break;
    normalized += "kernel";
    at = next + kernel.size();
  }
  return normalized;
}

}  // namespace

KernelSymbols deduplicateKernels(llvm::Module& module, const std::vector<const KernelGroup*>& groups) {
  std::unordered_map<std::string, std::vector<llvm::GlobalValue*>> owned;
  for (llvm::Function& fn : module) owned[ownerOf(fn.getName())].push_back(&fn);
  for (llvm::GlobalVariable& global : module.globals()) owned[ownerOf(global.getName())].push_back(&global);

  KernelSymbols symbols;
  std::unordered_map<std::string, std::string> firstWithText;  // kernel text -> kernel name
  llvm::ModuleSlotTracker slots(&module);
  for (const KernelGroup* group : groups) {
    llvm::Function* entry = module.getFunction(group->name);
    auto mine = owned.find(group->name);
    if (!entry || entry->isDeclaration() || mine == owned.end()) continue;
    auto [it, inserted] = firstWithText.emplace(kernelText(group->name, mine->second, slots), group->name);
    if (inserted) continue;
    // A copy: its entry's uses (NVPTX's kernel annotations) move to the kept kernel, and
    // everything it owned goes (the entry first: it calls the rest).
    entry->replaceAllUsesWith(module.getFunction(it->second));
    for (llvm::GlobalValue* value : mine->second) value->dropAllReferences();
    for (llvm::GlobalValue* value : mine->second) value->eraseFromParent();
    symbols[group->name] = it->second;
  }
  return symbols;
}

}  // namespace kiln::codegen
