// The pass registry and the loop that runs passes with the verifier between them.
#include "passes/pass_manager.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/canonicalize.h"
#include "passes/channels_last.h"
#include "passes/conv_as_matmul.h"
#include "passes/matvec_as_rows.h"
#include "passes/own_reduction_operands.h"
#include "passes/cse.h"
#include "passes/dce.h"
#include "passes/fold_conv_affine.h"
#include "passes/placement.h"
#include "passes/share_kernels.h"
#include "passes/decompose.h"
#include "passes/fusion.h"
#include "passes/schedule_collectives.h"
#include "passes/split_reductions.h"
#include "passes/vectorize.h"

namespace kiln::passes {

const std::vector<PassInfo>& registeredPasses() {
  // The table of contents of what `--passes=` accepts; one line per pass.
  static const std::vector<PassInfo> passes = {
      {"canonicalize", "fold small all-constant ops and rewrite exact identities (x*1, transpose of transpose, ...)",
       canonicalize},
      {"decompose", "rewrite softmax, log_softmax, layer_norm, batch_norm, gelu and silu into primitive ops",
       decompose},
      {"vectorize", "rewrite each map into batched ops on whole operands (like jax.vmap); others stay loops",
       vectorizeMaps},
      {"cse", "merge identical ops (same kind, operands, attributes, types) visible from one another",
       eliminateCommonSubexpressions},
      {"fold-conv-affine",
       "fold per-channel scales and shifts after a constant-weight conv2d (inference batch norm) into its weights and a bias",
       foldConvAffine},
      {"channels-last",
       "run a CNN's f32 convolutions, and the elementwise ops between them, on NHWC values (CPU pipeline only)",
       convertToChannelsLast},
      {"conv-as-matmul",
       "rewrite 1x1 convolutions over a 1x1 image (squeeze-and-excite, classifier heads) as matmuls (CPU pipeline only)",
       rewriteConvAsMatmul},
      {"matvec-as-rows",
       "rewrite a matrix times a vector as a row reduction of its products, summed in f32 as a BLAS gemv sums (CPU pipeline only)",
       rewriteMatvecAsRows},
      {"dce", "remove ops whose results are unused, inside map/while bodies too", eliminateDeadCode},
      {"split-reductions",
       "split reductions that would leave a GPU idle (full, few long rows, columns) into stages (GPU pipeline only)",
       splitReductions},
      {"split-reductions-cpu",
       "split reductions with fewer than 32 rows or column tiles for the CPU's threads into stages (CPU pipeline only)",
       splitReductionsForCpu},
      {"own-reduction-operands",
       "give a reduction over leading or middle axes its own copy of an elementwise operand that elementwise ops share",
       ownReductionOperands},
      {"fusion", "group ops into fusion ops, one kernel each (loop, row reduction, library epilogue, multi-output)",
       fuseOps},
      {"share-kernels",
       "kernels equal but for one-element constants read those constants as data and compile once",
       shareKernels},
      {"place",
       "give every op of a function placed across devices ({device = N}) a device and a transfer at every crossing",
       place},
      {"schedule-collectives",
       "move each all_reduce, with the ops it needs, to right after them, so reductions overlap the backward pass",
       scheduleCollectives},
  };
  return passes;
}

const PassInfo* findPass(std::string_view name) {
  for (const PassInfo& p : registeredPasses())
    if (p.name == name) return &p;
  return nullptr;
}

const std::vector<std::string>& defaultPipeline(bool forGpu) {
  // Simplify, expose primitives, batch maps, clean up, fold batch norm into convolutions, (on the
  // CPU, run them channels-last and 1x1 ones on a 1x1 image as matmuls, a matrix times a vector as
  // rows,) cut reductions that would leave the device idle into stages,
  // group what is left into kernels, let kernels equal but for a constant
  // share one compile, then start each collective as early as its inputs allow.
  static const std::vector<std::string> host = {"canonicalize",         "decompose",      "vectorize",
                                                "cse",                  "fold-conv-affine", "dce",
                                                "channels-last",        "conv-as-matmul", "matvec-as-rows",
                                                "split-reductions-cpu", "own-reduction-operands", "fusion",
                                                "share-kernels",        "schedule-collectives"};
  static const std::vector<std::string> gpu = {"canonicalize", "decompose", "vectorize", "cse", "fold-conv-affine", "dce",
                                               "split-reductions", "own-reduction-operands", "fusion", "share-kernels", "schedule-collectives"};
  return forGpu ? gpu : host;
}

Status checkPassNames(const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    if (findPass(name)) continue;
    std::string known;
    for (const PassInfo& p : registeredPasses()) known += (known.empty() ? "" : ", ") + std::string(p.name);
    return Error(fmt::format("unknown pass '{}' (passes: {})", name, known));
  }
  return {};
}

namespace {
// Written here rather than through codegen/dump.h: passes sit below codegen and must not link it.
Status writeDump(const std::string& dir, const std::string& fileName, const std::string& text) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error("cannot create dump directory '" + dir + "': " + ec.message());
  std::string path = (std::filesystem::path(dir) / fileName).string();
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) return Error("cannot write '" + path + "'");
  return {};
}
}  // namespace

Status runPasses(Module& module, const std::vector<std::string>& names, const PassRunOptions& options) {
  KILN_TRY(checkPassNames(names));
  KILN_TRY(checkPassNames(options.disabled));
  std::vector<PassInfo> pipeline;
  for (const std::string& name : names) pipeline.push_back(*findPass(name));
  return runPipeline(module, pipeline, options);
}

Status runPipeline(Module& module, const std::vector<PassInfo>& pipeline, const PassRunOptions& options) {
  int index = options.firstDumpIndex;
  for (const PassInfo& pass : pipeline) {
    if (std::find(options.disabled.begin(), options.disabled.end(), pass.name) != options.disabled.end()) continue;
    PassContext context(pass.name, options.target);
    PassResult changed = [&] {
      StageTimer timer(options.profile, "pass " + std::string(pass.name));
      return pass.run(module, context);
    }();
    if (options.remarks)
      for (Remark& r : context.takeRemarks()) options.remarks->push_back(std::move(r));
    if (!changed) return Error(fmt::format("pass {}: {}", pass.name, changed.error().message()), changed.error().loc());
    // A pass that leaves invalid IR is a kiln bug, whatever the input was; say which pass did it.
    Status valid = [&] {
      StageTimer timer(options.profile, "verify");
      return verifyModule(module);
    }();
    if (!valid)
      return Error(fmt::format("internal error: IR after pass '{}' does not verify (a bug in kiln): {}", pass.name,
                               valid.error().message()),
                   valid.error().loc());
    if (options.printAfterAll) *options.printAfterAll << "# IR after " << pass.name << "\n" << printModule(module, kSummaryPrint);
    if (!options.dumpDir.empty())
      KILN_TRY(writeDump(options.dumpDir, fmt::format("{:02}-{}.kiln", index++, pass.name), printModule(module, kSummaryPrint)));
  }
  return {};
}

}  // namespace kiln::passes
