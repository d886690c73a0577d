// cuBLASLt and cuDNN library calls. Without a GPU: loading each library works or fails with a
// clear message (never a crash). With one: matmuls and convolutions (forward with their fused
// epilogues, and both backward convolutions) against the interpreter or a host reference.
#include <gtest/gtest.h>

#if KILN_HAVE_CUDA

#include "codegen/library_call.h"
#include "codegen/optimize.h"
#include "runtime/cuda/context.h"
#include "runtime/cuda/cublaslt.h"
#include "runtime/cuda/cudnn.h"
#include "runtime/cuda/driver.h"
#include "runtime/cuda/dynamic_library.h"
#include "tests/unit/codegen/cpu_test_util.h"

namespace kiln::cuda {
namespace {

TEST(LibraryLoading, CublasLtLoadsOrSaysWhy) {
  auto lib = cublasLtLibrary();
  if (lib.ok()) {
    EXPECT_GE((*lib)->version, 130000u) << (*lib)->path;
    EXPECT_NE((*lib)->cublasLtMatmul, nullptr);
    EXPECT_EQ(cublasStatusName(CUBLAS_STATUS_NOT_SUPPORTED).rfind("CUBLAS_STATUS_NOT_SUPPORTED", 0), 0u);
  } else {
    EXPECT_NE(lib.error().message().find("cuBLASLt"), std::string::npos) << lib.error().message();
  }
  // Asking again gives the same answer (loaded once per process).
  EXPECT_EQ(cublasLtLibrary().ok(), lib.ok());
}

TEST(LibraryLoading, CudnnLoadsOrSaysWhy) {
  auto lib = cudnnLibrary();
  if (lib.ok()) {
    EXPECT_GE((*lib)->version, 90000u) << (*lib)->path;
    EXPECT_NE((*lib)->cudnnConvolutionBiasActivationForward, nullptr);
    EXPECT_EQ(cudnnStatusName(CUDNN_STATUS_BAD_PARAM).rfind("CUDNN_STATUS_BAD_PARAM", 0), 0u);
  } else {
    EXPECT_NE(lib.error().message().find("cuDNN"), std::string::npos) << lib.error().message();
  }
}

// The primary context of device 0 (kiln's Device), made current.
Status makeContextCurrent() {
  auto device = Device::get(0);
  if (!device) return device.error();
  return (*device)->makeCurrent();
}

TEST(LibraryLoading, HandlesNeedTheDriver) {
  if (driver().ok()) GTEST_SKIP() << "a driver is present: handle creation is tested with the GPU tests";
  auto lt = CublasLt::create();
  ASSERT_FALSE(lt.ok());
  EXPECT_EQ(lt.error().message(), driver().error().message());
  auto dnn = Cudnn::create();
  ASSERT_FALSE(dnn.ok());
  EXPECT_EQ(dnn.error().message(), driver().error().message());
}

// On the simulator a vendor library is used only where its stand-in is selected
// (KILN_CUBLASLT_LIBRARY, KILN_CUDNN_LIBRARY); otherwise the message says which variable selects it.
TEST(LibraryLoading, SimulatorUsesStandInsOrDeclines) {
  auto d = driver();
  if (!d.ok() || !(*d)->simulated) GTEST_SKIP() << "not on the GPU simulator";
  ASSERT_TRUE(makeContextCurrent().ok());
  auto lt = CublasLt::create();
  if (isOverridden("KILN_CUBLASLT_LIBRARY")) {
    EXPECT_TRUE(lt.ok()) << lt.error().message();
  } else {
    ASSERT_FALSE(lt.ok());
    EXPECT_NE(lt.error().message().find("cuBLASLt does not run on the GPU simulator"), std::string::npos)
        << lt.error().message();
    EXPECT_NE(lt.error().message().find("set KILN_CUBLASLT_LIBRARY to"), std::string::npos) << lt.error().message();
  }
  auto dnn = Cudnn::create();
  if (isOverridden("KILN_CUDNN_LIBRARY")) {
    EXPECT_TRUE(dnn.ok()) << dnn.error().message();
  } else {
    ASSERT_FALSE(dnn.ok());
    EXPECT_NE(dnn.error().message().find("cuDNN does not run on the GPU simulator"), std::string::npos)
        << dnn.error().message();
  }
}

// --- GPU tests: skipped, with the driver's reason, where there is no GPU. ---

#define KILN_REQUIRE_GPU()                                                                     \
  if (Status kiln_gpu_ = makeContextCurrent(); !kiln_gpu_.ok())                                \
    GTEST_SKIP() << "no GPU: " << kiln_gpu_.error().message();

// A vendor library: a GPU's, or on the simulator its stand-in, which `variable` selects.
#define KILN_REQUIRE_LIBRARY(variable, library)                                                \
  KILN_REQUIRE_GPU();                                                                          \
  if (api().simulated && !isOverridden(variable))                                              \
    GTEST_SKIP() << "on the GPU simulator without " variable " (its " library " stand-in)";
#define KILN_REQUIRE_CUBLASLT() KILN_REQUIRE_LIBRARY("KILN_CUBLASLT_LIBRARY", "cuBLASLt")
#define KILN_REQUIRE_CUDNN() KILN_REQUIRE_LIBRARY("KILN_CUDNN_LIBRARY", "cuDNN")

// Device copies of tensors, freed at the end of the test.
class DeviceBuffers {
 public:
  ~DeviceBuffers() {
    for (CUdeviceptr p : owned_) api().cuMemFree(p);
  }
  CUdeviceptr upload(const Tensor& t) {
    CUdeviceptr p = allocate(t.byteSize());
    EXPECT_EQ(api().cuMemcpyHtoDAsync(p, t.data(), t.byteSize(), nullptr), CUDA_SUCCESS);
    return p;
  }
  CUdeviceptr allocate(size_t bytes) {
    CUdeviceptr p = 0;
    EXPECT_EQ(api().cuMemAlloc(&p, std::max<size_t>(bytes, 1)), CUDA_SUCCESS);
    owned_.push_back(p);
    return p;
  }
  static Tensor download(CUdeviceptr p, const TensorType& type) {
    Tensor t(type);
    EXPECT_EQ(api().cuStreamSynchronize(nullptr), CUDA_SUCCESS);
    EXPECT_EQ(api().cuMemcpyDtoHAsync(t.data(), p, t.byteSize(), nullptr), CUDA_SUCCESS);
    EXPECT_EQ(api().cuStreamSynchronize(nullptr), CUDA_SUCCESS);
    return t;
  }

