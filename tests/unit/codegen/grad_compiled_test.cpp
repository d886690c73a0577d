// Compiled gradients: the gradient function of every case in tests/unit/passes/grad_cases.kiln,
// compiled through the whole pipeline (CSE and fusion reach across forward and backward ops),
// must agree with the reference interpreter running it, in f64 and in f32.
#include <gtest/gtest.h>

#include "../passes/grad_cases.h"
#include "cpu_test_util.h"
#include "passes/grad.h"

namespace kiln::test {
namespace {

class CompiledGrad : public testing::TestWithParam<GradCase> {};

void checkCompiled(const GradCase& c, const std::string& text) {
  auto module = parseModule(text, "grad_cases.kiln");
  ASSERT_TRUE(module.ok()) << module.error().str();
  Module out;
  auto g = passes::differentiate(out, *(*module)->lookup(c.function), c.wrt);
  ASSERT_TRUE(g.ok()) << g.error().str();
  DiffOptions options;
  options.tol = accumulateTolerance();
  options.intBound = 3;  // labels and indices of the case file lie in [0, 3)
  expectSameAsInterpreter(**g, options);
}

TEST_P(CompiledGrad, F64) { checkCompiled(GetParam(), gradCaseText()); }

TEST_P(CompiledGrad, F32) {
  std::string text = gradCaseText();
  for (size_t at = text.find("f64"); at != std::string::npos; at = text.find("f64", at)) text.replace(at, 3, "f32");
  checkCompiled(GetParam(), text);
}

INSTANTIATE_TEST_SUITE_P(Ops, CompiledGrad, testing::ValuesIn(gradCases()),
                         [](const testing::TestParamInfo<GradCase>& i) { return gradCaseName(i.param); });

}  // namespace
}  // namespace kiln::test
