// The public API's compile and run: every backend against the interpreter, device tensors, dumps,
// and the errors for wrong inputs and unusable backends.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <span>
#include <string>

namespace {

kiln::Graph mlp() {
  auto g = kiln::Graph::load(std::string(KILN_SOURCE_DIR) + "/examples/mlp.kiln");
  EXPECT_TRUE(g) << g.error().str();
  return *g;
}

double maxDifference(const kiln::Tensor& a, const kiln::Tensor& b) {
  double worst = 0;
  for (int64_t i = 0; i < a.numElements(); ++i) worst = std::max(worst, std::abs(a.getDouble(i) - b.getDouble(i)));
  return worst;
}

// True where the cuda backend can run here: a GPU, or the simulator ctest selects
// (KILN_CUDA_DRIVER). Asked of kiln itself, so that a real GPU without the variable counts too.
bool cudaUsable() {
  static const bool usable = [] {
    kiln::CompileOptions options;
    options.backend = kiln::Backend::Cuda;
    return static_cast<bool>(kiln::compile(mlp(), options));
  }();
  return usable;
}

// Every backend that runs here: the interpreter, the CPU and, where usable, cuda.
std::vector<kiln::Backend> backendsHere() {
  std::vector<kiln::Backend> backends = {kiln::Backend::Interp, kiln::Backend::Cpu};
  if (cudaUsable()) backends.push_back(kiln::Backend::Cuda);
  return backends;
}

kiln::Expected<kiln::CompiledFunction> compileFor(const kiln::Graph& g, kiln::Backend backend) {
  kiln::CompileOptions options;
  options.backend = backend;
  return kiln::compile(g, options);
}

TEST(ApiCompile, EveryBackendMatchesTheInterpreter) {
  kiln::Graph g = mlp();
  std::vector<kiln::Tensor> inputs = *g.randomInputs(5);
  auto expected = g.interpret(inputs);
  ASSERT_TRUE(expected);
  for (kiln::Backend backend : backendsHere()) {
    SCOPED_TRACE(std::string(kiln::backendName(backend)));
    auto f = compileFor(g, backend);
    ASSERT_TRUE(f) << f.error().str();
    EXPECT_EQ(f->backend(), backend);
    EXPECT_EQ(f->signature().name, "main");
    EXPECT_EQ(f->signature().params.size(), 5u);
    auto r = f->run(inputs);
    ASSERT_TRUE(r) << r.error().str();
    ASSERT_EQ(r->size(), 1u);
    EXPECT_LE(maxDifference((*r)[0], (*expected)[0]), 1e-5);
    EXPECT_EQ(f->kernels().empty(), backend == kiln::Backend::Interp);
  }
}

TEST(ApiCompile, ViewsOfTheCallersMemoryRunLikeTensors) {
  kiln::Graph g = mlp();
  std::vector<kiln::Tensor> inputs = *g.randomInputs(6);
  std::vector<kiln::TensorView> views = kiln::viewsOf(inputs);
  for (kiln::Backend backend : backendsHere()) {
    SCOPED_TRACE(std::string(kiln::backendName(backend)));
    auto f = compileFor(g, backend);
    ASSERT_TRUE(f) << f.error().str();
    auto fromViews = f->run(std::span<const kiln::TensorView>(views));
    auto fromTensors = f->run(inputs);
    ASSERT_TRUE(fromViews && fromTensors) << (fromViews ? fromTensors.error().str() : fromViews.error().str());
    EXPECT_TRUE((*fromViews)[0] == (*fromTensors)[0]);
    views[1].data = nullptr;
    auto missing = f->run(std::span<const kiln::TensorView>(views));
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.error().str().find("input 1 has no data"), std::string::npos) << missing.error().str();
    views[1].data = inputs[1].data();
  }
}

TEST(ApiCompile, AutoPicksABackendThatRunsHere) {
  auto f = kiln::compile(mlp());
  ASSERT_TRUE(f) << f.error().str();
  EXPECT_EQ(f->backend(), cudaUsable() ? kiln::Backend::Cuda : kiln::Backend::Cpu);
}

TEST(ApiCompile, WrongInputsAreErrors) {
  kiln::Graph g = mlp();
  kiln::CompileOptions options;
  options.backend = kiln::Backend::Cpu;
  auto f = kiln::compile(g, options);
  ASSERT_TRUE(f) << f.error().str();
  std::vector<kiln::Tensor> inputs = *g.randomInputs(1);
  inputs.pop_back();
  auto fewer = f->run(inputs);
  ASSERT_FALSE(fewer);
  EXPECT_NE(fewer.error().str().find("takes 5 inputs, got 4"), std::string::npos) << fewer.error().str();
  inputs.push_back(kiln::Tensor({kiln::DType::F16, {10}}));
  auto wrongType = f->run(inputs);
  ASSERT_FALSE(wrongType);
  EXPECT_NE(wrongType.error().str().find("f16[10]"), std::string::npos) << wrongType.error().str();
  // Device tensors need the cuda backend.
  auto device = f->run(std::vector<kiln::DeviceTensor>{});
  ASSERT_FALSE(device);
  EXPECT_NE(device.error().str().find("device tensors need the cuda backend"), std::string::npos);
  // An unknown function and an unknown pass.
  options.function = "nope";
  EXPECT_FALSE(kiln::compile(g, options));
  options.function = "";
  options.disabledPasses = {"no-such-pass"};
  auto pass = kiln::compile(g, options);
  ASSERT_FALSE(pass);
  EXPECT_NE(pass.error().str().find("no-such-pass"), std::string::npos) << pass.error().str();
}