 private:
  std::vector<CUdeviceptr> owned_;
};

// Accumulations differ in order from the interpreter's (which sums in double); halves round more.
test::Tolerance toleranceFor(DType dtype) {
  if (dtype == DType::F16 || dtype == DType::BF16) return {4, 2e-2};
  return test::accumulateTolerance();
}

// Runs `source`'s one library kernel as its library call on the GPU and compares with the
// interpreter running the source as written.
void expectLibraryCallMatches(const std::string& source, bool conv) {
  auto module = test::parseOrFail(source);
  ASSERT_TRUE(module);
  const Function& f = *module->entry();
  codegen::CompileOptions gpu;
  gpu.target = codegen::Target::Cuda;  // the GPU's pipeline (the CPU's makes a matrix-vector product rows)
  auto optimized = codegen::optimizeFunction(f, gpu);
  ASSERT_TRUE(optimized.ok());
  auto plan = codegen::planFunction(*optimized->function);
  const codegen::KernelGroup* group = nullptr;
  for (const codegen::KernelGroup* g : plan->allGroups())
    if (codegen::hasLibraryOp(*g)) group = g;
  ASSERT_NE(group, nullptr);
  ASSERT_EQ(plan->allGroups().size(), 1u) << "the source must be one library kernel";
  codegen::LibraryCall call = codegen::selectLibraryCall(*group);

  std::vector<Tensor> inputs = randomInputs(f, 3);
  auto want = interpret(f, inputs);
  ASSERT_TRUE(want.ok());
  DeviceBuffers device;
  std::vector<CUdeviceptr> buffers;
  for (const Value* v : group->inputs) buffers.push_back(device.upload(inputs[v->index()]));
  buffers.push_back(device.allocate((*want)[0].byteSize()));

  Expected<LibraryOutcome> outcome = LibraryOutcome::NoAlgorithm;
  if (conv) {
    auto dnn = Cudnn::create();
    ASSERT_TRUE(dnn.ok()) << dnn.error().message();
    auto* c = std::get_if<codegen::ConvCall>(&call);
    ASSERT_NE(c, nullptr) << codegen::describeLibraryCall(call);
    outcome = (*dnn)->forward(*c, buffers, nullptr, group->name);
    ASSERT_TRUE(outcome.ok()) << outcome.error().message();
    EXPECT_EQ((*dnn)->forward(*c, buffers, nullptr, group->name).ok(), true);
    EXPECT_EQ((*dnn)->numPlans(), 1u) << "a second identical call reuses the plan";
  } else {
    auto lt = CublasLt::create();
    ASSERT_TRUE(lt.ok()) << lt.error().message();
    auto* m = std::get_if<codegen::MatmulCall>(&call);
    ASSERT_NE(m, nullptr) << codegen::describeLibraryCall(call);
    outcome = (*lt)->matmul(*m, buffers, nullptr, group->name);
    ASSERT_TRUE(outcome.ok()) << outcome.error().message();
    EXPECT_EQ((*lt)->matmul(*m, buffers, nullptr, group->name).ok(), true);
    EXPECT_EQ((*lt)->numPlans(), 1u) << "a second identical call reuses the plan";
  }
  ASSERT_EQ(*outcome, LibraryOutcome::Ran) << "no algorithm for " << codegen::describeLibraryCall(call);
  Tensor got = DeviceBuffers::download(buffers.back(), (*want)[0].type());
  EXPECT_EQ(test::compareTensors((*want)[0], got, toleranceFor(got.dtype())), "") << source;
}

TEST(CublasLtGpu, MatmulWithBiasAndRelu) {
  KILN_REQUIRE_CUBLASLT();
  expectLibraryCallMatches(R"(func @main(%x: f32[33,70], %w: f32[70,19], %b: f32[19]) -> f32[33,19] {
  %h = matmul %x, %w
  %a = add %h, %b
  %y = relu %a
  return %y
})", false);
}

TEST(CublasLtGpu, BroadcastBatchAndTanhGelu) {
  KILN_REQUIRE_CUBLASLT();
  expectLibraryCallMatches(R"(func @main(%x: f32[9,24], %w: f32[5,24,16], %b: f32[1,16]) -> f32[5,9,16] {
  %h = matmul %x, %w
  %a = add %h, %b
  %y = gelu %a {approximate = "tanh"}
  return %y
})", false);
}

