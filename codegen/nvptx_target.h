// The NVPTX target hooks: the GPU kernel ABI, a grid-stride loop over work items (a thread per
// item, or a warp per row), warp shuffles, and math from libdevice. Compiling the module to PTX is nvptx_compiler.h's job.
#pragma once

#include "codegen/target.h"

namespace kiln::codegen {

// Kernel ABI (what the CUDA runtime passes to cuLaunchKernel, in order):
//   ptx_kernel void NAME(ptr noalias align A0 %b0, ..., ptr noalias align 4 %status)
// - one generic pointer per buffer, the group's inputs then its outputs. NVPTXLowerArgs turns them
//   into global-space pointers; FunctionAttrs infers `readonly` on inputs (the kernel never stores
//   to them), which with `noalias` lets loads use the read-only cache (ld.global.nc).
//   `noalias` is a promise the runtime keeps: every buffer of a launch is a distinct allocation,
//   and allocations are 16-byte aligned (cuMemAlloc gives 256), so `align 16` allows vector loads;
//   a `map` body's argument, a slice of its operand, says the slice's alignment (bufferAlignment).
// - %status: the launch's i32 error word (0 = fine, else 1 + an index in the error table).
// - no element count: shapes are static, so the trip count is a constant in the kernel, which lets
//   LLVM strength-reduce index arithmetic. Any grid works (the loop strides by the grid's size);
//   the runtime picks one with launchShape() (codegen/launch_shape.h). Row kernels give each row to
//   a warp (32 lanes), so their blocks must be a whole number of warps.
class NvptxTarget : public TargetHooks {
 public:
  // fastMath: must match the CompileOptions the module is compiled with (it picks sqrt.approx);
  // smVersion: the GPU architecture's number (GpuArch::version), for instructions only some have.
  explicit NvptxTarget(bool fastMath = false, int smVersion = 80) : fastMath_(fastMath), smVersion_(smVersion) {}
  std::string name() const override { return "nvptx"; }
  // libdevice's __nv_* (f32: __nv_expf, f64: __nv_exp, ...), linked in by the compiler; sqrt,
  // floor, ceil and fabs as LLVM intrinsics, which NVPTX lowers to single instructions (f32 sqrt
  // under fast math: sqrt.approx.ftz).
  llvm::Value* emitMath(llvm::IRBuilder<>& b, MathFn fn, llvm::ArrayRef<llvm::Value*> args) override;
  llvm::Function* emitKernel(llvm::Module& module, const std::string& name, const std::vector<uint64_t>& bufferAlignments,
                             int64_t numItems, int lanes,
                             const std::vector<ItemPart>& parts, const WorkItemBodyFn& body) override;
  int elementsPerItem(size_t widestElementBytes) const override {
    return widestElementBytes <= 2 ? 8 : 4;
  }
  // llvm.nvvm.ldg.global for float and int vectors: one call that LLVM's InstCombine does not
  // split back into scalar loads (a plain vector load whose elements are only extracted, it does).
  llvm::Value* loadVector(llvm::IRBuilder<>& b, llvm::Type* type, llvm::Value* ptr, unsigned width,
                          uint64_t align) override;
  // cvt.rn.bf16.f32 on sm_80 and later (one instruction for the integer code's nine).
  llvm::Value* roundToBFloat16(llvm::IRBuilder<>& b, llvm::Value* v) override;
  bool hasNaNPropagatingMinMax() const override { return smVersion_ >= 80; }
  // cvt.f32.bf16 on sm_90 and later (one instruction for a zero-extension, a shift and a move).
  llvm::Value* widenBFloat16(llvm::IRBuilder<>& b, llvm::Value* bits) override;
  // A warp per row (each lane takes every 32nd element, warp shuffles combine them) while the
  // rows' warps can fill the device; a block per row (kThreadsPerBlock lanes, shuffles, then the
  // warps' values through shared memory) when there are fewer rows than the warps an H100 holds
  // at once and each row has at least kBlockRowMinLength elements.
  int rowLanes(const KernelGroup& group) const override;
  // shfl.sync.bfly.b32 over the full warp; 64-bit values go as two halves.
  llvm::Value* shuffleXor(llvm::IRBuilder<>& b, llvm::Value* v, int laneMask) override;
  bool sharedMemoryTiles() const override { return true; }
  // An internal addrspace(3) global (PTX .shared) named after the kernel, so it goes wherever the
  // kernel goes (kernel_dedup.h, kernel_units.h); bar.sync 0.
  llvm::GlobalVariable* sharedArray(llvm::IRBuilder<>& b, llvm::Type* type, uint64_t count,
                                    const std::string& what) override;
  void syncBlock(llvm::IRBuilder<>& b) override;

  // The threads per block every generated kernel is launched with (the runtime's launch shape),
  // and so a block-per-row kernel's lanes.
  static constexpr int kThreadsPerBlock = 256;
  // A row this long or longer gets a block when the rows are few (rowLanes).
  static constexpr int64_t kBlockRowMinLength = 1024;
  // Warps an H100 holds resident at once (132 SMs x 64): fewer rows than this leave it idle.
  static constexpr int64_t kResidentWarps = 132 * 64;

 private:
  bool fastMath_;
  int smVersion_;
};

}  // namespace kiln::codegen
