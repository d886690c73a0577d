// Host code for a module on several threads: the module is split into parts (each kernel with the
// internal functions and tables it uses stays whole), each part goes to its own LLVM context and
// thread for O3 and code generation, and the result is one relocatable object per part. A cache
// entry holds the objects of one function together (packObjects).
#pragma once

#include <llvm/IR/Module.h>

#include <string>
#include <vector>

#include "codegen/compile_options.h"
#include "ir/status.h"

namespace kiln::codegen {

// O3 and object code for `module` (triple and data layout set) on up to `threads` threads; one
// object per part, a single one when there is one thread or one kernel. `module` is consumed.
Expected<std::vector<std::string>> compileCpuObjects(llvm::Module& module, const CompileOptions& options,
                                                     unsigned threads);

// Several objects as one cache entry; a single object is stored as it is.
std::string packObjects(const std::vector<std::string>& objects);
// The objects of an entry made by packObjects; empty when the entry is damaged.
std::vector<std::string> unpackObjects(const std::string& entry);

}  // namespace kiln::codegen
