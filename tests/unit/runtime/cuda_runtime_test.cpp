// The CUDA runtime: launch shapes and library loading everywhere; on a GPU (skipped visibly
// without one) device tensors, device-resident runs, CUDA graph replay, profiling and the errors
// for out-of-memory, bad PTX and wrong inputs. Numerics on CUDA are checked by the differential
// tests (pipeline_differential_test.cpp, tests/unit/codegen/*), which add CUDA where a GPU is.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kiln_internal.h"
#include "runtime/launch_shape.h"
#if KILN_HAVE_CUDA
#include "runtime/cuda/context.h"
#include "runtime/cuda/driver.h"
#include "runtime/cuda/dynamic_library.h"
#include "runtime/cuda/module.h"
#include "runtime/cuda/program.h"
#endif

namespace kiln {
namespace {

TEST(LaunchShape, OneThreadPerLaneCappedAtOneWave) {
  EXPECT_EQ(launchShape(0, 1, 132, 8).blocks, 0u);  // nothing to do: no launch
  EXPECT_EQ(launchShape(1, 1, 132, 8).blocks, 1u);
  EXPECT_EQ(launchShape(256, 1, 132, 8).blocks, 1u);
  EXPECT_EQ(launchShape(257, 1, 132, 8).blocks, 2u);
  // A warp per row: 100 rows of 32 lanes are 3200 threads, 13 blocks of 256.
  EXPECT_EQ(launchShape(100, 32, 132, 8).blocks, 13u);
  // 2^30 items would need 4M blocks; one wave of 132 SMs x 8 blocks loops over them instead.
  LaunchShape big = launchShape(int64_t{1} << 30, 1, 132, 8);
  EXPECT_EQ(big.blocks, 132u * 8);
  EXPECT_EQ(big.threadsPerBlock, 256u);
  // An occupancy of 0 (the calculator failed) still launches.
  EXPECT_EQ(launchShape(1000, 1, 132, 0).blocks, 4u);
}

TEST(CudaRuntime, CpuExecutableRefusesDeviceTensors) {
  auto m = parseModule("func @main(%x: f32[2]) -> f32[2] {\n  %y = neg %x\n  return %y\n}\n", "t.kiln");
  ASSERT_TRUE(m.ok());
  auto exe = Executable::compile(*(*m)->entry(), {});
  ASSERT_TRUE(exe.ok()) << exe.error().str();
  auto r = (*exe)->runOnDevice({});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("Target::Cuda"), std::string::npos) << r.error().str();
}

#if KILN_HAVE_CUDA

TEST(DynamicLibrary, MissingLibraryListsEveryPlaceTried) {
  auto lib = cuda::DynamicLibrary::open("a test library", {"libkiln-does-not-exist.so.7"}, "install it");
  ASSERT_FALSE(lib.ok());
  const std::string& m = lib.error().message();
  EXPECT_NE(m.find("cannot load a test library; tried:"), std::string::npos) << m;
  EXPECT_NE(m.find("libkiln-does-not-exist.so.7: "), std::string::npos) << m;
  EXPECT_NE(m.find("/lib64/libkiln-does-not-exist.so.7"), std::string::npos) << m;  // the toolkit's folder too
  EXPECT_NE(m.find("\ninstall it"), std::string::npos) << m;
}

TEST(DynamicLibrary, FindsSymbols) {
  auto lib = cuda::DynamicLibrary::open("libm", {"libm.so.6"}, "");
  ASSERT_TRUE(lib.ok()) << lib.error().str();
  EXPECT_NE(lib->symbol("cos"), nullptr);
  EXPECT_EQ(lib->symbol("kiln_no_such_symbol"), nullptr);
}

// Whether this machine runs CUDA; the reason is printed where it does not.
TEST(CudaBackend, Present) {
  auto device = cuda::Device::get();
  if (!device) GTEST_SKIP() << "no GPU here, CUDA runtime tests and CUDA halves of the differential tests skipped: "
                            << device.error().message();
  std::cout << "running on " << (*device)->describe() << "\n";
}

class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto device = cuda::Device::get();
    if (!device) GTEST_SKIP() << "no GPU: " << device.error().message();
  }
  std::unique_ptr<Executable> compile(const std::string& text) {
    auto m = parseModule(text, "t.kiln");
    EXPECT_TRUE(m.ok()) << m.error().str();
    module_ = std::move(*m);
    codegen::CompileOptions options;
    options.target = codegen::Target::Cuda;
    auto exe = Executable::compile(*module_->entry(), options);
    EXPECT_TRUE(exe.ok()) << exe.error().str();
    return exe.ok() ? std::move(*exe) : nullptr;
  }
  std::unique_ptr<Module> module_;
};

