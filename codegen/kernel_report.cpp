// reportKernels and reportPlan: per-kernel layout, ops and bytes moved, from a BlockPlan.
#include "codegen/kernel_report.h"

#include <algorithm>

#include "codegen/column_reduction.h"
#include "codegen/conv_rows.h"
#include "codegen/cpu_target.h"
#include "codegen/kernel_emitter.h"
#include "codegen/library_call.h"
#include "codegen/nvptx_target.h"
#include "codegen/optimize.h"
#include "codegen/scatter_rows.h"
#include "codegen/matmul_tile.h"
#include "codegen/transpose_tile.h"
#include "ir/op_cost.h"

namespace kiln::codegen {

namespace {

std::string layoutText(const KernelGroup& group) {
  if (group.kind == KernelKind::Row) return "row " + shapeStr(group.rows) + " x " + shapeStr(group.inner);
  std::string text = "loop";
  for (size_t i = 0; i < group.segments.size(); ++i) text += (i ? " + " : " ") + shapeStr(group.segments[i].shape);
  // A single op's group may carry no segments; its outputs' shapes say the same.
  if (group.segments.empty())
    for (size_t i = 0; i < group.outputs.size(); ++i) text += (i ? " + " : " ") + shapeStr(group.outputs[i]->type().shape);
  return text;
}

// How the GPU spreads the kernel's work over its threads, where that is not one thread per
// element or four (codegen/nvptx_target.h, transpose_tile.h).
std::string gpuStrategy(const KernelGroup& group) {
  NvptxTarget target;
  if (group.kind == KernelKind::Row) return target.rowLanes(group) > kWarpSize ? "a block per row" : "a warp per row";
  if (target.sharedMemoryTiles() && transposeTile(group)) return "32x32 tiles through shared memory";
  if (target.sharedMemoryTiles() && matmulTile(group)) return "32x32 output tiles, A and B through shared memory";
  return "";
}

// How the CPU walks the kernel, where that is not element by element, row by row
// (column_reduction.h, matmul_tile.h, row_block.h).
std::string cpuStrategy(const KernelGroup& group) {
  if (group.kind == KernelKind::Row) {
    int64_t rows = CpuTarget().rowsPerItem(group);
    return rows > 1 ? std::to_string(rows) + " rows side by side, one per vector lane" : "";
  }
  if (group.kind != KernelKind::Loop) return "";
  if (auto tile = cpuMatmulRows(group))
    return "matmul blocks of " + std::to_string(cpuMatmulItemRows(*tile)) + "x" + std::to_string(kCpuMatmulColumns) + " outputs, B packed " +
           std::to_string(kCpuMatmulPackedK) + " rows at a time";
  if (auto conv = cpuConvRows(group, CpuTarget().floatSumLanes()))
    return "conv blocks of " + std::to_string(conv->rows) + " channels x " + std::to_string(conv->columns()) + " columns";
  if (auto scatter = cpuScatterRows(group))
    return "scatter blocks of " + std::to_string(scatter->rows) + " rows x " + std::to_string(scatter->columns) +
           " columns, the indices walked once per block";
  if (registerTransposeTile(group))
    return std::to_string(kTile) + "x" + std::to_string(kTile) + " tiles, " + std::to_string(kRegisterBlock) + "x" +
           std::to_string(kRegisterBlock) + " blocks transposed in registers";
  std::string segments, walks;  // column tiles; pool windows and moved axes
  for (const Segment& s : group.segments) {
    if (auto tiles = columnTiles(group, s))
      segments += (segments.empty() ? "" : " and ") + shapeStr(s.shape) + " in tiles of " + std::to_string(tiles->tile) + " columns";
    else if (int64_t k = poolWindowColumns(group, s); k > 1)
      walks += (walks.empty() ? "" : " and ") + shapeStr(s.shape) + " in windows of " + std::to_string(k) + " columns";
    else if (auto moved = movedShortAxisOf(group, s))
      walks += (walks.empty() ? "" : " and ") + shapeStr(s.shape) + " in the input's order, " +
                 std::to_string(moved->extent) + " rows at a time";
  }
  if (!segments.empty()) segments = "column reductions " + segments;
  return segments + (segments.empty() || walks.empty() ? "" : ", ") + walks;
}

double flopsOf(const KernelGroup& group) {
  double flops = 0;
  for (const Op* op : group.ops) flops += denseFlops(*op);
  return flops;
}

KernelReport reportKernel(const KernelGroup& group, const std::string& region, Target target) {
  KernelReport r;
  r.name = group.name;
  r.layout = layoutText(group);
  if (std::string strategy = target == Target::Cuda ? gpuStrategy(group) : cpuStrategy(group); !strategy.empty())
    r.layout += ", " + strategy;
  // A library kernel runs as a cuBLASLt/cuDNN call on the GPU, a oneDNN call on the CPU, when it
  // can; its generated kernel stays the fallback (for no algorithm at run time), so both are named.
  if (hasLibraryOp(group)) {
    LibraryCall call = selectLibraryCall(group, target);
    r.libraryCall = describeLibraryCall(call, target);
    r.layout = std::holds_alternative<GeneratedKernel>(call) ? r.layout + "; " + r.libraryCall
                                                             : r.libraryCall + "; fallback " + r.layout;
  }
  r.region = region;
  for (const Op* op : group.ops) r.ops.push_back({std::string(op->name()), op->loc()});
  r.bytesRead = group.bytesRead();
  r.bytesWritten = group.bytesWritten();
  r.flops = flopsOf(group);
  return r;
}

void reportBlock(const BlockPlan& plan, const std::string& region, Target target, std::vector<KernelReport>& out) {
  for (const Step& step : plan.steps) {
    if (step.kind == Step::Kind::Kernel) {
      out.push_back(reportKernel(plan.groups[static_cast<size_t>(step.group)], region, target));
      continue;
    }
    const Op& op = *step.region.op;
    // map: {body}; while: {cond, body}.
    static const char* const whileParts[] = {"cond", "body"};
    for (size_t i = 0; i < step.region.regions.size(); ++i) {
      std::string part = op.kind() == OpKind::While && i < 2 ? whileParts[i] : "body";
      std::string inner = std::string(op.name()) + " " + part + " at " + locationText(op.loc());
      reportBlock(*step.region.regions[i], region.empty() ? inner : inner + ", in " + region, target, out);
    }
  }
}

}  // namespace

std::string locationText(const SourceLoc& loc) {
  return loc.known() ? loc.str() : "unknown location";
}

std::vector<KernelReport> reportKernels(const BlockPlan& plan, Target target) {
  std::vector<KernelReport> out;
  reportBlock(plan, "", target, out);
  return out;
}

Expected<PlanReport> reportPlan(const Function& function, const CompileOptions& options) {
  auto optimized = optimizeFunction(function, options);
  if (!optimized) return optimized.error();
  PlanReport report;
  auto plan = planFunction(*optimized->function);
  report.kernels = reportKernels(*plan, options.target);
  for (const Value* v : plan->allConstants()) {
    ++report.constants;
    report.constantBytes += v->type().byteSize();
  }
  report.remarks = std::move(optimized->remarks);
  for (const KernelReport& k : report.kernels) {
    report.bytesRead += k.bytesRead;
    report.bytesWritten += k.bytesWritten;
  }
  return report;
}

CompileOptions withoutFusion(CompileOptions options) {
  if (checkDisabledPasses({"fusion"})) options.disabledPasses.push_back("fusion");
  return options;
}

}  // namespace kiln::codegen