TEST(CublasLtGpu, HalfAndBFloatAndDoubleAndVectors) {
  KILN_REQUIRE_CUBLASLT();
  expectLibraryCallMatches(R"(func @main(%x: f16[4,16,32], %w: f16[4,32,8]) -> f16[4,16,8] {
  %y = matmul %x, %w
  return %y
})", false);
  expectLibraryCallMatches(R"(func @main(%x: bf16[16,32], %w: bf16[32,8]) -> bf16[16,8] {
  %y = matmul %x, %w
  return %y
})", false);
  expectLibraryCallMatches(R"(func @main(%x: f64[3,7,5], %v: f64[5]) -> f64[3,7] {
  %y = matmul %x, %v
  return %y
})", false);
}

// A residual added after the bias and before the activation is cuBLASLt's C, with beta = 1.
TEST(CublasLtGpu, BiasResidualAndActivation) {
  KILN_REQUIRE_CUBLASLT();
  expectLibraryCallMatches(R"(func @main(%x: f32[33,70], %w: f32[70,19], %b: f32[19], %r: f32[33,19]) -> f32[33,19] {
  %h = matmul %x, %w
  %a = add %h, %b
  %s = add %r, %a
  %y = relu %s
  return %y
})", false);
  expectLibraryCallMatches(R"(func @main(%x: bf16[3,16,32], %w: bf16[32,24], %r: bf16[3,16,24]) -> bf16[3,16,24] {
  %h = matmul %x, %w
  %s = add %h, %r
  %y = gelu %s {approximate = "tanh"}
  return %y
})", false);
}

