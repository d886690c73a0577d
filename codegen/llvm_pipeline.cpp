// The O3 pipeline: the analysis-manager boilerplate that every new-pass-manager user repeats.
#include "codegen/llvm_pipeline.h"

#include "codegen/late_inline.h"
#include "codegen/streaming_stores.h"

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/DiagnosticHandler.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/Passes/PassBuilder.h>

namespace kiln::codegen {

namespace {
// After the loop vectoriser, the functions it widened through kiln's vector variants go inline,
// and the stores to outputs too big for the caches stream.
struct AfterVectoriserPass : llvm::PassInfoMixin<AfterVectoriserPass> {
  llvm::PreservedAnalyses run(llvm::Module& module, llvm::ModuleAnalysisManager&) {
    inlineLateFunctions(module);
    streamStores(module);
    return llvm::PreservedAnalyses::none();
  }
};

// Drops the optimisers' reports (remarks, and "loop not vectorized" warnings where a loop kiln
// hinted a vector width for could not be widened: a sum whose row has a branch in it); LLVM's
// default handler printed them on the stderr of every program that compiled such a kernel.
// Everything else still reaches it.
struct QuietOptimizers : llvm::DiagnosticHandler {
  bool handleDiagnostics(const llvm::DiagnosticInfo& info) override {
    return llvm::isa<llvm::DiagnosticInfoOptimizationBase>(info);
  }
};
}  // namespace

void runO3(llvm::Module& module, llvm::TargetMachine& tm, const PipelineSettings& settings) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = settings.loopVectorize;
  tuning.SLPVectorization = settings.slpVectorize;
  llvm::PassBuilder pb(&tm, tuning);
  if (settings.targetCallbacks) tm.registerPassBuilderCallbacks(pb);
  // Registered first, so the default registration below keeps this one.
  if (settings.libraryInfo) fam.registerPass([&] { return llvm::TargetLibraryAnalysis(*settings.libraryInfo); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.registerOptimizerLastEPCallback(
      [](llvm::ModulePassManager& mpm, llvm::OptimizationLevel) { mpm.addPass(AfterVectoriserPass()); });
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  keepLateFunctions(module);
  module.getContext().setDiagnosticHandler(std::make_unique<QuietOptimizers>());
  mpm.run(module, mam);
}

}  // namespace kiln::codegen
