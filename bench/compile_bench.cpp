// Compile-time benchmark: a generated 100-op graph from text to PTX and to a loaded CPU
// executable through the whole compile (passes, fusion, identical kernels once), timed per stage
// (ir/compile_profile.h; median of several runs, one thread, no compile cache). Usage:
//   kiln_compile_bench [--ops N] [--runs R] [--gpu-arch sm_XX]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "codegen/compile_stages.h"
#include "frontend/parser.h"
#include "ir/compile_profile.h"
#include "runtime/executable.h"

namespace {

using Clock = std::chrono::steady_clock;

// A residual MLP-like stack: blocks of 10 ops (matmul, bias, gelu, a softmax written out as
// exp / reduce_sum / div, a scale, a residual add, ...) until `ops` ops are reached.
std::string makeGraph(int ops) {
  std::string body;
  int n = 0, v = 0;
  std::string cur = "%x";
  auto emit = [&](const std::string& rhs) {
    std::string name = fmt::format("%v{}", v++);
    body += fmt::format("  {} = {}\n", name, rhs);
    ++n;
    return name;
  };
  while (n < ops) {
    std::string h = emit(fmt::format("matmul {}, %w", cur));
    if (n < ops) h = emit(fmt::format("add {}, %b", h));
    if (n < ops) h = emit(fmt::format("gelu {}", h));
    if (n < ops) h = emit(fmt::format("exp {}", h));
    std::string s = n < ops ? emit(fmt::format("reduce_sum {} {{axes = [1], keepdims = true}}", h)) : h;
    if (n < ops) h = emit(fmt::format("div {}, {}", h, s));
    if (n < ops) h = emit(fmt::format("mul {}, %scale", h));
    if (n < ops) h = emit(fmt::format("tanh {}", h));
    if (n < ops) h = emit(fmt::format("sub {}, %b", h));
    if (n < ops) h = emit(fmt::format("add {}, {}", h, cur));
    cur = h;
  }
  return fmt::format(
      "func @main(%x: f32[64,256], %w: f32[256,256], %b: f32[256], %scale: f32[]) -> f32[64,256] {{\n{}  return {}\n}}\n",
      body, cur);
}

struct Phases {
  std::vector<std::string> order;
  std::map<std::string, std::vector<double>> ms;
  void add(const std::string& phase, Clock::time_point start) {
    if (!ms.count(phase)) order.push_back(phase);
    ms[phase].push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }
};

[[noreturn]] void fail(const kiln::Error& e) {
  fmt::print(stderr, "{}\n", e.str());
  std::exit(1);
}

template <class T>
T check(kiln::Expected<T> e) {
  if (!e) fail(e.error());
  return std::move(*e);
}

}  // namespace

int main(int argc, char** argv) {
  int ops = 100, runs = 5;
  kiln::codegen::CompileOptions cuda;
  cuda.target = kiln::codegen::Target::Cuda;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--ops")) ops = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--runs")) runs = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--gpu-arch")) cuda.gpuArch = argv[i + 1];
    else return fmt::print(stderr, "usage: kiln_compile_bench [--ops N] [--runs R] [--gpu-arch sm_XX]\n"), 2;
  }
  std::string text = makeGraph(ops);
  // Each run goes the way a user's compile goes (the pass pipeline, fusion, identical kernels
  // compiled once), without the compile cache; the stages are CompileProfile's.
  Phases ptx, cpu;
  size_t ptxBytes = 0, kernels = 0, distinct = 0;
  auto record = [](Phases& phases, const kiln::CompileProfile& profile) {
    for (const kiln::StageRecord& stage : profile.stages()) {
      if (!phases.ms.count(stage.name)) phases.order.push_back(stage.name);
      phases.ms[stage.name].push_back(stage.milliseconds);
    }
  };
  for (int r = 0; r < runs; ++r) {
    auto t = Clock::now();
    auto module = check(kiln::parseModule(text, "bench.kiln"));
    ptx.add("parse + verify", t);
    cpu.add("parse + verify", t);

    kiln::CompileProfile toPtx;
    cuda.profile = &toPtx;
    auto stages = check(kiln::codegen::compileStages(*module->entry(), cuda, nullptr));
    record(ptx, toPtx);
    ptxBytes = stages.code.size();
    kernels = stages.kernels.size();
    distinct = kernels - stages.symbols.size();

    kiln::CompileProfile toCpu;
    kiln::codegen::CompileOptions host;
    host.profile = &toCpu;
    check(kiln::Executable::compile(*module->entry(), host, nullptr));
    record(cpu, toCpu);
  }
  auto report = [&](const char* title, const Phases& p, const std::vector<std::string>& shared) {
    fmt::print("{}\n", title);
    double total = 0;
    for (const std::string& phase : shared) {
      double m = Phases::median(ptx.ms.at(phase));
      total += m;
      fmt::print("  {:<28} {:8.2f} ms\n", phase, m);
    }
    for (const std::string& phase : p.order) {
      if (std::find(shared.begin(), shared.end(), phase) != shared.end()) continue;
      double m = Phases::median(p.ms.at(phase));
      total += m;
      fmt::print("  {:<28} {:8.2f} ms\n", phase, m);
    }
    fmt::print("  {:<28} {:8.2f} ms\n", "total", total);
  };
  fmt::print("compile time for a {}-op graph ({} kernels, {} distinct), median of {} runs, one thread\n\n", ops,
             kernels, distinct, runs);
  report(fmt::format("to PTX ({}, {} KB of PTX):", cuda.gpuArch, ptxBytes / 1024).c_str(), ptx, {});
  report("to a loaded CPU executable:", cpu, {});
  return 0;
}
