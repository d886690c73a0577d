// Differential tests of the compile pipeline: every example compiled for the CPU (and for CUDA
// where a GPU is present) with the default passes and with every pass disabled must match the
// reference interpreter on random inputs.
// A pass that changes what a graph computes (beyond rounding) fails here with the example's name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "kiln_internal.h"
#include "example_files.h"
#include "tensor_compare.h"
#include "runtime/random_inputs.h"

namespace kiln {
namespace {

// With and without passes, on the CPU and, where a GPU is present, on CUDA.
std::vector<std::pair<bool, codegen::Target>> configurations() {
  std::vector<std::pair<bool, codegen::Target>> all = {{true, codegen::Target::Cpu}, {false, codegen::Target::Cpu}};
  static const bool gpu = resolveBackend(Backend::Cuda).ok();
  if (gpu) all.insert(all.end(), {{true, codegen::Target::Cuda}, {false, codegen::Target::Cuda}});
  return all;
}

class PipelineDifferential : public ::testing::TestWithParam<std::string> {};

TEST_P(PipelineDifferential, DefaultPassesAndNoPassesMatchTheInterpreter) {
  auto module = parseFile(GetParam());
  ASSERT_TRUE(module.ok()) << module.error().str();
  const Function& f = *(*module)->entry();
  std::string before = printFunction(f);
  for (uint64_t seed : {0, 7}) {
    std::vector<Tensor> inputs = randomInputs(f, seed);
    auto want = interpret(f, inputs);
    ASSERT_TRUE(want.ok()) << want.error().str();
    for (auto [passes, target] : configurations()) {
      SCOPED_TRACE(std::string(passes ? "default pipeline" : "--disable-passes=all") + ", seed " +
                   std::to_string(seed) + (target == codegen::Target::Cuda ? ", cuda" : ", cpu"));
      codegen::CompileOptions options;
      options.target = target;
      if (!passes) options.disabledPasses = {"all"};
      auto exe = Executable::compile(f, options);
      ASSERT_TRUE(exe.ok()) << exe.error().str();
      auto got = (*exe)->run(inputs);
      ASSERT_TRUE(got.ok()) << got.error().str();
      ASSERT_EQ(got->size(), want->size());
      for (size_t i = 0; i < want->size(); ++i)
        EXPECT_EQ(compare((*want)[i], (*got)[i]), "") << "result " << i;
    }
  }
  // The passes ran on a copy: the caller's function is as it was parsed.
  EXPECT_EQ(printFunction(f), before);
}

INSTANTIATE_TEST_SUITE_P(Examples, PipelineDifferential, ::testing::ValuesIn(exampleFiles()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return std::filesystem::path(info.param).stem().string();
                         });

TEST(Pipeline, UnknownDisabledPassIsAnErrorNamingThePasses) {
  auto module = parseModule("func @main(%x: f32[4]) -> f32[4] {\n  %y = exp %x\n  return %y\n}\n");
  ASSERT_TRUE(module.ok());
  codegen::CompileOptions options;
  options.disabledPasses = {"cse", "nope"};
  auto exe = Executable::compile(*(*module)->entry(), options);
  ASSERT_FALSE(exe.ok());
  EXPECT_NE(exe.error().message().find("unknown pass 'nope' (passes: canonicalize"), std::string::npos)
      << exe.error().message();
}

TEST(Pipeline, TheExecutableOutlivesTheCallersModule) {
  // The Executable compiles and owns a copy, so the parsed module may go away first.
  auto module = parseModule("func @main(%x: f32[4]) -> f32[4] {\n  %y = exp %x\n  %z = exp %x\n  %w = add %y, %z\n  return %w\n}\n");
  ASSERT_TRUE(module.ok());
  std::vector<Tensor> inputs = randomInputs(*(*module)->entry(), 1);
  auto want = interpret(*(*module)->entry(), inputs);
  ASSERT_TRUE(want.ok());
  auto exe = Executable::compile(*(*module)->entry(), {});
  ASSERT_TRUE(exe.ok()) << exe.error().str();
  module->reset();
  auto got = (*exe)->run(inputs);
  ASSERT_TRUE(got.ok()) << got.error().str();
  EXPECT_EQ(compare((*want)[0], (*got)[0]), "");
}

}  // namespace
}  // namespace kiln