constexpr const char* kSoftmax = R"(func @main(%x: f32[64,1000], %b: f32[1000]) -> f32[64,1000] {
  %y = add %x, %b
  %s = softmax %y {axis = 1}
  return %s
}
)";

TEST_F(CudaTest, DeviceTensorsRoundTrip) {
  Tensor host = randomTensor({DType::F32, {3, 1000}}, 5);
  auto d = DeviceTensor::upload(host);
  ASSERT_TRUE(d.ok()) << d.error().str();
  EXPECT_NE(d->address(), 0u);
  auto back = d->download();
  ASSERT_TRUE(back.ok()) << back.error().str();
  EXPECT_EQ(*back, host);
  auto z = DeviceTensor::zeros({DType::I32, {5}});
  ASSERT_TRUE(z.ok());
  EXPECT_EQ(*z->download(), Tensor(TensorType{DType::I32, {5}}));
}

// Uploads of 1 MiB and more go through pinned staging on their own stream; a run on the
// program's stream right after must see all of it (the simulator's initcheck found kernels
// reading inputs whose last chunks were still in flight). Several rounds: it was a race.
TEST_F(CudaTest, StagedUploadsAreCompleteBeforeTheNextRun) {
  auto exe = compile(R"(func @main(%x: f32[1024,1024]) -> f32[1024,1024] {
  %y = mul %x, %x
  return %y
}
)");
  ASSERT_TRUE(exe);
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    std::vector<Tensor> inputs = randomInputs(exe->function(), seed);
    auto host = exe->run(inputs);
    ASSERT_TRUE(host.ok()) << host.error().str();
    auto x = DeviceTensor::upload(inputs[0]);
    ASSERT_TRUE(x.ok()) << x.error().str();
    auto device = exe->runOnDevice({*x});
    ASSERT_TRUE(device.ok()) << device.error().str();
    EXPECT_EQ(*(*device)[0].download(), (*host)[0]) << "seed " << seed;
  }
}

TEST_F(CudaTest, DeviceRunsMatchHostRunsAndChain) {
  auto exe = compile(kSoftmax);
  ASSERT_TRUE(exe);
  std::vector<Tensor> inputs = randomInputs(exe->function(), 3);
  auto host = exe->run(inputs);
  ASSERT_TRUE(host.ok()) << host.error().str();
  std::vector<DeviceTensor> onDevice;
  for (const Tensor& t : inputs) onDevice.push_back(*DeviceTensor::upload(t));
  auto device = exe->runOnDevice(onDevice);
  ASSERT_TRUE(device.ok()) << device.error().str();
  ASSERT_EQ(device->size(), 1u);
  EXPECT_EQ(*(*device)[0].download(), (*host)[0]);
  // A result feeds the next run without leaving the GPU.
  auto again = exe->runOnDevice({(*device)[0], onDevice[1]});
  ASSERT_TRUE(again.ok()) << again.error().str();
  auto want = exe->run({(*host)[0], inputs[1]});
  EXPECT_EQ(*(*again)[0].download(), (*want)[0]);
}

// The third run replays a captured graph; it must see each run's new input values.
TEST_F(CudaTest, GraphReplaySeesNewInputs) {
  auto exe = compile(kSoftmax);
  ASSERT_TRUE(exe);
  ASSERT_TRUE(exe->cudaProgram()->capturable());
  ExecuteOptions eager;
  eager.cudaGraph = false;
  for (uint64_t seed = 0; seed < 5; ++seed) {
    std::vector<Tensor> inputs = randomInputs(exe->function(), seed);
    auto graphed = exe->run(inputs);
    auto plain = exe->run(inputs, eager);
    ASSERT_TRUE(graphed.ok()) << graphed.error().str();
    ASSERT_TRUE(plain.ok()) << plain.error().str();
    EXPECT_EQ((*graphed)[0], (*plain)[0]) << "seed " << seed;
  }
}

