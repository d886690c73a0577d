// The pass manager: passes by name, run in order with the verifier after each, optionally dumped.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "ir/compile_profile.h"
#include "passes/pass.h"

namespace kiln::passes {

struct PassRunOptions {
  // When set, the module after each pass is written to dumpDir/NN-<pass>.kiln. NN starts at
  // firstDumpIndex (01 follows the 00-input.kiln that codegen/dump.h's dumpInput writes).
  std::string dumpDir;
  int firstDumpIndex = 1;
  // When set, "# IR after <pass>" and the module are printed here after each pass.
  std::ostream* printAfterAll = nullptr;
  // When set, the passes' remarks (why a map stayed a loop, why ops were not fused) land here.
  std::vector<Remark>* remarks = nullptr;
  // Passes of the pipeline to skip, by name (for debugging: `--disable-passes=fusion`).
  std::vector<std::string> disabled;
  // When set, each pass's wall time and peak memory land here as "pass <name>".
  CompileProfile* profile = nullptr;
  // The device compiled for, handed to every pass (PassContext::target).
  PassTarget target = PassTarget::Any;
};

// Every registered pass, in the order `kiln opt --list-passes` shows them.
const std::vector<PassInfo>& registeredPasses();
// The pass called `name`, or null.
const PassInfo* findPass(std::string_view name);
// "unknown pass 'x' (passes: cse, dce)" for the first unknown name, or ok.
Status checkPassNames(const std::vector<std::string>& names);

// The passes `kiln compile`, `kiln run` and Executable::compile run before codegen, in order. The
// GPU's pipeline adds split-reductions before fusion.
const std::vector<std::string>& defaultPipeline(bool forGpu = false);

// Runs the named passes in order on `module`. Unknown names are reported before anything runs.
// A pass's own error comes back prefixed with its name; a module the verifier rejects after a pass
// is a bug in that pass and comes back as an internal error naming it.
Status runPasses(Module& module, const std::vector<std::string>& names, const PassRunOptions& options = {});
// The same for passes given directly (a compile pipeline's fixed list, or a test's own pass).
Status runPipeline(Module& module, const std::vector<PassInfo>& pipeline, const PassRunOptions& options = {});

}  // namespace kiln::passes
