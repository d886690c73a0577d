// Functions placed across devices: every example with its ops scattered over three devices gives
// the single-device results (the interpreter's exactly, the CPU's within rounding); a training
// step placed on two devices gives the one-device losses and parameters bit for bit; a failing
// stage reports its op without hanging the other devices; the stages' partition and run stats.
#include "runtime/placed_executable.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "example_files.h"
#include "frontend/parser.h"
#include "ir/interp/interpreter.h"
#include "ir/printer.h"
#include "passes/placement.h"
#include "runtime/executable.h"
#include "runtime/random_inputs.h"
#include "runtime/stage_chain.h"
#include "runtime/train_session.h"
#include "tensor_compare.h"

namespace kiln {
namespace {

// Puts every top-level op but the return on a device drawn from [0, devices).
void scatter(Function& f, int devices, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (const auto& op : f.body().ops())
    if (op.get() != f.body().terminator() && op->kind() != OpKind::Transfer)
      op->setAttr(kDeviceAttr, Attr(static_cast<int64_t>(rng() % static_cast<uint64_t>(devices))));
}

codegen::CompileOptions cpu() {
  codegen::CompileOptions options;
  options.target = codegen::Target::Cpu;
  return options;
}

class PlacedExamples : public ::testing::TestWithParam<std::string> {};

TEST_P(PlacedExamples, ScatteredOverThreeDevicesTheyComputeWhatOneDoes) {
  auto module = parseFile(GetParam());
  ASSERT_TRUE(module.ok()) << module.error().str();
  Function& f = *(*module)->entry();
  std::vector<Tensor> inputs = randomInputs(f, 5);
  auto one = Executable::compile(f, cpu());
  ASSERT_TRUE(one.ok()) << one.error().str();
  auto want = (*one)->run(inputs);
  ASSERT_TRUE(want.ok()) << want.error().str();
  auto interpreted = interpret(f, inputs);
  ASSERT_TRUE(interpreted.ok()) << interpreted.error().str();
  for (uint64_t seed : {1, 2}) {
    SCOPED_TRACE("placement seed " + std::to_string(seed));
    scatter(f, 3, seed);
    auto placed = PlacedExecutable::compile(f, 3, cpu());
    ASSERT_TRUE(placed.ok()) << placed.error().str();
    SCOPED_TRACE(printFunction((*placed)->placedFunction()));
    auto got = (*placed)->run(inputs);
    ASSERT_TRUE(got.ok()) << got.error().str();
    ASSERT_EQ(got->size(), want->size());
    for (size_t i = 0; i < want->size(); ++i) EXPECT_EQ(compare((*want)[i], (*got)[i]), "") << "result " << i;
    // The interpreter runs the placed function, transfers included, to the same bits.
    auto again = interpret((*placed)->placedFunction(), inputs);
    ASSERT_TRUE(again.ok()) << again.error().str();
    for (size_t i = 0; i < again->size(); ++i) EXPECT_TRUE((*again)[i] == (*interpreted)[i]) << "result " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, PlacedExamples, ::testing::ValuesIn(exampleFiles()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return std::filesystem::path(info.param).stem().string();
                         });

Function& parsed(std::unique_ptr<Module>& holder, const char* text) {
  auto m = parseModule(text, "placed.kiln");
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().str());
  holder = std::move(*m);
  return *holder->entry();
}

TEST(Partition, AForwardAndBackCrossingIsThreeStagesInOrder) {
  std::unique_ptr<Module> m;
  Function& f = parsed(m, R"(
func @main(%x: f32[4], %w: f32[4]) -> f32[4] {
  %a = mul %x, %w {device = 0}
  %b = tanh %a {device = 1}
  %c = add %b, %x {device = 0}
  return %c
}
)");
  ASSERT_TRUE(passes::placeDevices(f, 2).ok());
  auto p = passes::partitionByDevice(f);
  ASSERT_TRUE(p.ok()) << p.error().str();
  ASSERT_EQ(p->stages.size(), 3u);
  EXPECT_EQ(p->devices, 2);
  std::vector<std::pair<int, int>> keys;
  for (const passes::Stage& s : p->stages) keys.push_back({s.device, s.level});
  EXPECT_EQ(keys, (std::vector<std::pair<int, int>>{{0, 0}, {1, 1}, {0, 2}}));
  // Stage (0, 2) reads %b from stage 1 across devices and %x, a parameter, where it is.
  const passes::Stage& last = p->stages[2];
  ASSERT_EQ(last.inputs.size(), 2u);
  EXPECT_EQ(last.inputs[0].stage, 1);
  EXPECT_TRUE(last.inputs[0].transfer);
  EXPECT_EQ(last.inputs[0].from, 1);
  EXPECT_EQ(last.inputs[1].stage, -1);
  EXPECT_EQ(last.inputs[1].index, 0);
  EXPECT_FALSE(last.inputs[1].transfer);
  ASSERT_EQ(p->results.size(), 1u);
  EXPECT_EQ(p->results[0].stage, 2);
  // No stage function holds a transfer or a device attribute.
  for (const passes::Stage& s : p->stages) {
    std::string text = printFunction(*s.function);
    EXPECT_EQ(text.find("transfer"), std::string::npos) << text;
    EXPECT_EQ(text.find("device"), std::string::npos) << text;
  }
}

TEST(PlacedExecutable, RunsReportEveryStageAndTheBytesThatCrossed) {
  std::unique_ptr<Module> m;
  Function& f = parsed(m, R"(
func @main(%x: f32[64,32], %w: f32[32,16]) -> f32[64,16] {
  %h = matmul %x, %w {device = 0}
  %y = tanh %h {device = 1}
  return %y
}
)");
  auto placed = PlacedExecutable::compile(f, 2, cpu());
  ASSERT_TRUE(placed.ok()) << placed.error().str();
  ChainStats stats;
  std::vector<Tensor> inputs = randomInputs(f, 3);
  auto got = (*placed)->run(inputs, &stats);
  ASSERT_TRUE(got.ok()) << got.error().str();
  ASSERT_EQ(stats.runs.size(), 2u);
  EXPECT_EQ(stats.runs[0].name, "main.d0.s0");
  EXPECT_EQ(stats.runs[1].device, 1);
  EXPECT_EQ(stats.runs[0].transferBytes, 0);
  EXPECT_EQ(stats.runs[1].transferBytes, 64 * 16 * 4);
  EXPECT_GE(stats.runs[1].startMs, stats.runs[0].startMs + stats.runs[0].computeMs);
  EXPECT_GT(stats.wallMs, 0);
  ASSERT_EQ(stats.busyMs.size(), 2u);
  EXPECT_GT(stats.bubble(), 0);  // one call: each device idles while the other works
}

TEST(PlacedExecutable, AFailingStageNamesItsOpAndStopsTheOtherDevices) {
  std::unique_ptr<Module> m;
  Function& f = parsed(m, R"(
func @main(%t: f32[8,4], %i: i32[3], %x: f32[4]) -> (f32[3,4], f32[4]) {
  %g = gather %t, %i {device = 1}
  %a = exp %x {device = 0}
  %b = tanh %g {device = 0}
  return %b, %a
}
)");
  auto placed = PlacedExecutable::compile(f, 2, cpu());
  ASSERT_TRUE(placed.ok()) << placed.error().str();
  std::vector<Tensor> inputs = randomInputs(f, 1);
  inputs[1].setDouble(2, 40);  // out of range
  auto got = (*placed)->run(inputs);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.error().str().find("placed.kiln:3:"), std::string::npos) << got.error().str();
  // The same executable runs again, on good inputs, afterwards.
  inputs[1].setDouble(2, 1);
  EXPECT_TRUE((*placed)->run(inputs).ok());
}

TEST(PlacedExecutable, InputsAreCheckedAndCudaNeedsAGpuPerDevice) {
  std::unique_ptr<Module> m;
  Function& f = parsed(m, R"(
func @main(%x: f32[4]) -> f32[4] {
  %a = exp %x {device = 1}
  return %a
}
)");
  auto placed = PlacedExecutable::compile(f, 2, cpu());
  ASSERT_TRUE(placed.ok()) << placed.error().str();
  auto wrong = (*placed)->run({Tensor({DType::F32, {5}})});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message().find("expected f32[4], got f32[5]"), std::string::npos) << wrong.error().message();
  codegen::CompileOptions cuda;
  cuda.target = codegen::Target::Cuda;
  // Without a driver that says so; with fewer GPUs than devices (ctest's simulator has one) it
  // names both counts and how the simulator presents more.
  auto onCuda = PlacedExecutable::compile(f, 64, cuda);
  ASSERT_FALSE(onCuda.ok());
  const std::string& why = onCuda.error().message();
  EXPECT_TRUE(why.find("--devices 64 on cuda puts the stages on 64 GPUs, but the driver sees") != std::string::npos ||
              why.find("libcuda") != std::string::npos || why.find("without the CUDA toolkit") != std::string::npos)
      << why;
}

