// Gradient checks: every function of grad_cases.kiln (one per differentiable op, plus composed
// graphs) is differentiated with `grad`, and each gradient element is compared with a central
// finite difference of the original function, both computed by the reference interpreter in f64.
// Also the transformation's contract: result layout, pass-through metrics, and its errors.
#include "passes/grad.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "frontend/parser.h"
#include "grad_cases.h"
#include "ir/interp/interpreter.h"
#include "ir/printer.h"

namespace kiln::passes {
namespace {

using test::GradCase;

Tensor randomInput(const TensorType& type, std::mt19937& rng, const GradCase& c) {
  Tensor t(type);
  std::uniform_real_distribution<double> real(c.lo, c.hi);
  std::uniform_int_distribution<int> small(0, 2);  // fits every label and index of the case file
  for (int64_t i = 0; i < t.numElements(); ++i) t.setDouble(i, isFloat(type.dtype) ? real(rng) : small(rng));
  return t;
}

double loss(const Function& f, const std::vector<Tensor>& inputs) {
  auto out = interpret(f, inputs);
  EXPECT_TRUE(out.ok()) << out.error().str();
  return out.ok() ? (*out)[0].getDouble(0) : NAN;
}

int paramIndex(const Function& f, const std::string& name) {
  for (size_t i = 0; i < f.params().size(); ++i)
    if (f.params()[i]->name() == name) return static_cast<int>(i);
  return -1;
}

class GradCheck : public testing::TestWithParam<GradCase> {};

TEST_P(GradCheck, MatchesCentralDifferences) {
  const GradCase& c = GetParam();
  auto module = parseModule(test::gradCaseText(), "grad_cases.kiln");
  ASSERT_TRUE(module.ok()) << module.error().str();
  const Function* f = (*module)->lookup(c.function);
  ASSERT_NE(f, nullptr);
  Module out;
  auto g = differentiate(out, *f, c.wrt);
  ASSERT_TRUE(g.ok()) << g.error().str();
  SCOPED_TRACE(printFunction(**g));

  std::mt19937 rng(static_cast<unsigned>(std::hash<std::string>()(c.function)));
  std::vector<Tensor> inputs;
  for (Value* p : f->params()) inputs.push_back(randomInput(p->type(), rng, c));
  auto results = interpret(**g, inputs);
  ASSERT_TRUE(results.ok()) << results.error().str();
  size_t numResults = f->resultTypes().size();
  ASSERT_EQ(results->size(), numResults + c.wrt.size());
  EXPECT_DOUBLE_EQ((*results)[0].getDouble(0), loss(*f, inputs)) << "the loss itself changed";

  for (size_t k = 0; k < c.wrt.size(); ++k) {
    int j = paramIndex(*f, c.wrt[k]);
    const Tensor& analytic = (*results)[numResults + k];
    ASSERT_EQ(analytic.type(), f->params()[j]->type());
    for (int64_t e = 0; e < analytic.numElements(); ++e) {
      std::vector<Tensor> plus = inputs, minus = inputs;
      double x = inputs[j].getDouble(e);
      plus[j].setDouble(e, x + c.eps);
      minus[j].setDouble(e, x - c.eps);
      double numeric = (loss(*f, plus) - loss(*f, minus)) / (2 * c.eps);
      EXPECT_NEAR(analytic.getDouble(e), numeric, c.tol * std::max(1.0, std::abs(numeric)))
          << "d loss / d %" << c.wrt[k] << " element " << e;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, GradCheck, testing::ValuesIn(test::gradCases()),
                         [](const testing::TestParamInfo<GradCase>& i) { return test::gradCaseName(i.param); });

// Every op with a derivative rule appears in the case file, so none goes unchecked.
TEST(GradCases, EveryRuleHasACase) {
  std::string text = test::gradCaseText();
  for (const OpInfo& info : allOps()) {
    if (!info.grad) continue;
    EXPECT_NE(text.find(" = " + std::string(info.name) + " "), std::string::npos)
        << info.name << " has a derivative rule but no case in grad_cases.kiln";
  }
}

Expected<Function*> gradOf(Module& out, const std::string& text, const std::vector<std::string>& wrt) {
  auto module = parseModule(text, "t.kiln");
  if (!module) return module.error();
  static std::vector<std::unique_ptr<Module>> keep;  // the source outlives the call
  keep.push_back(std::move(*module));
  return differentiate(out, *keep.back()->entry(), wrt);
}

TEST(Grad, ResultsAreOriginalsThenGradientsInWrtOrder) {
  Module out;
  auto g = gradOf(out, R"(
func @f(%a: f32[3], %b: f32[2]) -> (f32[], f32[3]) {
  %s = reduce_sum %a
  %t = reduce_sum %b
  %l = mul %s, %t
  %e = exp %a
  return %l, %e
})",
                  {"b", "a"});
  ASSERT_TRUE(g.ok()) << g.error().str();
  EXPECT_EQ((*g)->name(), "f_grad");
  std::vector<TensorType> want = {{DType::F32, {}}, {DType::F32, {3}}, {DType::F32, {2}}, {DType::F32, {3}}};
  EXPECT_EQ((*g)->resultTypes(), want);
}

TEST(Grad, UnusedParameterGetsZeros) {
  Module out;
  auto g = gradOf(out, "func @f(%a: f64[2], %b: f64[2]) -> f64[] {\n  %s = reduce_sum %a\n  return %s\n}", {"b"});
  ASSERT_TRUE(g.ok()) << g.error().str();
  auto r = interpret(**g, {Tensor({DType::F64, {2}}), Tensor({DType::F64, {2}})});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[1].getDouble(0), 0.0);
  EXPECT_EQ((*r)[1].getDouble(1), 0.0);
}

struct BadCase {
  const char* name;
  const char* text;
  std::vector<std::string> wrt;
  const char* message;
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class GradErrors : public testing::TestWithParam<BadCase> {};

TEST_P(GradErrors, NameTheProblem) {
  Module out;
  auto g = gradOf(out, GetParam().text, GetParam().wrt);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().str().find(GetParam().message), std::string::npos) << g.error().str();
  EXPECT_TRUE(out.functions().empty()) << "a failed grad must leave the module as it was";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, GradErrors,
    testing::Values(
        BadCase{"ThroughArgmax",
                "func @f(%x: f32[4]) -> f32[] {\n  %i = argmax %x\n  %c = cast %i {to = f32}\n  return %c\n}", {"x"},
                "t.kiln:2:8: error: grad: the result depends on %x only through argmax at line 2, which has no derivative"},
        BadCase{"IntegerParameter", "func @f(%x: i32[4]) -> f32[] {\n  %c = cast %x {to = f32}\n  %s = reduce_sum %c\n  return %s\n}",
                {"x"}, "grad: parameter %x is i32[4]; only float parameters have gradients"},
        BadCase{"UnknownParameter", "func @f(%x: f32[4]) -> f32[] {\n  %s = reduce_sum %x\n  return %s\n}", {"y"},
                "grad: @f has no parameter %y (it has %x)"},
        BadCase{"NonScalarResult", "func @f(%x: f32[4]) -> f32[4] {\n  %e = exp %x\n  return %e\n}", {"x"},
                "grad: @f must return a float scalar first (the value to differentiate), not f32[4]"},
        BadCase{"WhileOnThePath", R"(func @f(%x: f32[]) -> f32[] {
  %n = constant 0 : i32[]
  %k, %y = while %n, %x (%i: i32[], %v: f32[]) cond {
    %lim = constant 3 : i32[]
    %c = lt %i, %lim
    yield %c
  } body {
    %one = constant 1 : i32[]
    %i1 = add %i, %one
    %v1 = sqrt %v
    yield %i1, %v1
  }
  return %y
})",
                {"x"}, "t.kiln:3:12: error: grad: while has no derivative (its trip count depends on the data)"},
        BadCase{"NamedTwice", "func @f(%x: f32[4]) -> f32[] {\n  %s = reduce_sum %x\n  return %s\n}", {"x", "x"},
                "grad: parameter %x is named twice"}),
    [](const testing::TestParamInfo<BadCase>& i) { return i.param.name; });

}  // namespace
}  // namespace kiln::passes
