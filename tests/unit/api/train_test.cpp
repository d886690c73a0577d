// The public API's training steps: they learn, checkpoints restore, and bad options are errors.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <filesystem>
#include <random>
#include <string>

#include <unistd.h>

namespace {

// y = 1 where x0 + x1 > 0: separable, so a few Adam steps on the MLP example classifier learn it.
std::vector<kiln::Tensor> batch(int64_t n, uint32_t seed) {
  kiln::Tensor x({kiln::DType::F32, {n, 2}}), y({kiln::DType::I32, {n}});
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int64_t i = 0; i < n; ++i) {
    double a = u(rng), b = u(rng);
    x.setDouble(2 * i, a);
    x.setDouble(2 * i + 1, b);
    y.setInt(i, a + b > 0 ? 1 : 0);
  }
  return {x, y};
}

kiln::Graph classifier() {
  auto g = kiln::Graph::load(std::string(KILN_SOURCE_DIR) + "/examples/train/mlp_classifier.kiln");
  EXPECT_TRUE(g) << g.error().str();
  return *g;
}

kiln::TrainerOptions options() {
  kiln::TrainerOptions o;
  o.params = {"w1", "b1", "w2", "b2", "w3", "b3"};
  o.optimizer = "adam";
  o.batch = 64;
  return o;
}

// Small random weights (zeros would leave the tanh layers symmetric).
std::vector<kiln::Tensor> initialParams(const kiln::Graph& g) {
  std::vector<kiln::Tensor> params = *g.randomInputs(11);
  params.resize(6);
  for (kiln::Tensor& p : params)
    for (int64_t i = 0; i < p.numElements(); ++i) p.setDouble(i, 0.3 * p.getDouble(i));
  return params;
}

TEST(ApiTrainer, LearnsAndRestoresACheckpoint) {
  kiln::Graph g = classifier();
  auto t = kiln::Trainer::create(g, options());
  ASSERT_TRUE(t) << t.error().str();
  EXPECT_EQ(t->dataNames(), (std::vector<std::string>{"x", "y"}));
  ASSERT_TRUE(t->setParams(initialParams(g)).ok());
  double first = 0, last = 0;
  for (int s = 0; s < 60; ++s) {
    auto stats = t->step(batch(64, static_cast<uint32_t>(s)), 0.01f);
    ASSERT_TRUE(stats) << stats.error().str();
    if (s == 0) first = stats->loss;
    last = stats->loss;
    ASSERT_EQ(stats->metrics.size(), 1u);  // accuracy
  }
  EXPECT_LT(last, first / 3) << "first loss " << first << ", last " << last;
  EXPECT_EQ(t->stepCount(), 60);

  std::string dir = std::filesystem::temp_directory_path() / ("kiln_api_ckpt_" + std::to_string(::getpid()));
  ASSERT_TRUE(t->save(dir).ok());
  auto restored = kiln::Trainer::create(g, options());
  ASSERT_TRUE(restored);
  ASSERT_TRUE(restored->load(dir).ok());
  EXPECT_EQ(restored->stepCount(), 60);
  auto a = t->step(batch(64, 99), 0.01f), b = restored->step(batch(64, 99), 0.01f);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->loss, b->loss);
  std::filesystem::remove_all(dir);
}

TEST(ApiTrainer, BadOptionsAndDataAreErrors) {
  kiln::Graph g = classifier();
  kiln::TrainerOptions o = options();
  o.optimizer = "rmsprop-ish";
  auto opt = kiln::Trainer::create(g, o);
  ASSERT_FALSE(opt);
  EXPECT_NE(opt.error().str().find("rmsprop-ish"), std::string::npos) << opt.error().str();
  o = options();
  o.params = {"w1", "nope"};
  auto param = kiln::Trainer::create(g, o);
  ASSERT_FALSE(param);
  EXPECT_NE(param.error().str().find("nope"), std::string::npos) << param.error().str();
  auto t = kiln::Trainer::create(g, options());
  ASSERT_TRUE(t);
  auto wrong = t->step(batch(32, 1), 0.01f);  // 32 samples where the step takes 64
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().str().find("64"), std::string::npos) << wrong.error().str();
  EXPECT_FALSE(t->load("/nonexistent/checkpoint").ok());
}

}  // namespace

namespace {

TEST(ApiTrainer, PipelinedAcrossTwoDevicesItTrainsAsAccumulation) {
  kiln::Graph g = classifier();
  kiln::TrainerOptions plain = options();
  plain.accumulate = 4;
  kiln::TrainerOptions piped = plain;
  piped.devices = 2;
  piped.split = true;
  piped.pipeline = true;
  piped.schedule = "1f1b";
  auto a = kiln::Trainer::create(g, plain), b = kiln::Trainer::create(g, piped);
  ASSERT_TRUE(a && b) << (a ? b.error().str() : a.error().str());
  ASSERT_TRUE(a->setParams(initialParams(g)).ok() && b->setParams(initialParams(g)).ok());
  for (int s = 0; s < 3; ++s) {
    auto x = a->step(batch(64, static_cast<uint32_t>(s)), 0.01f), y = b->step(batch(64, static_cast<uint32_t>(s)), 0.01f);
    ASSERT_TRUE(x && y) << (x ? y.error().str() : x.error().str());
    EXPECT_EQ(x->loss, y->loss);
  }
  piped.schedule = "zigzag";
  EXPECT_FALSE(kiln::Trainer::create(g, piped));
  piped.schedule = "gpipe";
  piped.devices = 0;
  EXPECT_FALSE(kiln::Trainer::create(g, piped));
}

}  // namespace