// Two layers, the second on device 1: params %w1 %w2, data %x %y.
constexpr const char* kPlacedMlp = R"(
func @loss(%w1: f32[4,8], %w2: f32[8,3], %x: f32[16,4], %y: i32[16]) -> f32[] {
  %h = matmul %x, %w1
  %a = tanh %h
  %o = matmul %a, %w2 {device = 1}
  %l = softmax_cross_entropy %o, %y
  %loss = reduce_mean %l
  return %loss
}
)";

TEST(PlacedTraining, TwoDevicesTrainToTheOneDeviceBits) {
  std::unique_ptr<Module> m;
  Function& f = parsed(m, kPlacedMlp);
  std::vector<Tensor> init = randomInputs(f, 9);
  std::vector<Tensor> data = {init[2], init[3]};
  for (int64_t i = 0; i < data[1].numElements(); ++i) data[1].setDouble(i, static_cast<double>(i % 3));
  init.resize(2);
  std::vector<std::vector<double>> losses(2);
  std::vector<std::vector<Tensor>> params(2);
  for (int devices : {0, 2}) {
    TrainOptions o;
    o.spec = {{"w1", "w2"}, *passes::parseOptimizer("adam")};
    o.backend = Backend::Cpu;
    o.devices = devices;
    auto t = TrainStep::create(f, o);
    ASSERT_TRUE(t.ok()) << t.error().str();
    ASSERT_TRUE((*t)->setParams(init).ok());
    for (int s = 0; s < 5; ++s) {
      auto r = (*t)->step(data, 0.05f);
      ASSERT_TRUE(r.ok()) << r.error().str();
      losses[devices / 2].push_back(r->loss);
    }
    params[devices / 2] = *(*t)->params();
  }
  EXPECT_EQ(losses[0], losses[1]);
  for (size_t i = 0; i < params[0].size(); ++i) EXPECT_TRUE(params[0][i] == params[1][i]) << "parameter " << i;
  EXPECT_LT(losses[0].back(), losses[0].front());
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

TEST(PipelinedTraining, MicroBatchesThroughTheStagesEqualAccumulatingThem) {
  std::unique_ptr<Module> m;
  Function& f = parsed(m, kPlacedMlp);
  std::vector<Tensor> init = randomInputs(f, 4);
  std::vector<Tensor> data = {init[2], init[3]};
  for (int64_t i = 0; i < data[1].numElements(); ++i) data[1].setDouble(i, static_cast<double>((i * 7) % 3));
  init.resize(2);
  auto train = [&](int devices, bool pipeline, PipelineSchedule schedule) {
    TrainOptions o;
    o.spec = {{"w1", "w2"}, *passes::parseOptimizer("momentum")};
    o.backend = Backend::Cpu;
    o.accumulate = 4;
    o.devices = devices;
    o.pipeline = pipeline;
    o.schedule = schedule;
    auto t = TrainStep::create(f, o);
    EXPECT_TRUE(t.ok()) << t.error().str();
    EXPECT_TRUE((*t)->setParams(init).ok());
    std::vector<double> losses;
    for (int s = 0; s < 3; ++s) {
      auto r = (*t)->step(data, 0.1f);
      EXPECT_TRUE(r.ok()) << r.error().str();
      losses.push_back(r->loss);
    }
    EXPECT_EQ((*t)->pipelined(), pipeline);
    if (pipeline) {
      EXPECT_GT((*t)->pipelineBubble(), 0);
    }
    return std::pair(losses, *(*t)->params());
  };
  auto [wantLosses, wantParams] = train(0, false, PipelineSchedule::FillDrain);
  for (PipelineSchedule schedule : {PipelineSchedule::FillDrain, PipelineSchedule::OneForwardOneBackward}) {
    SCOPED_TRACE(pipelineScheduleName(schedule));
    auto [losses, params] = train(2, true, schedule);
    EXPECT_EQ(losses, wantLosses);
    for (size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(params[i] == wantParams[i]) << "parameter " << i;
  }
}

TEST(StageChain, ThreeDevicesPipelineIndependentCallsUnderBothSchedules) {
  std::unique_ptr<Module> m;
  Function& f = parsed(m, R"(
func @main(%x: f32[16,8], %w: f32[8,8]) -> f32[16,8] {
  %a = matmul %x, %w {device = 0}
  %b = tanh %a {device = 1}
  %c = mul %b, %b {device = 2}
  %d = sub %c, %x {device = 0}
  return %d
}
)");
  auto placed = PlacedExecutable::compile(f, 3, cpu());
  ASSERT_TRUE(placed.ok()) << placed.error().str();
  // Four calls on four inputs; each call's result is the one-call run's.
  std::vector<Tensor> given;
  std::vector<ChainCall> calls;
  for (int c = 0; c < 4; ++c) {
    std::vector<Tensor> in = randomInputs(f, static_cast<uint64_t>(c));
    calls.push_back({placed->get(), {{-1, static_cast<int>(given.size())}, {-1, static_cast<int>(given.size()) + 1}}});
    given.insert(given.end(), in.begin(), in.end());
  }
  for (PipelineSchedule schedule : {PipelineSchedule::FillDrain, PipelineSchedule::OneForwardOneBackward}) {
    ChainStats stats;
    auto out = runChain(calls, given, schedule, &stats);
    ASSERT_TRUE(out.ok()) << out.error().str();
    ASSERT_EQ(out->size(), 4u);
    for (int c = 0; c < 4; ++c) {
      auto one = (*placed)->run({given[2 * c], given[2 * c + 1]});
      ASSERT_TRUE(one.ok());
      EXPECT_TRUE((*out)[c][0] == (*one)[0]) << "call " << c;
    }
    EXPECT_EQ(stats.runs.size(), 4u * (*placed)->partition().stages.size());
    EXPECT_EQ(stats.busyMs.size(), 3u);
  }
  EXPECT_DOUBLE_EQ(fillDrainBubble(2, 4), 0.2);
  EXPECT_DOUBLE_EQ(fillDrainBubble(4, 1), 0.75);
}

}  // namespace
}  // namespace kiln
