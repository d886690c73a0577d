// --dump-dir: writing each compilation stage to a folder with names that map kernels back to ops.
// `kiln compile` and the runtime's compile path both write through these, so the layout is one:
//   00-input.kiln        the module as parsed (passes will add 01-<pass>.kiln, ... after it)
//   <fn>.unopt.ll        LLVM IR of @fn's kernels as emitted
//   <fn>.opt.ll          after libdevice linking and O3
//   <fn>.ptx | <fn>.s    PTX (cuda) or host assembly (cpu)
//   kernels.txt          each kernel's name, its ops and their source locations, per function
#pragma once

#include <string>

#include "codegen/kernel_plan.h"
#include "ir/ir.h"

namespace kiln::codegen {

// Creates `dir`, writes 00-input.kiln and starts a fresh kernels.txt.
Status dumpInput(const std::string& dir, const Module& module);

// Writes `text` to dir/fileName (creating dir).
Status dumpFile(const std::string& dir, const std::string& fileName, const std::string& text);

// One line per kernel of `plan` (nested regions included):
//   k0_matmul: matmul (mlp.kiln:4:8)
std::string describeKernels(const BlockPlan& plan);

// Appends "@fn:" and describeKernels(plan) to dir/kernels.txt.
Status dumpKernelMap(const std::string& dir, const Function& function, const BlockPlan& plan);

}  // namespace kiln::codegen