TEST_F(CudaTest, ProfilingTimesEveryKernelAndTheStep) {
  auto exe = compile(kSoftmax);
  ASSERT_TRUE(exe);
  std::map<std::string, double> kernels;
  double step = -1;
  ExecuteOptions options;
  options.kernelMilliseconds = &kernels;
  options.stepMilliseconds = &step;
  ASSERT_TRUE(exe->run(randomInputs(exe->function(), 0), options).ok());
  EXPECT_GT(step, 0);
  for (const std::string& name : exe->kernelNames()) EXPECT_GT(kernels[name], 0) << name;
}

TEST_F(CudaTest, WrongInputsAreRefused) {
  auto exe = compile(kSoftmax);
  ASSERT_TRUE(exe);
  auto r = exe->run({Tensor(TensorType{DType::F32, {64, 1000}})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "@main takes 2 inputs, got 1");
  auto t = exe->run({Tensor(TensorType{DType::F32, {64, 1000}}), Tensor(TensorType{DType::F16, {1000}})});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message(), "input 1 (%b): expected f32[1000], got f16[1000]");
}

TEST_F(CudaTest, OutOfMemoryIsAClearError) {
  auto huge = DeviceTensor::zeros({DType::F32, {int64_t{1} << 42}});  // 16 TiB
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.error().message().find("out of device memory"), std::string::npos) << huge.error().str();
}

TEST_F(CudaTest, BadPtxShowsTheJitLog) {
  auto module = cuda::LoadedModule::load(".version 8.0\n.target sm_80\n.address_size 64\nthis is not ptx\n", "@broken");
  ASSERT_FALSE(module.ok());
  EXPECT_NE(module.error().message().find("could not load the PTX of @broken"), std::string::npos)
      << module.error().str();
}

// A donated parameter is updated in place: the result is the parameter's memory, with the values
// a run without donation computes.
TEST_F(CudaTest, DonatedParametersAreUpdatedInPlace) {
  auto exe = compile(R"(func @main(%p: f32[100000], %g: f32[100000]) -> f32[100000] {
  %lr = constant 0.1 : f32[]
  %s = mul %g, %lr
  %q = sub %p, %s
  return %q
}
)");
  ASSERT_TRUE(exe);
  std::vector<Tensor> inputs = randomInputs(exe->function(), 9);
  auto want = exe->run(inputs);
  ASSERT_TRUE(want.ok()) << want.error().str();
  DeviceTensor p = *DeviceTensor::upload(inputs[0]), g = *DeviceTensor::upload(inputs[1]);
  ExecuteOptions options;
  options.donated = {true, false};
  auto got = exe->runOnDevice({p, g}, options);
  ASSERT_TRUE(got.ok()) << got.error().str();
  EXPECT_EQ((*got)[0].address(), p.address());
  EXPECT_EQ(*(*got)[0].download(), (*want)[0]);
  options.donated = {true};
  auto bad = exe->runOnDevice({(*got)[0], g}, options);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "ExecuteOptions::donated has 1 entries for 2 inputs");
}

TEST_F(CudaTest, KernelErrorsNameTheOp) {
  auto exe = compile(R"(func @main(%t: f32[5,3], %i: i32[2]) -> f32[2,3] {
  %g = gather %t, %i {axis = 0}
  return %g
}
)");
  ASSERT_TRUE(exe);
  Tensor table(TensorType{DType::F32, {5, 3}}), index(TensorType{DType::I32, {2}});
  index.setInt(1, 7);
  auto r = exe->run({table, index});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("gather"), std::string::npos) << r.error().str();
  EXPECT_EQ(r.error().loc().line, 2);
  // The error word is reset: the next good run succeeds.
  index.setInt(1, 4);
  EXPECT_TRUE(exe->run({table, index}).ok());
}

