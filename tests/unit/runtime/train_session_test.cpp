// TrainStep: compiled steps agree with the interpreter's, accumulation with one big batch, a
// saved and resumed run with an uninterrupted one (bitwise on the CPU), and its input checks.
#include "runtime/train_session.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "frontend/parser.h"
#include "runtime/checkpoint.h"

namespace kiln {
namespace {

// A two-layer classifier: params %w1 %b1 %w2 %b2, data %x (features) and %y (labels).
constexpr const char* kMlp = R"(
func @loss(%w1: f32[4,8], %b1: f32[8], %w2: f32[8,3], %b2: f32[3], %x: f32[16,4], %y: i32[16]) -> (f32[], f32[]) {
  %h = matmul %x, %w1
  %hb = add %h, %b1
  %a = tanh %hb
  %o = matmul %a, %w2
  %logits = add %o, %b2
  %l = softmax_cross_entropy %logits, %y
  %loss = reduce_mean %l
  %pred = argmax %logits {axis = 1}
  %predi = cast %pred {to = i32}
  %hit = eq %predi, %y
  %hitf = cast %hit {to = f32}
  %acc = reduce_mean %hitf
  return %loss, %acc
}
)";

struct Fixture {
  std::unique_ptr<Module> module;
  std::vector<Tensor> params, data;
};

Fixture makeFixture(int64_t batch) {
  Fixture fx;
  auto m = parseModule(kMlp, "mlp.kiln");
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().str());
  fx.module = std::move(*m);
  std::mt19937 rng(11);
  std::normal_distribution<double> normal(0.0, 0.5);
  for (const Shape& shape : {Shape{4, 8}, Shape{8}, Shape{8, 3}, Shape{3}}) {
    Tensor t({DType::F32, shape});
    for (int64_t i = 0; i < t.numElements(); ++i) t.setDouble(i, normal(rng));
    fx.params.push_back(t);
  }
  Tensor x({DType::F32, {batch, 4}}), y({DType::I32, {batch}});
  for (int64_t i = 0; i < batch; ++i) {
    int label = static_cast<int>(i % 3);
    y.setDouble(i, label);
    for (int j = 0; j < 4; ++j) x.setDouble(i * 4 + j, normal(rng) + (j == label ? 2.0 : 0.0));
  }
  fx.data = {x, y};
  return fx;
}

std::unique_ptr<TrainStep> make(const Fixture& fx, const std::string& optimizer, Backend backend, int64_t batch,
                                int64_t k = 1) {
  TrainOptions o;
  o.spec = {{"w1", "b1", "w2", "b2"}, *passes::parseOptimizer(optimizer)};
  o.batch = batch;
  o.accumulate = k;
  o.backend = backend;
  auto t = TrainStep::create(*fx.module->lookup("loss"), o);
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().str());
  if (!t.ok()) return nullptr;
  EXPECT_TRUE((*t)->setParams(fx.params).ok());
  return std::move(*t);
}

void expectClose(const std::vector<Tensor>& a, const std::vector<Tensor>& b, double tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].type(), b[i].type());
    for (int64_t e = 0; e < a[i].numElements(); ++e)
      EXPECT_NEAR(a[i].getDouble(e), b[i].getDouble(e), tol * std::max(1.0, std::abs(b[i].getDouble(e)))) << i << "[" << e << "]";
  }
}

TEST(TrainStep, CpuMatchesInterpreterAndLearns) {
  Fixture fx = makeFixture(32);
  auto cpu = make(fx, "adam", Backend::Cpu, 32);
  auto interp = make(fx, "adam", Backend::Interp, 32);
  ASSERT_TRUE(cpu && interp);
  EXPECT_EQ(cpu->stepFunction().params()[cpu->stepFunction().params().size() - 4]->type().str(), "f32[32,4]");
  double first = 0, last = 0;
  for (int s = 0; s < 30; ++s) {
    auto a = cpu->step(fx.data, 0.05f);
    auto b = interp->step(fx.data, 0.05f);
    ASSERT_TRUE(a.ok() && b.ok()) << (a.ok() ? b.error().str() : a.error().str());
    EXPECT_NEAR(a->loss, b->loss, 1e-4 * std::max(1.0, b->loss));
    if (s == 0) first = a->loss;
    last = a->loss;
    if (s == 29) {
      EXPECT_GE(a->metrics.at(0), 0.9);
    }
  }
  EXPECT_LT(last, first / 5);
  expectClose(*cpu->params(), *interp->params(), 1e-3);
  expectClose(*cpu->state(), *interp->state(), 1e-3);
  EXPECT_EQ(cpu->stepCount(), 30);
}

