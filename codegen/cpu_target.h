// The host CPU target: kernel ABI and math for x86-64 (or whatever the host is), the host
// TargetMachine, the O3 pipeline, and host assembly for `kiln compile --target cpu --emit asm`.
#pragma once

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <string>

#include "codegen/compile_options.h"
#include "codegen/target.h"
#include "ir/status.h"

namespace kiln::codegen {

// The signature of every CPU kernel: `buffers` holds the group's buffer pointers (inputs, then
// outputs); the kernel computes output elements [begin, end) so a thread pool can split the
// range, and stores 1 + an error-table index into *status when an element raises a run-time error.
using CpuKernelFn = void (*)(void* const* buffers, int32_t* status, int64_t begin, int64_t end);

class CpuTarget : public TargetHooks {
 public:
  // fastMath: the emitted float instructions carry LLVM's `fast` flags (reassociation, no NaNs...).
  explicit CpuTarget(bool fastMath = false) : fastMath_(fastMath) {}
  std::string name() const override { return "cpu"; }
  // LLVM intrinsics where x86-64 lowers them (to instructions or libm calls), libm otherwise.
  llvm::Value* emitMath(llvm::IRBuilder<>& b, MathFn fn, llvm::ArrayRef<llvm::Value*> args) override;
  // Defines `void name(ptr buffers, ptr status, i64 begin, i64 end)` looping over work items
  // [begin, end). `numItems` is not baked in: the runtime passes each thread its own range.
  // One lane per item: a thread of the pool runs a row kernel's row on its own.
  llvm::Function* emitKernel(llvm::Module& module, const std::string& name, const std::vector<uint64_t>& bufferAlignments,
                             int64_t numItems, int lanes,
                             const std::vector<ItemPart>& parts, const WorkItemBodyFn& body) override;
  int elementsPerItem(size_t /*widestElementBytes*/) const override { return 1; }
  int rowLanes(const KernelGroup&) const override { return 1; }
  int64_t rowsPerItem(const KernelGroup& group) const override;
  bool reassociatesSums() const override { return true; }
  bool sumsInF32WhereAllowed() const override { return true; }
  int floatSumLanes() const override;
  // Interleaved only where the body computed an inline exp, tanh or erf (each ~25 dependent
  // instructions): codegen/loop_hints.h.
  int loopInterleave(int64_t trips, int64_t mathBefore) const override;
  int64_t inlineMathEmitted() const override { return inlineMath_; }
  bool tilesColumnReductions() const override { return true; }
  bool transposesInRegisters() const override { return true; }
  bool loopsPoolWindows() const override { return true; }
  bool prefetchesNextRow() const override { return true; }
  bool streamsOutput(int64_t outputBytes, int64_t readBytes, int64_t writtenBytes) const override;
  // No shared memory or block on the CPU: never called (internal errors).
  llvm::GlobalVariable* sharedArray(llvm::IRBuilder<>& b, llvm::Type* type, uint64_t count,
                                    const std::string& what) override;
  void syncBlock(llvm::IRBuilder<>& b) override;
  llvm::Value* shuffleXor(llvm::IRBuilder<>& b, llvm::Value* v, int laneMask) override;

 private:
  bool fastMath_;
  int64_t inlineMath_ = 0;  // the inline exp, tanh and erf emitted so far
};

// Initialises LLVM's native target once per process (safe to call from any thread, any time).
void initializeHostTarget();

// A TargetMachine for this machine: process triple, host CPU name and features, O3 codegen;
// `options.fastMath` turns on unsafe FP math, otherwise results are IEEE.
Expected<std::unique_ptr<llvm::TargetMachine>> createHostTargetMachine(const CompileOptions& options);

// Sets the module's triple and data layout from `tm` (before emitting into it).
void configureModule(llvm::Module& module, const llvm::TargetMachine& tm);

// Verifies the module and runs the new pass manager's O3 pipeline with the TM's analyses.
Status optimizeModule(llvm::Module& module, llvm::TargetMachine& tm);

// The module's LLVM IR as text.
std::string printModule(const llvm::Module& module);

// Host assembly of an (optimised) module, for `kiln compile --target cpu --emit asm`. Uses a
// fresh host TargetMachine with default (IEEE) options; codegen does not change the module.
Expected<std::string> emitCpuAssembly(llvm::Module& module);
// The same with a given TargetMachine (the one the module was optimised for).
Expected<std::string> emitCpuAssembly(llvm::Module& module, llvm::TargetMachine& tm);

// A relocatable object file (ELF on Linux) of an optimised module, for the JIT and the compile
// cache. Codegen's IR passes rewrite `module`: emit last, or from a copy.
Expected<std::string> emitCpuObject(llvm::Module& module, llvm::TargetMachine& tm);

}  // namespace kiln::codegen