// A while's condition comes back with the kernels' error word in one copy: a failing kernel in
// the condition stops the loop with its own error; a good condition runs the loop to its end.
TEST_F(CudaTest, AWhileConditionsKernelErrorStopsTheLoop) {
  auto exe = compile(R"(func @main(%t: f32[5], %i: i32[1], %x: f32[4]) -> f32[4] {
  %zero = constant 0 : i32[]
  %n, %y = while %zero, %x (%k: i32[], %v: f32[4]) cond {
    %g = gather %t, %i {axis = 0}
    %limit = reduce_sum %g
    %kf = cast %k {to = f32}
    %c = lt %kf, %limit
    yield %c
  } body {
    %one = constant 1 : i32[]
    %k1 = add %k, %one
    %v1 = add %v, %v
    yield %k1, %v1
  }
  return %y
}
)");
  ASSERT_TRUE(exe);
  Tensor table(TensorType{DType::F32, {5}}), index(TensorType{DType::I32, {1}}), x(TensorType{DType::F32, {4}});
  table.setDouble(2, 3);  // the trip count, read through the gather
  for (int k = 0; k < 4; ++k) x.setDouble(k, k + 1);
  index.setInt(0, 9);
  auto r = exe->run({table, index, x});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("gather"), std::string::npos) << r.error().str();
  EXPECT_EQ(r.error().loc().line, 4);
  index.setInt(0, 2);
  auto good = exe->run({table, index, x});
  ASSERT_TRUE(good.ok()) << good.error().str();
  for (int k = 0; k < 4; ++k) EXPECT_EQ((*good)[0].getDouble(k), 8.0 * (k + 1));  // doubled three times
}

// A body that swaps two carried values gets copies of them (whileBodyReadsCarriedInPlace is
// false); one that yields an argument in its own position reads them in place and skips that
// copy. Both give the interpreter's values.
TEST_F(CudaTest, WhileBodiesReadTheCarriedValuesInPlaceOrFromCopies) {
  for (const char* yield : {"yield %k1, %w, %v", "yield %k1, %v1, %w"}) {
    SCOPED_TRACE(yield);
    auto exe = compile(std::string(R"(func @main(%x: f32[64], %y: f32[64]) -> (f32[64], f32[64]) {
  %zero = constant 0 : i32[]
  %five = constant 5 : i32[]
  %n, %a, %b = while %zero, %x, %y (%k: i32[], %v: f32[64], %w: f32[64]) cond {
    %c = lt %k, %five
    yield %c
  } body {
    %one = constant 1 : i32[]
    %k1 = add %k, %one
    %v1 = add %v, %w
    )") + yield + R"(
  }
  return %a, %b
}
)");
    ASSERT_TRUE(exe);
    std::vector<Tensor> inputs = randomInputs(exe->function(), 4);
    auto want = interpret(exe->function(), inputs);
    ASSERT_TRUE(want.ok()) << want.error().str();
    auto got = exe->run(inputs);
    ASSERT_TRUE(got.ok()) << got.error().str();
    EXPECT_EQ((*got)[0], (*want)[0]);
    EXPECT_EQ((*got)[1], (*want)[1]);
  }
}

TEST_F(CudaTest, AChildForkedAfterTheDriverStartedIsToldWhy) {
  // NVIDIA's driver (and the simulator) refuses every call in a child forked after cuInit, with
  // CUDA_ERROR_NOT_INITIALIZED: kiln names the cause instead.
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    auto device = cuda::Device::get();
    std::string message = device ? "the GPU was usable" : device.error().message();
    ssize_t written = write(fds[1], message.data(), message.size());
    _exit(written == static_cast<ssize_t>(message.size()) ? 0 : 1);
  }
  ASSERT_GT(pid, 0);
  close(fds[1]);
  std::string message;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) message.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_NE(message.find("it was forked from process " + std::to_string(getpid()) + " after that one started the CUDA driver"),
            std::string::npos)
      << message;
  EXPECT_TRUE(cuda::Device::get().ok()) << "the parent keeps its GPU";
}

#endif

}  // namespace
}  // namespace kiln
