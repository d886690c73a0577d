// The GPU simulator's cuDNN stand-in (gpusim/standins/cudnn.cpp) refuses what cuDNN refuses, with
// its status codes: an output of the wrong size, channels that do not fit the groups, a filter
// layout it lacks, the identity activation with another algorithm than IMPLICIT_PRECOMP_GEMM, too
// little workspace, and device ranges outside any allocation; its heuristic ranks a TF32 entry
// first for f32 unless the math type is FMA, as cuDNN does. Its arithmetic is checked against the
// interpreter and a host reference by library_calls_test.cpp. Runs only on the simulator with
// KILN_CUDNN_LIBRARY selecting it.
#include <gtest/gtest.h>

#if KILN_HAVE_CUDA

#include <string>
#include <vector>

#include "runtime/cuda/context.h"
#include "runtime/cuda/cudnn.h"
#include "runtime/cuda/driver.h"
#include "runtime/cuda/dynamic_library.h"

namespace kiln::cuda {
namespace {

class CudnnStandIn : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = driver();
    if (!d.ok() || !(*d)->simulated) GTEST_SKIP() << "not on the GPU simulator";
    if (!isOverridden("KILN_CUDNN_LIBRARY")) GTEST_SKIP() << "KILN_CUDNN_LIBRARY does not select the stand-in";
    auto device = Device::get();
    ASSERT_TRUE(device.ok()) << device.error().message();
    ASSERT_TRUE((*device)->makeCurrent().ok());
    auto lib = cudnnLibrary();
    ASSERT_TRUE(lib.ok()) << lib.error().message();
    dnn_ = *lib;
    ASSERT_EQ(dnn_->cudnnCreate(&handle_), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(dnn_->cudnnCreateTensorDescriptor(&x_), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(dnn_->cudnnCreateTensorDescriptor(&y_), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(dnn_->cudnnCreateTensorDescriptor(&bias_), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(dnn_->cudnnCreateFilterDescriptor(&w_), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(dnn_->cudnnCreateConvolutionDescriptor(&conv_), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(dnn_->cudnnCreateActivationDescriptor(&activation_), CUDNN_STATUS_SUCCESS);
    // x [2,4,8,8] * w [6,4,3,3], padding 1: y [2,6,8,8]; bias [1,6,1,1].
    ASSERT_EQ(dnn_->cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 4, 8, 8), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(dnn_->cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 6, 8, 8), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(dnn_->cudnnSetTensor4dDescriptor(bias_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 6, 1, 1),
              CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(dnn_->cudnnSetFilter4dDescriptor(w_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 6, 4, 3, 3), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(dnn_->cudnnSetConvolution2dDescriptor(conv_, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
              CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(dnn_->cudnnSetActivationDescriptor(activation_, CUDNN_ACTIVATION_IDENTITY, CUDNN_PROPAGATE_NAN, 0.0),
              CUDNN_STATUS_SUCCESS);
    for (CUdeviceptr* p : {&x, &w, &y, &bias, &workspace}) {
      ASSERT_EQ(api().cuMemAlloc(p, 64 << 10), CUDA_SUCCESS);
      ASSERT_EQ(api().cuMemsetD8Async(*p, 0, 64 << 10, nullptr), CUDA_SUCCESS);
    }
  }

  void TearDown() override {
    if (!dnn_) return;
    dnn_->cudnnDestroyActivationDescriptor(activation_);
    dnn_->cudnnDestroyConvolutionDescriptor(conv_);
    dnn_->cudnnDestroyFilterDescriptor(w_);
    for (cudnnTensorDescriptor_t t : {x_, y_, bias_}) dnn_->cudnnDestroyTensorDescriptor(t);
    dnn_->cudnnDestroy(handle_);
    for (CUdeviceptr p : {x, w, y, bias, workspace}) api().cuMemFree(p);
  }

  std::vector<cudnnConvolutionFwdAlgoPerf_t> ranking() {
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perfs(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
    int count = 0;
    EXPECT_EQ(dnn_->cudnnGetConvolutionForwardAlgorithm_v7(handle_, x_, w_, conv_, y_, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                           &count, perfs.data()),
              CUDNN_STATUS_SUCCESS);
    perfs.resize(static_cast<size_t>(count));
    return perfs;
  }

  cudnnStatus_t forward(cudnnConvolutionFwdAlgo_t algo, size_t workspaceBytes, CUdeviceptr out) {
    float one = 1, zero = 0;
    auto p = [](CUdeviceptr a) { return reinterpret_cast<void*>(a); };
    return dnn_->cudnnConvolutionForward(handle_, &one, x_, p(x), w_, p(w), conv_, algo, p(workspace), workspaceBytes,
                                         &zero, y_, p(out));
  }

  std::string lastError() {
    char text[512] = {};
    dnn_->cudnnGetLastErrorString(text, sizeof text);
    return text;
  }

  const CudnnApi* dnn_ = nullptr;
  cudnnHandle_t handle_ = nullptr;
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr, bias_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnActivationDescriptor_t activation_ = nullptr;
  CUdeviceptr x = 0, w = 0, y = 0, bias = 0, workspace = 0;
};

TEST_F(CudnnStandIn, RanksTf32FirstUnlessTheMathTypeIsFma) {
  auto perfs = ranking();
  ASSERT_FALSE(perfs.empty());
  EXPECT_EQ(perfs[0].mathType, CUDNN_TENSOR_OP_MATH) << "f32 with the default math type: TF32 ranks first";
  ASSERT_EQ(dnn_->cudnnSetConvolutionMathType(conv_, CUDNN_FMA_MATH), CUDNN_STATUS_SUCCESS);
  perfs = ranking();
  ASSERT_FALSE(perfs.empty());
  EXPECT_EQ(perfs[0].mathType, CUDNN_FMA_MATH);
  EXPECT_EQ(perfs[0].status, CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(perfs.back().status, CUDNN_STATUS_NOT_SUPPORTED) << "the algorithms it lacks are listed as such";
  EXPECT_EQ(forward(perfs[0].algo, perfs[0].memory, y), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(api().cuStreamSynchronize(nullptr), CUDA_SUCCESS);
}

TEST_F(CudnnStandIn, RefusesAnOutputOfTheWrongSize) {
  ASSERT_EQ(dnn_->cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 6, 6, 6), CUDNN_STATUS_SUCCESS);
  int count = 0;
  cudnnConvolutionFwdAlgoPerf_t perf{};
  EXPECT_EQ(dnn_->cudnnGetConvolutionForwardAlgorithm_v7(handle_, x_, w_, conv_, y_, 1, &count, &perf),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_NE(lastError().find("gives [2,6,8,8]"), std::string::npos);
}

TEST_F(CudnnStandIn, RefusesChannelsThatDoNotFitTheGroups) {
  ASSERT_EQ(dnn_->cudnnSetConvolutionGroupCount(conv_, 2), CUDNN_STATUS_SUCCESS);
  size_t bytes = 0;
  EXPECT_EQ(dnn_->cudnnGetConvolutionForwardWorkspaceSize(handle_, x_, w_, conv_, y_,
                                                          CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, &bytes),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_NE(lastError().find("do not fit 2 group(s)"), std::string::npos);
}

TEST_F(CudnnStandIn, AnswersNotSupportedForWhatItLacks) {
  EXPECT_EQ(forward(CUDNN_CONVOLUTION_FWD_ALGO_FFT, 1 << 16, y), CUDNN_STATUS_NOT_SUPPORTED);
  ASSERT_EQ(dnn_->cudnnSetFilter4dDescriptor(w_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, 6, 4, 3, 3), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(forward(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, 0, y), CUDNN_STATUS_NOT_SUPPORTED_LAYOUT);
}

// cuDNN fuses the identity activation with IMPLICIT_PRECOMP_GEMM only.
TEST_F(CudnnStandIn, FusesTheIdentityWithImplicitPrecompGemmOnly) {
  float one = 1, zero = 0;
  auto p = [](CUdeviceptr a) { return reinterpret_cast<void*>(a); };
  auto fused = [&](cudnnConvolutionFwdAlgo_t algo) {
    return dnn_->cudnnConvolutionBiasActivationForward(handle_, &one, x_, p(x), w_, p(w), conv_, algo, p(workspace),
                                                       1 << 16, &zero, y_, p(y), bias_, p(bias), activation_, y_, p(y));
  };
  EXPECT_EQ(fused(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM), CUDNN_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(fused(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(api().cuStreamSynchronize(nullptr), CUDA_SUCCESS);
}

TEST_F(CudnnStandIn, RefusesTooLittleWorkspace) {
  size_t bytes = 0;
  ASSERT_EQ(dnn_->cudnnGetConvolutionForwardWorkspaceSize(handle_, x_, w_, conv_, y_,
                                                          CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, &bytes),
            CUDNN_STATUS_SUCCESS);
  ASSERT_GT(bytes, 0u);
  EXPECT_EQ(forward(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, bytes - 1, y), CUDNN_STATUS_BAD_PARAM);
  EXPECT_NE(lastError().find("bytes of workspace"), std::string::npos);
}

TEST_F(CudnnStandIn, RefusesDeviceRangesOutsideTheirAllocation) {
  // y is 2 x 6 x 8 x 8 floats = 3 KiB, starting 1 KiB before the end of its 64 KiB allocation.
  EXPECT_EQ(forward(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, 0, y + (63 << 10)), CUDNN_STATUS_BAD_PARAM);
  EXPECT_NE(lastError().find("the convolution's y"), std::string::npos);
}

}  // namespace
}  // namespace kiln::cuda

#endif
