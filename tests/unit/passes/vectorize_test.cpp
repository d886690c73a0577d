// The vectorize pass, numerically: every function of tests/lit/passes/vectorize.kiln (one per
// batching rule) runs in the reference interpreter as written (the map as a loop) and vectorized,
// on the same random inputs, and the results must agree bit for bit. Functions named @loop_* keep
// their map: for them the pass must change nothing and say why in a remark.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "frontend/parser.h"
#include "ir/clone.h"
#include "ir/interp/interpreter.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/vectorize.h"

namespace kiln::passes {
namespace {

std::string readRuleFile() {
  std::ifstream in(std::string(KILN_SOURCE_DIR) + "/tests/lit/passes/vectorize.kiln");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool hasMap(const Function& f) {
  bool found = false;
  walkOps(f.body(), [&](const Op* op) { found |= op->kind() == OpKind::Map; });
  return found;
}

// Floats in [-2, 2) (no exact zeros, so sign/relu/pow see both sides); integers in [0, 3), which
// fits every index and trip count in the rule file.
Tensor randomInput(const TensorType& type, std::mt19937& rng) {
  Tensor t(type);
  std::uniform_real_distribution<double> real(-2.0, 2.0);
  std::uniform_int_distribution<int64_t> small(0, 2);
  for (int64_t i = 0; i < t.numElements(); ++i) {
    if (isFloat(type.dtype)) t.setDouble(i, real(rng));
    else t.setInt(i, small(rng));
  }
  return t;
}

// Bitwise equality: the batched ops run the same element math in the same order (reductions,
// matmul and conv accumulate each output in double in the same order either way), so there is no
// rounding difference to allow for. NaN compares equal to NaN of the same bits.
void expectSameTensors(const Tensor& loop, const Tensor& batched, const std::string& what) {
  ASSERT_EQ(loop.type(), batched.type()) << what;
  for (int64_t i = 0; i < loop.numElements(); ++i) {
    if (loop.getDouble(i) == batched.getDouble(i)) continue;
    if (std::isnan(loop.getDouble(i)) && std::isnan(batched.getDouble(i))) continue;
    ADD_FAILURE() << what << ": element " << i << " is " << loop.getDouble(i) << " as a loop but "
                  << batched.getDouble(i) << " vectorized";
    return;
  }
}

TEST(Vectorize, EveryRuleComputesWhatTheLoopComputes) {
  auto module = parseModule(readRuleFile(), "vectorize.kiln");
  ASSERT_TRUE(module.ok()) << module.error().str();
  std::mt19937 rng(1234);
  int vectorized = 0;
  for (const auto& f : (*module)->functions()) {
    SCOPED_TRACE("function @" + f->name());
    bool staysLoop = f->name().rfind("loop_", 0) == 0;
    std::unique_ptr<Module> copy = cloneFunction(*f);
    std::string before = printModule(*copy);
    PassContext context("vectorize");
    auto changed = vectorizeMaps(*copy, context);
    ASSERT_TRUE(changed.ok()) << changed.error().str();
    ASSERT_TRUE(verifyModule(*copy).ok()) << verifyModule(*copy).error().str() << "\n" << printModule(*copy);
    if (staysLoop) {
      EXPECT_FALSE(*changed);
      EXPECT_EQ(printModule(*copy), before);
      ASSERT_FALSE(context.remarks().empty());
      EXPECT_EQ(context.remarks().back().message.rfind("stays a loop: ", 0), 0u) << context.remarks().back().message;
      continue;
    }
    EXPECT_TRUE(*changed);
    EXPECT_FALSE(hasMap(*copy->entry())) << printModule(*copy);
    EXPECT_TRUE(context.remarks().empty());
    ++vectorized;
    for (int trial = 0; trial < 3; ++trial) {
      std::vector<Tensor> inputs;
      for (const TensorType& t : f->paramTypes()) inputs.push_back(randomInput(t, rng));
      auto loop = interpret(*f, inputs);
      auto batched = interpret(*copy->entry(), inputs);
      ASSERT_TRUE(loop.ok()) << loop.error().str();
      ASSERT_TRUE(batched.ok()) << batched.error().str() << "\n" << printModule(*copy);
      ASSERT_EQ(loop->size(), batched->size());
      for (size_t r = 0; r < loop->size(); ++r)
        expectSameTensors((*loop)[r], (*batched)[r], "result " + std::to_string(r));
    }
  }
  EXPECT_GE(vectorized, 20);  // the rule file has not lost its functions
}

TEST(Vectorize, ExampleMapCubicSinLeavesNoMap) {
  std::ifstream in(std::string(KILN_SOURCE_DIR) + "/examples/map_cubic_sin.kiln");
  std::stringstream text;
  text << in.rdbuf();
  auto module = parseModule(text.str(), "map_cubic_sin.kiln");
  ASSERT_TRUE(module.ok()) << module.error().str();
  PassContext context("vectorize");
  auto changed = vectorizeMaps(**module, context);
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);
  EXPECT_FALSE(hasMap(*(*module)->entry())) << printModule(**module);
}

}  // namespace
}  // namespace kiln::passes
