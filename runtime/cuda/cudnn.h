// cuDNN 9, loaded at run time, for conv2d library calls (codegen/library_call.h): the forward
// convolution with its fused bias (+ relu), and the two backward convolutions training needs.
// Uses cuDNN's legacy convolution API (cudnn_cnn.h), which cuDNN 9 still ships; descriptors and
// the algorithm are cached per call and direction.
#pragma once

#include <cuda.h>
#include <cudnn.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/library_call.h"
#include "ir/status.h"
#include "runtime/cuda/library_support.h"

namespace kiln::cuda {

// Every cuDNN function kiln calls, looked up once into CudnnApi.
#define KILN_CUDNN_FUNCTIONS(X)                                                                          \
  X(cudnnGetVersion) X(cudnnGetErrorString) X(cudnnGetLastErrorString) X(cudnnCreate) X(cudnnDestroy)     \
  X(cudnnSetStream) X(cudnnCreateTensorDescriptor) X(cudnnDestroyTensorDescriptor)                       \
  X(cudnnSetTensor4dDescriptor) X(cudnnCreateFilterDescriptor) X(cudnnDestroyFilterDescriptor)           \
  X(cudnnSetFilter4dDescriptor) X(cudnnCreateConvolutionDescriptor) X(cudnnDestroyConvolutionDescriptor) \
  X(cudnnSetConvolution2dDescriptor) X(cudnnSetConvolutionGroupCount) X(cudnnSetConvolutionMathType)     \
  X(cudnnCreateActivationDescriptor) X(cudnnDestroyActivationDescriptor) X(cudnnSetActivationDescriptor) \
  X(cudnnGetConvolutionForwardAlgorithm_v7) X(cudnnGetConvolutionForwardWorkspaceSize)                   \
  X(cudnnConvolutionForward) X(cudnnConvolutionBiasActivationForward)                                    \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7) X(cudnnGetConvolutionBackwardDataWorkspaceSize)         \
  X(cudnnConvolutionBackwardData) X(cudnnGetConvolutionBackwardFilterAlgorithm_v7)                       \
  X(cudnnGetConvolutionBackwardFilterWorkspaceSize) X(cudnnConvolutionBackwardFilter)

struct CudnnApi {
#define KILN_CUDNN_POINTER(fn) decltype(&::fn) fn = nullptr;
  KILN_CUDNN_FUNCTIONS(KILN_CUDNN_POINTER)
#undef KILN_CUDNN_POINTER
  size_t version = 0;  // cudnnGetVersion: 90000 and up
  std::string path;    // the library that was opened
};

// libcudnn.so.9, loaded once per process (its sublibraries load themselves from its folder when
// first used). Needs no GPU; fails with the places tried, missing entry points, or a cuDNN older
// than 9.
Expected<const CudnnApi*> cudnnLibrary();

// "CUDNN_STATUS_NOT_SUPPORTED", with cuDNN's last error message when it has one.
std::string cudnnStatusName(cudnnStatus_t status);

struct CudnnOptions {
  // f32 convolutions use FMA kernels only (CUDNN_FMA_MATH) unless this allows TF32 tensor cores
  // (CUDNN_DEFAULT_MATH, which on Ampere and later rounds inputs to 10-bit mantissas).
  bool allowTf32 = false;
};

// One cuDNN handle with its plans and workspace, for one stream of one context. Not thread-safe.
class Cudnn {
 public:
  // Loads the library and creates the handle: the driver must be loaded (cuda::driver()) and the
  // context the calls will run in current.
  static Expected<std::unique_ptr<Cudnn>> create(CudnnOptions options = {});
  Cudnn(const Cudnn&) = delete;
  Cudnn& operator=(const Cudnn&) = delete;
  ~Cudnn();

  // y = conv2d(x, w) with the call's epilogue (bias, bias then relu), queued on `stream`.
  // `buffers` are the kernel group's inputs then outputs; `kernel` names it in errors.
  // NoAlgorithm: cuDNN has no algorithm for it here (nothing queued): run the generated kernel.
  Expected<LibraryOutcome> forward(const codegen::ConvCall& call, const std::vector<CUdeviceptr>& buffers,
                                   CUstream stream, std::string_view kernel);
  // dx = the gradient of conv2d(x, w) with respect to x, for dy of y's shape [n,o,outH,outW] and
  // the weights w; dx has x's shape. The call's epilogue is ignored (its gradient is the caller's).
  Expected<LibraryOutcome> backwardData(const codegen::ConvCall& call, CUdeviceptr dy, CUdeviceptr w, CUdeviceptr dx,
                                        CUstream stream, std::string_view kernel);
  // dw = the gradient with respect to w, for the input x and dy; dw has w's shape.
  Expected<LibraryOutcome> backwardFilter(const codegen::ConvCall& call, CUdeviceptr x, CUdeviceptr dy,
                                          CUdeviceptr dw, CUstream stream, std::string_view kernel);

  size_t numPlans() const { return plans_.size(); }

 private:
  enum class Direction { Forward, BackwardData, BackwardFilter };
  struct Plan;
  struct PlanKey {
    codegen::ConvCall call;
    Direction direction;
    bool operator==(const PlanKey&) const = default;
  };
  Cudnn(const CudnnApi& api, cudnnHandle_t handle, CudnnOptions options);
  Expected<Plan*> plan(const PlanKey& key, std::string_view kernel);
  Status describe(Plan& plan, const codegen::ConvCall& call, std::string_view kernel);
  Status chooseAlgorithm(Plan& plan, const PlanKey& key, std::string_view kernel);
  template <class Launch>
  Expected<LibraryOutcome> run(Plan& plan, CUstream stream, std::string_view kernel, const char* call,
                               const Launch& launch);

  const CudnnApi& api_;
  cudnnHandle_t handle_;
  CudnnOptions options_;
  std::vector<std::pair<PlanKey, std::unique_ptr<Plan>>> plans_;  // few per step: a linear search
  DeviceWorkspace workspace_;
};

}  // namespace kiln::cuda
