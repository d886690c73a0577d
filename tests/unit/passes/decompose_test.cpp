// decompose preserves results: each composite, at f32, f16, bf16 and f64, interpreted as written
// and after decomposition on random inputs, agrees within a dtype-aware tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "frontend/parser.h"
#include "ir/clone.h"
#include "ir/interp/interpreter.h"
#include "ir/printer.h"
#include "passes/pass_manager.h"

namespace kiln::passes {
namespace {

std::unique_ptr<Module> parse(const std::string& text) {
  auto m = parseModule(text, "test.kiln");
  EXPECT_TRUE(m.ok()) << m.error().str() << "\n" << text;
  return m.ok() ? std::move(*m) : nullptr;
}

// The cases below write their float type as T: every "T[" becomes dtype + "[".
std::string withDType(std::string text, const std::string& dtype) {
  for (size_t at = text.find("T["); at != std::string::npos; at = text.find("T[", at + dtype.size()))
    text.replace(at, 1, dtype);
  return text;
}

// Random inputs in [-3, 3]; a parameter called %var (batch_norm's variance) gets [0.1, 2], one
// called %labels (softmax_cross_entropy's) integers in [0, 5).
std::vector<Tensor> randomInputs(const Function& f, std::mt19937& rng) {
  std::vector<Tensor> inputs;
  for (Value* p : f.params()) {
    Tensor t(p->type());
    if (p->name() == "labels") {
      std::uniform_int_distribution<int64_t> label(0, 4);
      for (int64_t i = 0; i < t.numElements(); ++i) t.setInt(i, label(rng));
      inputs.push_back(std::move(t));
      continue;
    }
    std::uniform_real_distribution<double> dist = p->name() == "var" ? std::uniform_real_distribution<double>(0.1, 2.0)
                                                                     : std::uniform_real_distribution<double>(-3.0, 3.0);
    for (int64_t i = 0; i < t.numElements(); ++i) t.setDouble(i, dist(rng));
    inputs.push_back(std::move(t));
  }
  return inputs;
}

struct Tolerance {
  double rtol, atol;
};
Tolerance toleranceFor(DType t) {
  switch (t) {
    case DType::F64: return {1e-12, 1e-12};
    case DType::F16: return {1e-3, 1e-3};
    case DType::BF16: return {1e-2, 1e-2};
    default: return {2e-6, 2e-6};  // f32: the interpreter rounds once from double, primitives each step
  }
}

bool isComposite(OpKind k) {
  return k == OpKind::Softmax || k == OpKind::LogSoftmax || k == OpKind::LayerNorm || k == OpKind::BatchNorm ||
         k == OpKind::Gelu || k == OpKind::Silu || k == OpKind::SoftmaxCrossEntropy;
}

struct Case {
  const char* name;
  const char* text;  // float type written as T
};

const Case kCases[] = {
    {"softmax_last", "func @main(%x: T[3,7]) -> T[3,7] {\n  %y = softmax %x\n  return %y\n}\n"},
    {"softmax_axis0", "func @main(%x: T[4,3,5]) -> T[4,3,5] {\n  %y = softmax %x {axis = 0}\n  return %y\n}\n"},
    {"log_softmax", "func @main(%x: T[2,6,3]) -> T[2,6,3] {\n  %y = log_softmax %x {axis = -2}\n  return %y\n}\n"},
    {"layer_norm_last",
     "func @main(%x: T[4,8], %s: T[8], %b: T[8]) -> T[4,8] {\n  %y = layer_norm %x, %s, %b\n  return %y\n}\n"},
    {"layer_norm_two_axes",
     "func @main(%x: T[2,3,4], %s: T[3,4], %b: T[3,4]) -> T[2,3,4] {\n"
     "  %y = layer_norm %x, %s, %b {axis = 1, epsilon = 0.001}\n  return %y\n}\n"},
    {"batch_norm_nchw",
     "func @main(%x: T[2,3,4,5], %s: T[3], %b: T[3], %m: T[3], %var: T[3]) -> T[2,3,4,5] {\n"
     "  %y = batch_norm %x, %s, %b, %m, %var\n  return %y\n}\n"},
    {"batch_norm_rank2",
     "func @main(%x: T[5,3], %s: T[3], %b: T[3], %m: T[3], %var: T[3]) -> T[5,3] {\n"
     "  %y = batch_norm %x, %s, %b, %m, %var {epsilon = 0.01}\n  return %y\n}\n"},
    {"gelu_erf", "func @main(%x: T[64]) -> T[64] {\n  %y = gelu %x\n  return %y\n}\n"},
    {"gelu_tanh", "func @main(%x: T[64]) -> T[64] {\n  %y = gelu %x {approximate = \"tanh\"}\n  return %y\n}\n"},
    {"silu", "func @main(%x: T[64]) -> T[64] {\n  %y = silu %x\n  return %y\n}\n"},
    {"softmax_cross_entropy",
     "func @main(%x: T[6,7], %labels: i32[6]) -> T[] {\n  %y = softmax_cross_entropy %x, %labels\n  return %y\n}\n"},
    {"in_map_body",
     "func @main(%xs: T[4,6]) -> T[4,6] {\n  %ys = map %xs (%x: T[6]) {\n    %y = softmax %x\n"
     "    %z = gelu %y\n    yield %z\n  }\n  return %ys\n}\n"},
};

TEST(Decompose, PreservesResultsAtEveryFloatDType) {
  std::mt19937 rng(1234);
  for (const Case& c : kCases) {
    for (std::string dtype : {"f32", "f16", "bf16", "f64"}) {
      SCOPED_TRACE(std::string(c.name) + " at " + dtype);
      auto original = parse(withDType(c.text, dtype));
      ASSERT_TRUE(original);
      std::unique_ptr<Module> decomposed = cloneFunction(*original->entry());
      Status ran = runPasses(*decomposed, {"decompose"});
      ASSERT_TRUE(ran.ok()) << ran.error().str();
      walkOps(decomposed->entry()->body(), [&](const Op* op) {
        EXPECT_FALSE(isComposite(op->kind())) << op->name() << " left in\n" << printModule(*decomposed);
      });
      for (int trial = 0; trial < 3; ++trial) {
        std::vector<Tensor> inputs = randomInputs(*original->entry(), rng);
        auto want = interpret(*original->entry(), inputs);
        auto got = interpret(*decomposed->entry(), inputs);
        ASSERT_TRUE(want.ok()) << want.error().str();
        ASSERT_TRUE(got.ok()) << got.error().str();
        const Tensor& a = (*want)[0];
        const Tensor& b = (*got)[0];
        ASSERT_EQ(a.type(), b.type());
        Tolerance tol = toleranceFor(a.dtype());
        for (int64_t i = 0; i < a.numElements(); ++i) {
          double x = a.getDouble(i), y = b.getDouble(i);
          ASSERT_LE(std::abs(x - y), tol.atol + tol.rtol * std::abs(x))
              << "element " << i << ": interpreter " << x << ", decomposed " << y << "\n"
              << printModule(*decomposed);
        }
      }
    }
  }
}

// gelu and silu are elementwise in the interpreter too: the decomposition repeats its steps in the
// same dtype (f32 or f64; f16/bf16 through f32) and matches it bit for bit.
TEST(Decompose, GeluAndSiluMatchTheInterpreterExactly) {
  std::mt19937 rng(99);
  for (const char* op : {"gelu %x", "gelu %x {approximate = \"tanh\"}", "silu %x"}) {
    for (std::string dtype : {"f32", "f16", "bf16", "f64"}) {
      SCOPED_TRACE(std::string(op) + " at " + dtype);
      auto original = parse(withDType(std::string("func @main(%x: T[256]) -> T[256] {\n  %y = ") + op +
                                          "\n  return %y\n}\n",
                                      dtype));
      ASSERT_TRUE(original);
      std::unique_ptr<Module> decomposed = cloneFunction(*original->entry());
      ASSERT_TRUE(runPasses(*decomposed, {"decompose"}).ok());
      std::vector<Tensor> inputs = randomInputs(*original->entry(), rng);
      auto want = interpret(*original->entry(), inputs);
      auto got = interpret(*decomposed->entry(), inputs);
      ASSERT_TRUE(want.ok() && got.ok());
      EXPECT_TRUE((*want)[0] == (*got)[0]);
    }
  }
}

TEST(Decompose, NewOpsKeepTheCompositesLocation) {
  auto m = parse("func @main(%x: f16[2,8], %s: f16[8], %b: f16[8]) -> f16[2,8] {\n"
                 "  %n = layer_norm %x, %s, %b\n"
                 "  return %n\n}\n");
  ASSERT_TRUE(m);
  ASSERT_TRUE(runPasses(*m, {"decompose"}).ok());
  int ops = 0;
  walkOps(m->entry()->body(), [&](const Op* op) {
    if (op->kind() == OpKind::Return) return;
    ++ops;
    EXPECT_EQ(op->loc().file, "test.kiln");
    EXPECT_EQ(op->loc().line, 2) << op->name();
    EXPECT_EQ(op->loc().col, 8) << op->name();
  });
  EXPECT_GT(ops, 10);
}

TEST(Decompose, EmptyResultStaysAndStillRuns) {
  auto m = parse("func @main(%x: f32[3,0]) -> f32[3,0] {\n  %y = softmax %x\n  return %y\n}\n");
  ASSERT_TRUE(m);
  std::string before = printModule(*m);
  ASSERT_TRUE(runPasses(*m, {"decompose"}).ok());
  EXPECT_EQ(printModule(*m), before);
  EXPECT_TRUE(interpret(*m->entry(), {Tensor(TensorType{DType::F32, {3, 0}})}).ok());
}

TEST(Decompose, CrossEntropyKeepsItsLabelCheckAndMessage) {
  const std::string text =
      "func @main(%l: f32[3,4], %t: i64[3]) -> f32[] {\n  %e = softmax_cross_entropy %l, %t\n  return %e\n}\n";
  auto original = parse(text);
  ASSERT_TRUE(original);
  std::unique_ptr<Module> decomposed = cloneFunction(*original->entry());
  ASSERT_TRUE(runPasses(*decomposed, {"decompose"}).ok());
  Tensor logits(TensorType{DType::F32, {3, 4}}), labels(TensorType{DType::I64, {3}});
  for (int64_t bad : {int64_t{4}, int64_t{-1}}) {
    labels.setInt(1, bad);
    auto want = interpret(*original->entry(), {logits, labels});
    auto got = interpret(*decomposed->entry(), {logits, labels});
    ASSERT_FALSE(want.ok());
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.error().str(), want.error().str());
    EXPECT_EQ(got.error().str(), "test.kiln:2:8: error: softmax_cross_entropy: label " + std::to_string(bad) +
                                     " at index 1 is outside [0, 4)");
  }
}

}  // namespace
}  // namespace kiln::passes