// Transposed operands read in place (CUBLASLT_MATMUL_DESC_TRANSA/B = CUBLAS_OP_T): the fusion
// pass puts a transpose of a matmul operand's last two axes into the library call.
TEST(CublasLtGpu, TransposedOperands) {
  KILN_REQUIRE_CUBLASLT();
  expectLibraryCallMatches(R"(func @main(%x: f32[12,20], %w: f32[7,20]) -> f32[12,7] {
  %t = transpose %w {perm = [1, 0]}
  %y = matmul %x, %t
  return %y
})", false);
  expectLibraryCallMatches(R"(func @main(%x: f32[3,20,12], %w: f32[3,20,7], %b: f32[7]) -> f32[3,12,7] {
  %t = transpose %x {perm = [0, 2, 1]}
  %h = matmul %t, %w
  %a = add %h, %b
  %y = relu %a
  return %y
})", false);
  expectLibraryCallMatches(R"(func @main(%x: bf16[9,16], %w: bf16[16,9]) -> bf16[16,16] {
  %a = transpose %x {perm = [1, 0]}
  %b = transpose %w {perm = [1, 0]}
  %y = matmul %a, %b
  return %y
})", false);
}

TEST(CudnnGpu, ConvWithBiasAndRelu) {
  KILN_REQUIRE_CUDNN();
  expectLibraryCallMatches(R"(func @main(%x: f32[2,3,9,9], %w: f32[4,3,3,3], %b: f32[4,1,1]) -> f32[2,4,5,5] {
  %c = conv2d %x, %w {strides = [2, 2], pads = [1, 1, 1, 1]}
  %a = add %c, %b
  %y = relu %a
  return %y
})", true);
}

// A residual added after the bias and before the relu is cuDNN's z, with alpha2 = 1: a ResNet
// block's input itself, and a value of its own with the identity activation.
TEST(CudnnGpu, ConvBiasResidualAndRelu) {
  KILN_REQUIRE_CUDNN();
  expectLibraryCallMatches(R"(func @main(%x: f32[2,6,7,7], %w: f32[6,6,3,3], %b: f32[6,1,1]) -> f32[2,6,7,7] {
  %c = conv2d %x, %w {pads = [1, 1, 1, 1]}
  %a = add %c, %b
  %s = add %x, %a
  %y = relu %s
  return %y
})", true);
  expectLibraryCallMatches(R"(func @main(%x: f32[2,3,9,9], %w: f32[4,3,3,3], %b: f32[4,1,1], %r: f32[2,4,5,5]) -> f32[2,4,5,5] {
  %c = conv2d %x, %w {strides = [2, 2], pads = [1, 1, 1, 1]}
  %a = add %c, %b
  %y = add %a, %r
  return %y
})", true);
}

TEST(CudnnGpu, GroupedDilatedConvAndBiasOnly) {
  KILN_REQUIRE_CUDNN();
  expectLibraryCallMatches(R"(func @main(%x: f32[1,4,10,10], %w: f32[6,2,3,3]) -> f32[1,6,6,6] {
  %y = conv2d %x, %w {dilations = [2, 2], groups = 2}
  return %y
})", true);
  expectLibraryCallMatches(R"(func @main(%x: f16[2,8,6,6], %w: f16[8,8,3,3], %b: f16[1,8,1,1]) -> f16[2,8,6,6] {
  %c = conv2d %x, %w {pads = [1, 1, 1, 1]}
  %y = add %c, %b
  return %y
})", true);
}

