// Training step functions: the step's layout, each optimizer's update against the formulas of
// docs/training.md computed here in double from the interpreter's gradient, gradient
// accumulation against one big batch, and batch-size specialisation with its errors.
#include "passes/train_step.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "frontend/parser.h"
#include "ir/interp/interpreter.h"
#include "passes/grad.h"

namespace kiln::passes {
namespace {

// Least squares with a metric: params %w, %b; data %x, %y (batch 4 as written).
constexpr const char* kLinear = R"(
func @main(%w: f32[3,2], %b: f32[2], %x: f32[4,3], %y: f32[4,2]) -> (f32[], f32[]) {
  %h = matmul %x, %w
  %z = add %h, %b
  %d = sub %z, %y
  %s = mul %d, %d
  %loss = reduce_mean %s
  %worst = reduce_max %s
  return %loss, %worst
}
)";

std::unique_ptr<Module> parse(const char* text) {
  auto m = parseModule(text, "linear.kiln");
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().str());
  return m.ok() ? std::move(*m) : nullptr;
}

Tensor randomTensor(const TensorType& type, std::mt19937& rng) {
  Tensor t(type);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int64_t i = 0; i < t.numElements(); ++i) t.setDouble(i, u(rng));
  return t;
}

std::vector<Tensor> run(const Function& f, const std::vector<Tensor>& inputs) {
  auto out = interpret(f, inputs);
  EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().str());
  return out.ok() ? *out : std::vector<Tensor>{};
}

void expectNear(const Tensor& got, const std::vector<double>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.numElements(), static_cast<int64_t>(want.size())) << what;
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got.getDouble(static_cast<int64_t>(i)), want[i], tol * std::max(1.0, std::abs(want[i]))) << what << "[" << i << "]";
}

TEST(TrainStep, LayoutIsParamsStateDataLrStep) {
  auto m = parse(kLinear);
  TrainSpec spec{{"b", "w"}, *parseOptimizer("adam")};
  auto step = buildTrainStep(*m, *m->lookup("main"), spec);
  ASSERT_TRUE(step.ok()) << step.error().str();
  std::vector<std::string> names;
  for (Value* p : (*step)->params()) names.push_back(p->name());
  EXPECT_EQ(names, (std::vector<std::string>{"b", "w", "m_b", "m_w", "v_b", "v_w", "x", "y", "lr", "step"}));
  // loss, metric, new b, new w, new m (b, w), new v (b, w)
  ASSERT_EQ((*step)->resultTypes().size(), 8u);
  EXPECT_EQ((*step)->resultTypes()[2].str(), "f32[2]");
  EXPECT_EQ((*step)->resultTypes()[3].str(), "f32[3,2]");
  EXPECT_EQ((*step)->name(), "main_step");
}

// Runs two steps of each optimizer and compares with the formulas applied to the gradients
// that the differentiated function gives at the same points.
void checkOptimizer(const std::string& name, const OptimizerConfig& config) {
  SCOPED_TRACE(name);
  auto m = parse(kLinear);
  const Function& f = *m->lookup("main");
  TrainSpec spec{{"w", "b"}, config};
  auto step = buildTrainStep(*m, f, spec);
  ASSERT_TRUE(step.ok()) << step.error().str();
  auto grad = differentiate(*m, f, {"w", "b"}, "main_grad");
  ASSERT_TRUE(grad.ok()) << grad.error().str();
  std::mt19937 rng(7);
  std::vector<Tensor> params = {randomTensor(f.params()[0]->type(), rng), randomTensor(f.params()[1]->type(), rng)};
  int slots = stateSlots(config.kind);
  std::vector<Tensor> state;
  for (int s = 0; s < slots; ++s)
    for (const Tensor& p : params) state.push_back(Tensor(p.type()));  // zero-initialised
  // Reference state in double, slot-major like the step's.
  std::vector<std::vector<double>> ref(state.size());
  for (size_t i = 0; i < state.size(); ++i) ref[i].assign(state[i].numElements(), 0.0);
  const double lr = 0.05;
  for (int t = 1; t <= 2; ++t) {
    Tensor x = randomTensor(f.params()[2]->type(), rng), y = randomTensor(f.params()[3]->type(), rng);
    std::vector<Tensor> g = run(**grad, {params[0], params[1], x, y});
    ASSERT_EQ(g.size(), 4u);
    std::vector<Tensor> in = params;
    in.insert(in.end(), state.begin(), state.end());
    in.insert(in.end(), {x, y, Tensor::scalar(DType::F32, lr), Tensor::scalar(DType::F32, t)});
    std::vector<Tensor> out = run(**step, in);
    ASSERT_EQ(out.size(), 4u + state.size());
    EXPECT_NEAR(out[0].getDouble(0), g[0].getDouble(0), 1e-6);
    for (size_t i = 0; i < params.size(); ++i) {
      std::vector<double> want(params[i].numElements());
      for (int64_t e = 0; e < params[i].numElements(); ++e) {
        double p = params[i].getDouble(e), gr = g[2 + i].getDouble(e);
        switch (config.kind) {
          case OptimizerKind::Sgd: want[e] = p - lr * gr; break;
          case OptimizerKind::Momentum: {
            double& v = ref[i][e];
            v = config.momentum * v + gr;
            want[e] = p - lr * (config.nesterov ? gr + config.momentum * v : v);
            break;
          }
          case OptimizerKind::Adam:
          case OptimizerKind::AdamW: {
            double& mm = ref[i][e];
            double& vv = ref[params.size() + i][e];
            mm = config.beta1 * mm + (1 - config.beta1) * gr;
            vv = config.beta2 * vv + (1 - config.beta2) * gr * gr;
            double mhat = mm / (1 - std::pow(config.beta1, t)), vhat = vv / (1 - std::pow(config.beta2, t));
            double decay = config.kind == OptimizerKind::AdamW ? lr * config.weightDecay * p : 0.0;
            want[e] = p - decay - lr * mhat / (std::sqrt(vhat) + config.eps);
            break;
          }
        }
      }
      expectNear(out[2 + i], want, 1e-5, "param " + std::to_string(i) + " step " + std::to_string(t));
    }
    for (size_t s = 0; s < state.size(); ++s) expectNear(out[4 + s], ref[s], 1e-5, "state " + std::to_string(s));
    params = {out[2], out[3]};
    state.assign(out.begin() + 4, out.end());
  }
}