TEST(TrainStep, AccumulationMatchesOneBigBatchOnCpu) {
  Fixture fx = makeFixture(16);
  auto one = make(fx, "sgd", Backend::Cpu, 16);
  auto four = make(fx, "sgd", Backend::Cpu, 16, 4);
  ASSERT_TRUE(one && four);
  for (int s = 0; s < 3; ++s) {
    auto a = one->step(fx.data, 0.1f);
    auto b = four->step(fx.data, 0.1f);
    ASSERT_TRUE(a.ok() && b.ok()) << (a.ok() ? b.error().str() : a.error().str());
    EXPECT_NEAR(a->loss, b->loss, 1e-5);
  }
  expectClose(*four->params(), *one->params(), 1e-5);
}

TEST(TrainStep, SaveAndResumeIsBitwiseEqualOnCpu) {
  Fixture fx = makeFixture(16);
  auto straight = make(fx, "momentum", Backend::Cpu, 16);
  auto first = make(fx, "momentum", Backend::Cpu, 16);
  ASSERT_TRUE(straight && first);
  for (int s = 0; s < 4; ++s) ASSERT_TRUE(straight->step(fx.data, 0.1f).ok());
  for (int s = 0; s < 2; ++s) ASSERT_TRUE(first->step(fx.data, 0.1f).ok());
  std::string dir = ::testing::TempDir() + "/kiln_train_ckpt";
  ASSERT_TRUE(first->save(dir).ok());
  EXPECT_TRUE(std::filesystem::exists(dir + "/w1.npy"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/velocity_w1.npy"));
  EXPECT_FALSE(std::filesystem::exists(dir + ".tmp"));
  ASSERT_TRUE(first->save(dir).ok());  // replacing an existing checkpoint
  Fixture zero = makeFixture(16);
  auto resumed = make(zero, "momentum", Backend::Cpu, 16);
  ASSERT_TRUE(resumed);
  Status loaded = resumed->load(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.error().str();
  EXPECT_EQ(resumed->stepCount(), 2);
  for (int s = 0; s < 2; ++s) ASSERT_TRUE(resumed->step(fx.data, 0.1f).ok());
  auto a = straight->params(), b = resumed->params();
  ASSERT_EQ(a->size(), b->size());
  for (size_t i = 0; i < a->size(); ++i) EXPECT_TRUE((*a)[i] == (*b)[i]) << "parameter " << i << " differs";
  EXPECT_TRUE(*straight->state() == *resumed->state());

  auto adam = make(fx, "adam", Backend::Cpu, 16);
  Status wrong = adam->load(dir);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().str().find("written by the momentum optimizer, not adam"), std::string::npos);
  Status missing = adam->load(dir + "-nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().str().find("no checkpoint.txt"), std::string::npos);
}

TEST(TrainStep, RefusesBadBatchesAndData) {
  Fixture fx = makeFixture(16);
  TrainOptions o;
  o.spec = {{"w1", "b1", "w2", "b2"}, {}};
  o.batch = 10;
  o.accumulate = 4;
  auto t = TrainStep::create(*fx.module->lookup("loss"), o);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().str().find("batch 10 is not divisible by 4 micro-batches"), std::string::npos) << t.error().str();
  auto ok = make(fx, "sgd", Backend::Cpu, 8);
  ASSERT_TRUE(ok);
  auto r = ok->step(fx.data, 0.1f);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().str().find("data input %x: expected f32[8,4], got f32[16,4]"), std::string::npos) << r.error().str();
  Status bad = ok->setParams({fx.params[0]});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().str().find("expected 4 tensors, got 1"), std::string::npos);
}

TEST(TrainStep, CudaMatchesCpu) {
  auto backend = resolveBackend(Backend::Cuda);
  if (!backend) GTEST_SKIP() << "no GPU here, TrainStep on CUDA (device-resident, donated, prefetched) unverified: "
                             << backend.error().str();
  Fixture fx = makeFixture(16);
  auto cpu = make(fx, "adamw", Backend::Cpu, 16, 2);
  auto gpu = make(fx, "adamw", Backend::Cuda, 16, 2);
  ASSERT_TRUE(cpu && gpu);
  for (int s = 0; s < 5; ++s) {
    ASSERT_TRUE(gpu->prefetch(fx.data).ok());
    auto a = cpu->step(fx.data, 0.01f);
    auto b = gpu->step(fx.data, 0.01f);
    ASSERT_TRUE(a.ok() && b.ok()) << (a.ok() ? b.error().str() : a.error().str());
    EXPECT_NEAR(a->loss, b->loss, 1e-4);
  }
  expectClose(*gpu->params(), *cpu->params(), 1e-4);
}

}  // namespace
}  // namespace kiln
