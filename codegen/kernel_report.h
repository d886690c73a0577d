// What each kernel of a plan does and how many bytes it moves: the figures `kiln explain` prints
// and `kiln_fusion_bench` tabulates, to see what fusion saved.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/compile_options.h"
#include "codegen/kernel_plan.h"
#include "ir/ir.h"
#include "passes/pass.h"

namespace kiln::codegen {

struct KernelOpInfo {
  std::string name;  // "add"
  SourceLoc loc;     // where the op is written
};

struct KernelReport {
  std::string name;    // "k3_row_reduce_max"
  std::string layout;  // "loop [32,128]", "loop [32,128] + [128]", "row [16] x [100]"; for cuda, a
                       // library kernel's layout says what runs it (see libraryCall)
  // For the cuda target, a kernel with a matmul or conv2d: describeLibraryCall's text,
  // "cuBLASLt matmul (epilogue bias+relu)" or "generated kernel: <reason>". Empty otherwise.
  std::string libraryCall;
  std::string region;  // "" at top level, else "map body at f.kiln:3:8" (per iteration)
  std::vector<KernelOpInfo> ops;
  // One launch: the byte sizes of its inputs (each counted once, however often it is read) and of
  // its outputs. A kernel inside a map or while body moves this much per iteration.
  uint64_t bytesRead = 0, bytesWritten = 0;
  // Floating-point operations of the ops that dominate compute, per launch: matmul and conv2d, 2
  // per multiply-add. Elementwise work is memory-bound and counted in bytes instead.
  double flops = 0;
};

// Every kernel of `plan` in the order the plan runs them, kernels of nested map/while plans at the
// place of their region op. For Target::Cuda, library kernels say which library call runs them.
std::vector<KernelReport> reportKernels(const BlockPlan& plan, Target target = Target::Cpu);

// A function through the pass pipeline and the planner, summarised.
struct PlanReport {
  std::vector<KernelReport> kernels;
  std::vector<passes::Remark> remarks;   // of every pass that ran
  uint64_t bytesRead = 0, bytesWritten = 0;  // summed over kernels (one launch each)
  // Constant data (weights): buffers the runtime makes once per executable, and their bytes.
  uint64_t constants = 0, constantBytes = 0;
};

// Runs optimizeFunction(function, options), plans the copy and reports its kernels. Planning only:
// nothing is emitted or compiled, so this needs no GPU and is cheap.
Expected<PlanReport> reportPlan(const Function& function, const CompileOptions& options);

// `options` with the fusion pass disabled too, for before/after figures. Unchanged if no pass
// called "fusion" is known yet.
CompileOptions withoutFusion(CompileOptions options);

// "mlp.kiln:6:9", "model.onnx: node 3 'relu_1' (Relu)", or "unknown location".
std::string locationText(const SourceLoc& loc);

}  // namespace kiln::codegen