TEST(TrainStep, OptimizersFollowTheirFormulas) {
  for (const char* name : {"sgd", "momentum", "nesterov", "adam", "adamw"}) checkOptimizer(name, *parseOptimizer(name));
  OptimizerConfig adamw = *parseOptimizer("adamw");
  adamw.weightDecay = 0.1;
  adamw.beta1 = 0.8;
  checkOptimizer("adamw wd=0.1 b1=0.8", adamw);
}

TEST(TrainStep, UnknownOptimizerAndParameter) {
  auto bad = parseOptimizer("lamb");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().str().find("unknown optimizer 'lamb'"), std::string::npos);
  auto m = parse(kLinear);
  auto step = buildTrainStep(*m, *m->lookup("main"), {{"w", "q"}, {}});
  ASSERT_FALSE(step.ok());
  EXPECT_NE(step.error().str().find("has no parameter %q to train"), std::string::npos) << step.error().str();
}

// K micro-batches through accumulate + final step == one SGD step on the K-times larger batch.
TEST(TrainStep, AccumulationMatchesOneBigBatch) {
  auto m = parse(kLinear);
  const Function& f = *m->lookup("main");
  TrainSpec spec{{"w", "b"}, *parseOptimizer("sgd")};
  auto layout = stepLayout(f, spec);
  ASSERT_TRUE(layout.ok());
  const int64_t k = 4, micro = 3;
  auto big = specializeBatch(*m, f, layout->dataIndex, k * micro, "big");
  auto small = specializeBatch(*m, f, layout->dataIndex, micro, "small");
  ASSERT_TRUE(big.ok() && small.ok());
  auto bigStep = buildTrainStep(*m, **big, spec);
  auto accumulate = buildAccumulate(*m, **small, spec);
  auto finalStep = buildAccumulateStep(*m, **small, spec, k);
  ASSERT_TRUE(bigStep.ok() && accumulate.ok() && finalStep.ok());
  EXPECT_EQ((*bigStep)->params()[2]->type().str(), "f32[12,3]");

  std::mt19937 rng(3);
  Tensor w = randomTensor({DType::F32, {3, 2}}, rng), b = randomTensor({DType::F32, {2}}, rng);
  Tensor x = randomTensor({DType::F32, {k * micro, 3}}, rng), y = randomTensor({DType::F32, {k * micro, 2}}, rng);
  Tensor lr = Tensor::scalar(DType::F32, 0.1), one = Tensor::scalar(DType::F32, 1);
  std::vector<Tensor> want = run(**bigStep, {w, b, x, y, lr, one});

  auto rows = [&](const Tensor& t, int64_t i) {
    TensorType type = t.type();
    type.shape[0] = micro;
    Tensor part(type);
    int64_t n = part.numElements();
    for (int64_t e = 0; e < n; ++e) part.setDouble(e, t.getDouble(i * n + e));
    return part;
  };
  Tensor accW(w.type()), accB(b.type());
  for (int64_t i = 0; i + 1 < k; ++i) {
    std::vector<Tensor> out = run(**accumulate, {w, b, accW, accB, rows(x, i), rows(y, i)});
    ASSERT_EQ(out.size(), 4u);
    accW = out[2];
    accB = out[3];
  }
  std::vector<Tensor> got = run(**finalStep, {w, b, accW, accB, rows(x, k - 1), rows(y, k - 1), lr, one});
  ASSERT_EQ(got.size(), 4u);
  for (int r = 2; r < 4; ++r) {
    std::vector<double> expected(want[r].numElements());
    for (size_t e = 0; e < expected.size(); ++e) expected[e] = want[r].getDouble(static_cast<int64_t>(e));
    expectNear(got[r], expected, 1e-6, "param " + std::to_string(r - 2));
  }
}

TEST(TrainStep, SpecializeRefusesAHardCodedBatch) {
  auto m = parse(R"(
func @main(%w: f32[6], %x: f32[4,6]) -> f32[] {
  %flat = reshape %x {shape = [24]}
  %t = reshape %flat {shape = [4,6]}
  %p = mul %t, %w
  %l = reduce_sum %p
  return %l
}
)");
  auto s = specializeBatch(*m, *m->lookup("main"), {1}, 8, "b8");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().str().find("linear.kiln:3:"), std::string::npos) << s.error().str();
  EXPECT_NE(s.error().str().find("reshape"), std::string::npos) << s.error().str();
  EXPECT_NE(s.error().str().find("fixes the batch size"), std::string::npos) << s.error().str();
}

}  // namespace
}  // namespace kiln::passes