// dx and dw of y = conv2d(x, w) for a given dy, in double, straight from the definition.
void convGradients(const codegen::ConvCall& c, const Tensor& x, const Tensor& w, const Tensor& dy, Tensor& dx, Tensor& dw) {
  std::vector<double> gx(static_cast<size_t>(x.numElements())), gw(static_cast<size_t>(w.numElements()));
  int64_t cg = c.c / c.groups, og = c.o / c.groups;
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t o = 0; o < c.o; ++o)
      for (int64_t oh = 0; oh < c.outH; ++oh)
        for (int64_t ow = 0; ow < c.outW; ++ow) {
          double g = dy.getDouble(((n * c.o + o) * c.outH + oh) * c.outW + ow);
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t i = 0; i < c.kh; ++i)
              for (int64_t j = 0; j < c.kw; ++j) {
                int64_t h = oh * c.strideH - c.padH + i * c.dilationH, wd = ow * c.strideW - c.padW + j * c.dilationW;
                if (h < 0 || h >= c.h || wd < 0 || wd >= c.w) continue;
                int64_t channel = (o / og) * cg + ci;
                int64_t xi = ((n * c.c + channel) * c.h + h) * c.w + wd, wi = ((o * cg + ci) * c.kh + i) * c.kw + j;
                gx[static_cast<size_t>(xi)] += g * w.getDouble(wi);
                gw[static_cast<size_t>(wi)] += g * x.getDouble(xi);
              }
        }
  dx = Tensor(x.type());
  dw = Tensor(w.type());
  for (size_t i = 0; i < gx.size(); ++i) dx.setDouble(static_cast<int64_t>(i), gx[i]);
  for (size_t i = 0; i < gw.size(); ++i) dw.setDouble(static_cast<int64_t>(i), gw[i]);
}

TEST(CudnnGpu, BackwardDataAndFilter) {
  KILN_REQUIRE_CUDNN();
  codegen::ConvCall c;
  c.n = 2, c.c = 4, c.h = 9, c.w = 8, c.o = 6, c.kh = 3, c.kw = 3;
  c.strideH = 2, c.strideW = 1, c.padH = 1, c.padW = 1, c.groups = 2;
  c.outH = 5, c.outW = 8;
  Tensor x = randomTensor({DType::F32, {c.n, c.c, c.h, c.w}}, 1);
  Tensor w = randomTensor({DType::F32, {c.o, c.c / c.groups, c.kh, c.kw}}, 2);
  Tensor dy = randomTensor({DType::F32, {c.n, c.o, c.outH, c.outW}}, 3);
  Tensor wantDx, wantDw;
  convGradients(c, x, w, dy, wantDx, wantDw);

  auto dnn = Cudnn::create();
  ASSERT_TRUE(dnn.ok()) << dnn.error().message();
  DeviceBuffers device;
  CUdeviceptr dX = device.upload(x), dW = device.upload(w), dDy = device.upload(dy);
  CUdeviceptr dDx = device.allocate(x.byteSize()), dDw = device.allocate(w.byteSize());
  auto data = (*dnn)->backwardData(c, dDy, dW, dDx, nullptr, "test_conv_backward_data");
  ASSERT_TRUE(data.ok()) << data.error().message();
  auto filter = (*dnn)->backwardFilter(c, dX, dDy, dDw, nullptr, "test_conv_backward_filter");
  ASSERT_TRUE(filter.ok()) << filter.error().message();
  ASSERT_EQ(*data, LibraryOutcome::Ran);
  ASSERT_EQ(*filter, LibraryOutcome::Ran);
  EXPECT_EQ(test::compareTensors(wantDx, DeviceBuffers::download(dDx, x.type()), test::accumulateTolerance()), "");
  EXPECT_EQ(test::compareTensors(wantDw, DeviceBuffers::download(dDw, w.type()), test::accumulateTolerance()), "");
}

}  // namespace
}  // namespace kiln::cuda

#else

TEST(LibraryLoading, NotBuilt) { GTEST_SKIP() << "built without the CUDA toolkit's headers: no cuBLASLt/cuDNN calls"; }

#endif
