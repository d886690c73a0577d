// The GPU simulator's cuBLASLt stand-in (gpusim/standins/cublaslt.cpp) refuses what cuBLASLt
// refuses, with its status codes: shapes that do not multiply, a leading dimension shorter than a
// column, mismatched batch counts, too little workspace, unsupported types (NOT_SUPPORTED, which
// kiln answers with its own kernel), pointers less aligned than the algorithm assumed, and device
// ranges outside any allocation. Its arithmetic is checked against kiln's interpreter by
// library_calls_test.cpp. Runs only on the simulator with KILN_CUBLASLT_LIBRARY selecting it.
#include <gtest/gtest.h>

#if KILN_HAVE_CUDA

#include <string>

#include "runtime/cuda/context.h"
#include "runtime/cuda/cublaslt.h"
#include "runtime/cuda/driver.h"
#include "runtime/cuda/dynamic_library.h"

namespace kiln::cuda {
namespace {

class CublasLtStandIn : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = driver();
    if (!d.ok() || !(*d)->simulated) GTEST_SKIP() << "not on the GPU simulator";
    if (!isOverridden("KILN_CUBLASLT_LIBRARY")) GTEST_SKIP() << "KILN_CUBLASLT_LIBRARY does not select the stand-in";
    auto device = Device::get();
    ASSERT_TRUE(device.ok()) << device.error().message();
    ASSERT_TRUE((*device)->makeCurrent().ok());
    auto lib = cublasLtLibrary();
    ASSERT_TRUE(lib.ok()) << lib.error().message();
    lt_ = *lib;
    ASSERT_EQ(lt_->cublasLtCreate(&handle_), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(lt_->cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(lt_->cublasLtMatmulPreferenceCreate(&preference_), CUBLAS_STATUS_SUCCESS);
    uint64_t workspace = 4 << 20;
    ASSERT_EQ(lt_->cublasLtMatmulPreferenceSetAttribute(preference_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                        &workspace, sizeof workspace),
              CUBLAS_STATUS_SUCCESS);
    for (CUdeviceptr* p : {&a_, &b_, &d_, &workspace_}) ASSERT_EQ(api().cuMemAlloc(p, 4 << 20), CUDA_SUCCESS);
    ASSERT_EQ(api().cuMemsetD8Async(a_, 0, 4 << 20, nullptr), CUDA_SUCCESS);
    ASSERT_EQ(api().cuMemsetD8Async(b_, 0, 4 << 20, nullptr), CUDA_SUCCESS);
  }

  void TearDown() override {
    if (!lt_) return;
    for (cublasLtMatrixLayout_t l : layouts_) lt_->cublasLtMatrixLayoutDestroy(l);
    lt_->cublasLtMatmulPreferenceDestroy(preference_);
    lt_->cublasLtMatmulDescDestroy(desc_);
    lt_->cublasLtDestroy(handle_);
    for (CUdeviceptr p : {a_, b_, d_, workspace_}) api().cuMemFree(p);
  }

  cublasLtMatrixLayout_t layout(cudaDataType_t type, uint64_t rows, uint64_t cols, int64_t ld) {
    cublasLtMatrixLayout_t l = nullptr;
    EXPECT_EQ(lt_->cublasLtMatrixLayoutCreate(&l, type, rows, cols, ld), CUBLAS_STATUS_SUCCESS);
    layouts_.push_back(l);
    return l;
  }

  // The heuristic's answer for D[m,n] = A[m,k] B[k,n] with the given layouts.
  cublasStatus_t heuristic(cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t d) {
    int returned = 0;
    return lt_->cublasLtMatmulAlgoGetHeuristic(handle_, desc_, a, b, d, d, preference_, 1, &result_, &returned);
  }

  cublasStatus_t matmul(CUdeviceptr a, cublasLtMatrixLayout_t la, CUdeviceptr b, cublasLtMatrixLayout_t lb, CUdeviceptr d,
                        cublasLtMatrixLayout_t ld, size_t workspaceBytes) {
    float one = 1, zero = 0;
    auto ptr = [](CUdeviceptr p) { return reinterpret_cast<void*>(p); };
    return lt_->cublasLtMatmul(handle_, desc_, &one, ptr(a), la, ptr(b), lb, &zero, ptr(d), ld, ptr(d), ld,
                               &result_.algo, ptr(workspace_), workspaceBytes, nullptr);
  }

  std::string lastReport() { return api().gpusimLastReport ? api().gpusimLastReport() : ""; }

  const CublasLtApi* lt_ = nullptr;
  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatmulPreference_t preference_ = nullptr;
  cublasLtMatmulHeuristicResult_t result_{};
  std::vector<cublasLtMatrixLayout_t> layouts_;
  CUdeviceptr a_ = 0, b_ = 0, d_ = 0, workspace_ = 0;
};

TEST_F(CublasLtStandIn, RunsAValidProblemAndAsksForWorkspace) {
  auto a = layout(CUDA_R_32F, 8, 4, 8), b = layout(CUDA_R_32F, 4, 6, 4), d = layout(CUDA_R_32F, 8, 6, 8);
  ASSERT_EQ(heuristic(a, b, d), CUBLAS_STATUS_SUCCESS);
  EXPECT_GT(result_.workspaceSize, 0u) << "the algorithm asks for workspace, as cuBLASLt's do";
  EXPECT_EQ(matmul(a_, a, b_, b, d_, d, result_.workspaceSize), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(api().cuStreamSynchronize(nullptr), CUDA_SUCCESS);
}

TEST_F(CublasLtStandIn, RefusesShapesThatDoNotMultiply) {
  auto a = layout(CUDA_R_32F, 8, 4, 8), b = layout(CUDA_R_32F, 5, 6, 5), d = layout(CUDA_R_32F, 8, 6, 8);
  EXPECT_EQ(heuristic(a, b, d), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_NE(lastReport().find("do not multiply"), std::string::npos) << lastReport();
}

TEST_F(CublasLtStandIn, RefusesALeadingDimensionShorterThanAColumn) {
  auto a = layout(CUDA_R_32F, 8, 4, 7), b = layout(CUDA_R_32F, 4, 6, 4), d = layout(CUDA_R_32F, 8, 6, 8);
  EXPECT_EQ(heuristic(a, b, d), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_NE(lastReport().find("A's leading dimension 7 is less than its 8 rows"), std::string::npos) << lastReport();
}

TEST_F(CublasLtStandIn, RefusesMismatchedBatchCounts) {
  auto a = layout(CUDA_R_32F, 8, 4, 8), b = layout(CUDA_R_32F, 4, 6, 4), d = layout(CUDA_R_32F, 8, 6, 8);
  int32_t three = 3;
  ASSERT_EQ(lt_->cublasLtMatrixLayoutSetAttribute(a, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &three, sizeof three),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(heuristic(a, b, d), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_NE(lastReport().find("batch count 3"), std::string::npos) << lastReport();
}

TEST_F(CublasLtStandIn, AnswersNotSupportedForTypesItLacks) {
  auto a = layout(CUDA_R_8I, 8, 4, 8), b = layout(CUDA_R_8I, 4, 6, 4), d = layout(CUDA_R_32F, 8, 6, 8);
  EXPECT_EQ(heuristic(a, b, d), CUBLAS_STATUS_NOT_SUPPORTED);
}

TEST_F(CublasLtStandIn, RefusesTooLittleWorkspace) {
  auto a = layout(CUDA_R_32F, 8, 4, 8), b = layout(CUDA_R_32F, 4, 6, 4), d = layout(CUDA_R_32F, 8, 6, 8);
  ASSERT_EQ(heuristic(a, b, d), CUBLAS_STATUS_SUCCESS);
  ASSERT_GT(result_.workspaceSize, 0u);
  EXPECT_EQ(matmul(a_, a, b_, b, d_, d, result_.workspaceSize - 1), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_NE(lastReport().find("bytes of workspace"), std::string::npos) << lastReport();
}

// The heuristic's algorithm assumes 256-byte alignment (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES'
// default): a matrix at an offset of 4 bytes is NOT_SUPPORTED, and kiln runs its own kernel.
TEST_F(CublasLtStandIn, AnswersNotSupportedForLessAlignedPointers) {
  auto a = layout(CUDA_R_32F, 8, 4, 8), b = layout(CUDA_R_32F, 4, 6, 4), d = layout(CUDA_R_32F, 8, 6, 8);
  ASSERT_EQ(heuristic(a, b, d), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(matmul(a_ + 4, a, b_, b, d_, d, result_.workspaceSize), CUBLAS_STATUS_NOT_SUPPORTED);
  uint32_t four = 4;
  ASSERT_EQ(lt_->cublasLtMatmulPreferenceSetAttribute(preference_, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &four,
                                                      sizeof four),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(heuristic(a, b, d), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(matmul(a_ + 4, a, b_, b, d_, d, result_.workspaceSize), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(api().cuStreamSynchronize(nullptr), CUDA_SUCCESS);
}

TEST_F(CublasLtStandIn, RefusesDeviceRangesOutsideTheirAllocation) {
  // D's 8 x 6 floats start 16 bytes before the end of a 4 MiB allocation.
  auto a = layout(CUDA_R_32F, 8, 4, 8), b = layout(CUDA_R_32F, 4, 6, 4), d = layout(CUDA_R_32F, 8, 6, 8);
  uint32_t four = 4;
  for (auto attribute : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    ASSERT_EQ(lt_->cublasLtMatmulPreferenceSetAttribute(preference_, attribute, &four, sizeof four),
              CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(heuristic(a, b, d), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(matmul(a_, a, b_, b, d_ + (4 << 20) - 16, d, result_.workspaceSize), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_NE(lastReport().find("cublasLtMatmul's D"), std::string::npos) << lastReport();
}

}  // namespace
}  // namespace kiln::cuda

#endif
