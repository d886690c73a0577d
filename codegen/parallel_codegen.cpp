// Kernel units looked up in the compile cache and the misses compiled on every core (parallel_codegen.h).
#include "codegen/parallel_codegen.h"

#include <llvm/IR/LLVMContext.h>

#include <algorithm>
#include <atomic>
#include <thread>

namespace kiln::codegen {

namespace {

// Compiles the units named by `misses`, taking them one at a time off a shared counter so that a
// slow kernel does not hold back a thread's whole share.
void compileOnThreads(const std::vector<KernelUnit>& units, const std::vector<size_t>& misses,
                      const UnitCompilerFactory& makeCompiler, std::vector<Expected<std::string>>& results) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    Expected<UnitCompiler> compiler = makeCompiler();
    for (size_t i = next.fetch_add(1); i < misses.size(); i = next.fetch_add(1)) {
      size_t u = misses[i];
      if (!compiler) {
        results[u] = compiler.error();
        continue;
      }
      llvm::LLVMContext context;  // one per unit: nothing of one kernel outlives its compile
      auto module = readUnit(units[u], context);
      results[u] = module ? (*compiler)(**module) : Expected<std::string>(module.error());
    }
  };
  size_t threads = std::min<size_t>(misses.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> workers;
  for (size_t t = 1; t < threads; ++t) workers.emplace_back(work);
  work();  // the calling thread takes a share too
  for (std::thread& w : workers) w.join();
}

}  // namespace

Expected<CompiledUnits> compileUnits(const std::vector<KernelUnit>& units, const std::vector<std::string>& keys,
                                     CompileCache* cache, bool refresh, const UnitCompilerFactory& makeCompiler,
                                     CompileProfile* profile) {
  CompiledUnits compiled;
  compiled.artifacts.resize(units.size());
  std::vector<size_t> misses;
  for (size_t u = 0; u < units.size(); ++u) {
    if (cache && !refresh && !keys[u].empty()) {
      if (auto hit = cache->lookup(keys[u])) {
        compiled.artifacts[u] = std::move(*hit);
        ++compiled.fromCache;
        continue;
      }
    }
    misses.push_back(u);
  }
  countInProfile(profile, "distinct kernels", units.size());
  countInProfile(profile, "kernels from the cache", compiled.fromCache);
  std::vector<Expected<std::string>> results(units.size(), Expected<std::string>(std::string()));
  if (!misses.empty()) compileOnThreads(units, misses, makeCompiler, results);
  for (size_t u : misses) {
    if (!results[u]) return results[u].error();
    compiled.artifacts[u] = std::move(*results[u]);
    if (cache && !keys[u].empty()) cache->store(keys[u], compiled.artifacts[u]);
  }
  return compiled;
}

}  // namespace kiln::codegen
