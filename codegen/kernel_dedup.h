// Identical kernels compiled once: a network's repeated blocks (a ResNet's bottlenecks, a
// transformer's layers) plan to kernels whose LLVM IR differs only in their names. Before
// optimisation, every kernel whose body matches an earlier one's is removed from the module and
// maps to that one's symbol, so O3 and code generation see each distinct kernel once.
#pragma once

#include <llvm/IR/Module.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/kernel_plan.h"

namespace kiln::codegen {

// Kernel name -> the symbol whose code runs it (for a kernel kept: absent).
using KernelSymbols = std::unordered_map<std::string, std::string>;

// Removes from `module` each kernel of `groups` (emitted under its group's name) whose IR, names
// aside, equals an earlier kernel's. Kernels that refer to globals of their own (literal tables)
// or raise errors at different source locations differ in their IR, so they are never merged.
KernelSymbols deduplicateKernels(llvm::Module& module, const std::vector<const KernelGroup*>& groups);

// The symbol to look up for `kernel`.
inline const std::string& symbolOf(const KernelSymbols& symbols, const std::string& kernel) {
  auto it = symbols.find(kernel);
  return it == symbols.end() ? kernel : it->second;
}

}  // namespace kiln::codegen