TEST(ApiCompile, DumpsEachStage) {
  kiln::CompileOptions options;
  options.backend = kiln::Backend::Cpu;
  auto f = kiln::compile(mlp(), options);
  ASSERT_TRUE(f) << f.error().str();
  auto kiln = f->dump(kiln::Stage::Kiln);
  ASSERT_TRUE(kiln) << kiln.error().str();
  EXPECT_NE(kiln->find("func @main"), std::string::npos);
  EXPECT_NE(f->dump(kiln::Stage::LlvmUnoptimized)->find("define"), std::string::npos);
  EXPECT_NE(f->dump(kiln::Stage::Llvm)->find("define"), std::string::npos);
  EXPECT_FALSE(f->dump(kiln::Stage::Code)->empty());
  options.backend = kiln::Backend::Interp;
  auto interp = kiln::compile(mlp(), options);
  ASSERT_TRUE(interp);
  EXPECT_TRUE(interp->dump(kiln::Stage::Kiln));
  EXPECT_FALSE(interp->dump(kiln::Stage::Code));
}

TEST(ApiCompile, DeviceTensorsStayOnTheGpu) {
  if (!cudaUsable()) GTEST_SKIP() << "no cuda backend here (no GPU, and no KILN_CUDA_DRIVER naming the GPU simulator)";
  kiln::Graph g = mlp();
  kiln::CompileOptions options;
  options.backend = kiln::Backend::Cuda;
  auto f = kiln::compile(g, options);
  ASSERT_TRUE(f) << f.error().str();
  std::vector<kiln::Tensor> inputs = *g.randomInputs(2);
  std::vector<kiln::DeviceTensor> device;
  for (const kiln::Tensor& t : inputs) device.push_back(*kiln::DeviceTensor::upload(t));
  auto r = f->run(device);
  ASSERT_TRUE(r) << r.error().str();
  auto host = (*r)[0].download();
  ASSERT_TRUE(host);
  EXPECT_LE(maxDifference(*host, (*g.interpret(inputs))[0]), 1e-5);
  EXPECT_NE(f->dump(kiln::Stage::Code)->find(".entry"), std::string::npos);
}

TEST(ApiCompile, ReportsItsVersion) {
  EXPECT_EQ(std::string(kiln::version()), KILN_VERSION_STRING);
  EXPECT_EQ(kiln::backendName(*kiln::parseBackend("cpu")), "cpu");
  EXPECT_FALSE(kiln::parseBackend("tpu"));
}

}  // namespace

namespace {

// Placement through the public API: the builder writes `device` like any attribute, and a
// function compiled across two devices gives the one-device results.
TEST(ApiPlacement, ABuiltFunctionPlacedOnTwoDevicesComputesWhatOneDoes) {
  kiln::FunctionBuilder b("main");
  kiln::Node x = b.param({kiln::DType::F32, {8, 16}}, "x");
  kiln::Node w = b.param({kiln::DType::F32, {16, 4}}, "w");
  kiln::Node h = b.op("matmul", {x, w}, {{"device", int64_t{0}}});
  kiln::Node y = b.op("tanh", {h}, {{"device", int64_t{1}}});
  auto g = b.finish({y});
  ASSERT_TRUE(g) << g.error().str();
  auto inputs = *g->randomInputs(2);
  kiln::CompileOptions one;
  one.backend = kiln::Backend::Cpu;
  auto want = kiln::compile(*g, one)->run(inputs);
  ASSERT_TRUE(want) << want.error().str();
  for (kiln::Backend backend : {kiln::Backend::Cpu, kiln::Backend::Interp}) {
    kiln::CompileOptions two = one;
    two.backend = backend;
    two.devices = 2;
    auto f = kiln::compile(*g, two);
    ASSERT_TRUE(f) << f.error().str();
    auto got = f->run(inputs);
    ASSERT_TRUE(got) << got.error().str();
    EXPECT_LE(maxDifference((*want)[0], (*got)[0]), 1e-6);
    EXPECT_NE(f->dump(kiln::Stage::Kiln)->find("= transfer %0 {from = 0, to = 1}"), std::string::npos) << *f->dump(kiln::Stage::Kiln);
  }
  kiln::CompileOptions placed = one;
  placed.devices = 2;
  auto f = kiln::compile(*g, placed);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kernels().front().rfind("main.d0.s0/", 0), 0u) << f->kernels().front();
  // A device the placement needs and the options lack is an error at the op.
  placed.devices = 1;
  auto lacking = kiln::compile(*g, placed);
  ASSERT_FALSE(lacking);
  EXPECT_NE(lacking.error().message().find("device 1 does not exist"), std::string::npos) << lacking.error().message();
  placed.devices = 0;
  placed.split = true;
  EXPECT_FALSE(kiln::compile(*g, placed));
}

}  // namespace
