// optimizeFunction: clone, then run the default pipeline (minus disabled passes) on the clone.
#include "codegen/optimize.h"

#include <algorithm>

#include "ir/clone.h"
#include "ir/compile_profile.h"
#include "passes/pass_manager.h"

namespace kiln::codegen {

namespace {

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Registered passes first (in registry order), then pipeline names that are not registered yet.
std::vector<std::string> knownPassNames() {
  std::vector<std::string> known;
  for (const passes::PassInfo& p : passes::registeredPasses()) known.emplace_back(p.name);
  for (const std::string& name : passes::defaultPipeline(/*forGpu=*/true))
    if (!contains(known, name)) known.push_back(name);
  return known;
}

}  // namespace

Status checkDisabledPasses(const std::vector<std::string>& names) {
  std::vector<std::string> known = knownPassNames();
  for (const std::string& name : names) {
    if (name == "all" || contains(known, name)) continue;
    std::string list;
    for (const std::string& k : known) list += k + ", ";
    return Error("unknown pass '" + name + "' (passes: " + list + "all)");
  }
  return {};
}

Expected<std::vector<std::string>> enabledPasses(const std::vector<std::string>& disabled, Target target) {
  KILN_TRY(checkDisabledPasses(disabled));
  std::vector<std::string> enabled;
  if (contains(disabled, "all")) return enabled;
  for (const std::string& name : passes::defaultPipeline(target == Target::Cuda))
    if (!contains(disabled, name) && passes::findPass(name)) enabled.push_back(name);
  return enabled;
}

Expected<OptimizedFunction> optimizeFunction(const Function& function, const CompileOptions& options) {
  auto names = enabledPasses(options.disabledPasses, options.target);
  if (!names) return names.error();
  OptimizedFunction result;
  {
    StageTimer timer(options.profile, "clone");
    result.module = cloneFunction(function);
  }
  result.function = result.module->entry();
  passes::PassRunOptions run;
  run.dumpDir = options.dumpDir;
  run.remarks = &result.remarks;
  run.profile = options.profile;
  run.target = options.target == Target::Cuda ? passes::PassTarget::Gpu : passes::PassTarget::Cpu;
  KILN_TRY(passes::runPasses(*result.module, *names, run));
  return result;
}

}  // namespace kiln::codegen
