// Loading cuDNN 9 and running ConvCalls through its legacy convolution API (cudnn.h).
#include "runtime/cuda/cudnn.h"

#include <mutex>

#include "runtime/cuda/driver.h"
#include "runtime/cuda/dynamic_library.h"

namespace kiln::cuda {

namespace {

struct LoadedCudnn {
  Expected<DynamicLibrary> library = Error("not loaded");
  CudnnApi api;
  Status status;
};

Status load(LoadedCudnn& l) {
  l.library = DynamicLibrary::open("cuDNN", candidatesOr("KILN_CUDNN_LIBRARY", {"libcudnn.so.9"}),
                                   "kiln calls cuDNN 9 for convolutions on the GPU: install libcudnn9 (or NVIDIA's "
                                   "nvidia-cudnn wheel) and name its folder in $KILN_CUDA_LIBRARY_PATH if the loader "
                                   "does not find it");
  if (!l.library) return l.library.error();
  std::string missing;
#define KILN_CUDNN_LOOKUP(fn)                                                     \
  l.api.fn = reinterpret_cast<decltype(l.api.fn)>((*l.library).symbol(#fn));      \
  if (!l.api.fn) missing += std::string(missing.empty() ? "" : ", ") + #fn;
  KILN_CUDNN_FUNCTIONS(KILN_CUDNN_LOOKUP)
#undef KILN_CUDNN_LOOKUP
  l.api.path = (*l.library).path();
  if (!missing.empty()) return Error("cuDNN at " + l.api.path + " lacks " + missing + "; kiln needs cuDNN 9");
  l.api.version = l.api.cudnnGetVersion();
  if (l.api.version < 90000)
    return Error("cuDNN at " + l.api.path + " is version " + std::to_string(l.api.version) + "; kiln needs cuDNN 9");
  return {};
}

// cuDNN has no algorithm for this problem (shape, layout, dtype, padding): the generated kernel
// can run it. The same category's environment problems (driver, runtime, architecture, a missing
// sublibrary) are errors the user should see, not a silent fallback.
bool noAlgorithm(cudnnStatus_t s) {
  int code = static_cast<int>(s);
  return code >= 3000 && code < 4000 && !(code >= 3005 && code <= 3009);
}

Status check(cudnnStatus_t status, const char* call, std::string_view kernel) {
  if (status == CUDNN_STATUS_SUCCESS) return {};
  return Error(std::string(call) + " failed for " + std::string(kernel) + ": " + cudnnStatusName(status));
}

#define KILN_CUDNN(fn, kernel, ...) KILN_TRY(check(api_.fn(__VA_ARGS__), #fn, kernel))

cudnnDataType_t dataType(DType dtype) {
  switch (dtype) {
    case DType::F16: return CUDNN_DATA_HALF;
    case DType::BF16: return CUDNN_DATA_BFLOAT16;
    case DType::F64: return CUDNN_DATA_DOUBLE;
    default: return CUDNN_DATA_FLOAT;
  }
}

int asInt(int64_t v) { return static_cast<int>(v); }  // selectLibraryCall checked every size fits

// The first algorithm the heuristic ranks usable. `fmaOnly`: f32 without TF32 skips tensor-op
// entries (they would round inputs to TF32).
template <class Perf>
const Perf* pickAlgorithm(const Perf* perfs, int count, bool fmaOnly) {
  for (int i = 0; i < count; ++i) {
    const Perf& p = perfs[i];
    if (p.status != CUDNN_STATUS_SUCCESS) continue;
    if (fmaOnly && (p.mathType == CUDNN_TENSOR_OP_MATH || p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)) continue;
    return &p;
  }
  return nullptr;
}

}  // namespace

Expected<const CudnnApi*> cudnnLibrary() {
  static LoadedCudnn l;
  static std::once_flag once;
  std::call_once(once, [] { l.status = load(l); });
  if (!l.status) return l.status.error();
  return &l.api;
}

std::string cudnnStatusName(cudnnStatus_t status) {
  auto lib = cudnnLibrary();
  if (!lib) return "cudnnStatus_t " + std::to_string(static_cast<int>(status));
  std::string text = (*lib)->cudnnGetErrorString(status);
  char detail[512] = {};
  (*lib)->cudnnGetLastErrorString(detail, sizeof(detail));
  if (detail[0]) text += std::string(" (") + detail + ")";
  return text;
}

// One convolution's descriptors and chosen algorithm, for one direction. y doubles as dy's
// descriptor, x as dx's and w as dw's: gradients have the shapes of what they differentiate.
struct Cudnn::Plan {
  const CudnnApi& api;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnActivationDescriptor_t activation = nullptr;
  int algo = 0;  // a cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t, by direction
  size_t workspaceBytes = 0;
  bool found = false;  // false: no algorithm, the generated kernel runs

  explicit Plan(const CudnnApi& a) : api(a) {}
  ~Plan() {
    if (activation) api.cudnnDestroyActivationDescriptor(activation);
    if (conv) api.cudnnDestroyConvolutionDescriptor(conv);
    if (w) api.cudnnDestroyFilterDescriptor(w);
    if (bias) api.cudnnDestroyTensorDescriptor(bias);
    if (y) api.cudnnDestroyTensorDescriptor(y);
    if (x) api.cudnnDestroyTensorDescriptor(x);
  }
};

Expected<std::unique_ptr<Cudnn>> Cudnn::create(CudnnOptions options) {
  auto driverApi = driver();
  if (!driverApi) return driverApi.error();
  if ((*driverApi)->simulated && !isOverridden("KILN_CUDNN_LIBRARY"))
    return Error(librariesNeedRealGpu("cuDNN", "KILN_CUDNN_LIBRARY", "libkiln_gpusim_cudnn.so"));
  auto lib = cudnnLibrary();
  if (!lib) return lib.error();
  cudnnHandle_t handle = nullptr;
  if (cudnnStatus_t s = (*lib)->cudnnCreate(&handle); s != CUDNN_STATUS_SUCCESS)
    return Error("cudnnCreate failed: " + cudnnStatusName(s));
  return std::unique_ptr<Cudnn>(new Cudnn(**lib, handle, options));
}

Cudnn::Cudnn(const CudnnApi& api, cudnnHandle_t handle, CudnnOptions options)
    : api_(api), handle_(handle), options_(options) {}

Cudnn::~Cudnn() {
  plans_.clear();  // descriptors before the handle
  api_.cudnnDestroy(handle_);
}

Status Cudnn::describe(Plan& p, const codegen::ConvCall& c, std::string_view kernel) {
  cudnnDataType_t type = dataType(c.dtype);
  KILN_CUDNN(cudnnCreateTensorDescriptor, kernel, &p.x);
  KILN_CUDNN(cudnnSetTensor4dDescriptor, kernel, p.x, CUDNN_TENSOR_NCHW, type, asInt(c.n), asInt(c.c), asInt(c.h),
             asInt(c.w));
  KILN_CUDNN(cudnnCreateTensorDescriptor, kernel, &p.y);
  KILN_CUDNN(cudnnSetTensor4dDescriptor, kernel, p.y, CUDNN_TENSOR_NCHW, type, asInt(c.n), asInt(c.o), asInt(c.outH),
             asInt(c.outW));
  KILN_CUDNN(cudnnCreateFilterDescriptor, kernel, &p.w);
  KILN_CUDNN(cudnnSetFilter4dDescriptor, kernel, p.w, type, CUDNN_TENSOR_NCHW, asInt(c.o), asInt(c.c / c.groups),
             asInt(c.kh), asInt(c.kw));
  KILN_CUDNN(cudnnCreateConvolutionDescriptor, kernel, &p.conv);
  // kiln's conv2d is ONNX Conv: cross-correlation, accumulated in f32 (f64 for f64).
  KILN_CUDNN(cudnnSetConvolution2dDescriptor, kernel, p.conv, asInt(c.padH), asInt(c.padW), asInt(c.strideH),
             asInt(c.strideW), asInt(c.dilationH), asInt(c.dilationW), CUDNN_CROSS_CORRELATION,
             c.dtype == DType::F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT);
  KILN_CUDNN(cudnnSetConvolutionGroupCount, kernel, p.conv, asInt(c.groups));
  cudnnMathType_t math = c.dtype == DType::F16 || c.dtype == DType::BF16 ? CUDNN_TENSOR_OP_MATH
                         : c.dtype == DType::F32 && !options_.allowTf32  ? CUDNN_FMA_MATH
                                                                         : CUDNN_DEFAULT_MATH;
  KILN_CUDNN(cudnnSetConvolutionMathType, kernel, p.conv, math);
  if (c.epilogue == codegen::ConvEpilogue::None) return {};
  if (c.epilogue == codegen::ConvEpilogue::BiasRelu6)
    return Error(std::string(kernel) + ": cuDNN's fused convolution applies relu or nothing; kiln asks relu6 of oneDNN only");
  KILN_CUDNN(cudnnCreateTensorDescriptor, kernel, &p.bias);
  KILN_CUDNN(cudnnSetTensor4dDescriptor, kernel, p.bias, CUDNN_TENSOR_NCHW, type, 1, asInt(c.o), 1, 1);
  KILN_CUDNN(cudnnCreateActivationDescriptor, kernel, &p.activation);
  // kiln's relu propagates NaN (docs/ir.md), so cuDNN's must too.
  cudnnActivationMode_t mode =
      c.epilogue == codegen::ConvEpilogue::BiasRelu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY;
  KILN_CUDNN(cudnnSetActivationDescriptor, kernel, p.activation, mode, CUDNN_PROPAGATE_NAN, 0.0);
  return {};
}

Status Cudnn::chooseAlgorithm(Plan& p, const PlanKey& key, std::string_view kernel) {
  const codegen::ConvCall& c = key.call;
  bool fmaOnly = c.dtype == DType::F32 && !options_.allowTf32;
  // Adopts the chosen entry's math type, except that f32 without TF32 stays on FMA kernels.
  auto adopt = [&](cudnnMathType_t math) -> Status {
    if (!fmaOnly) KILN_CUDNN(cudnnSetConvolutionMathType, kernel, p.conv, math);
    return {};
  };
  cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
  switch (key.direction) {
    case Direction::Forward: {
      if (c.epilogue == codegen::ConvEpilogue::Bias) {
        // cudnnConvolutionBiasActivationForward takes the identity activation with this algorithm only.
        p.algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
      } else {
        cudnnConvolutionFwdAlgoPerf_t perfs[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        int count = 0;
        KILN_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7, kernel, handle_, p.x, p.w, p.conv, p.y,
                   CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, perfs);
        const auto* best = pickAlgorithm(perfs, count, fmaOnly);
        if (!best) return {};
        p.algo = best->algo;
        KILN_TRY(adopt(best->mathType));
      }
      s = api_.cudnnGetConvolutionForwardWorkspaceSize(handle_, p.x, p.w, p.conv, p.y,
                                                       static_cast<cudnnConvolutionFwdAlgo_t>(p.algo), &p.workspaceBytes);
      break;
    }
    case Direction::BackwardData: {
      cudnnConvolutionBwdDataAlgoPerf_t perfs[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      int count = 0;
      KILN_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7, kernel, handle_, p.w, p.y, p.conv, p.x,
                 CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, perfs);
      const auto* best = pickAlgorithm(perfs, count, fmaOnly);
      if (!best) return {};
      p.algo = best->algo;
      KILN_TRY(adopt(best->mathType));
      s = api_.cudnnGetConvolutionBackwardDataWorkspaceSize(
          handle_, p.w, p.y, p.conv, p.x, static_cast<cudnnConvolutionBwdDataAlgo_t>(p.algo), &p.workspaceBytes);
      break;
    }
    case Direction::BackwardFilter: {
      cudnnConvolutionBwdFilterAlgoPerf_t perfs[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
      int count = 0;
      KILN_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7, kernel, handle_, p.x, p.y, p.conv, p.w,
                 CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count, perfs);
      const auto* best = pickAlgorithm(perfs, count, fmaOnly);
      if (!best) return {};
      p.algo = best->algo;
      KILN_TRY(adopt(best->mathType));
      s = api_.cudnnGetConvolutionBackwardFilterWorkspaceSize(
          handle_, p.x, p.y, p.conv, p.w, static_cast<cudnnConvolutionBwdFilterAlgo_t>(p.algo), &p.workspaceBytes);
      break;
    }
  }
  if (noAlgorithm(s)) return {};
  KILN_TRY(check(s, "cudnnGetConvolutionWorkspaceSize", kernel));
  p.found = true;
  return {};
}

Expected<Cudnn::Plan*> Cudnn::plan(const PlanKey& key, std::string_view kernel) {
  for (auto& [k, p] : plans_)
    if (k == key) return p.get();
  auto p = std::make_unique<Plan>(api_);
  KILN_TRY(describe(*p, key.call, kernel));
  KILN_TRY(chooseAlgorithm(*p, key, kernel));
  plans_.emplace_back(key, std::move(p));
  return plans_.back().second.get();
}

namespace {

// alpha = 1, beta = 0 (and alpha2 = 0 without a residual z, 1 with one) in the scaling type:
// double for f64 data, float otherwise.
struct Scales {
  double one64 = 1, zero64 = 0;
  float one32 = 1, zero32 = 0;
  bool f64;
  explicit Scales(DType dtype) : f64(dtype == DType::F64) {}
  const void* one() const { return f64 ? static_cast<const void*>(&one64) : &one32; }
  const void* zero() const { return f64 ? static_cast<const void*>(&zero64) : &zero32; }
};

void* ptr(CUdeviceptr p) { return reinterpret_cast<void*>(p); }

// The convolution alone: backward plans are shared by every call with the same geometry.
codegen::ConvCall geometryOf(codegen::ConvCall call) {
  call.x = call.weights = call.bias = call.output = call.residual = -1;
  call.epilogue = codegen::ConvEpilogue::None;
  return call;
}

}  // namespace

// Runs `launch` (a cuDNN status) for plan `p`, or reports NoAlgorithm: when the plan has none, or
// when the call itself says the problem is not supported (the plan remembers, the next step
// skips straight to the generated kernel).
template <class Launch>
Expected<LibraryOutcome> Cudnn::run(Plan& p, CUstream stream, std::string_view kernel, const char* call,
                                    const Launch& launch) {
  if (!p.found) return LibraryOutcome::NoAlgorithm;
  KILN_CUDNN(cudnnSetStream, kernel, handle_, stream);
  auto workspace = workspace_.reserve(p.workspaceBytes, stream, kernel);
  if (!workspace) return workspace.error();
  cudnnStatus_t s = launch(ptr(*workspace));
  if (noAlgorithm(s)) {
    p.found = false;
    return LibraryOutcome::NoAlgorithm;
  }
  KILN_TRY(check(s, call, kernel));
  return LibraryOutcome::Ran;
}

Expected<LibraryOutcome> Cudnn::forward(const codegen::ConvCall& call, const std::vector<CUdeviceptr>& buffers,
                                        CUstream stream, std::string_view kernel) {
  for (int index : {call.x, call.weights, call.bias, call.output, call.residual})
    KILN_INTERNAL_CHECK(index < static_cast<int>(buffers.size()), "ConvCall buffer index out of range");
  auto p = plan(PlanKey{call, Direction::Forward}, kernel);
  if (!p) return p.error();
  Plan& pl = **p;
  auto at = [&](int index) { return ptr(buffers[static_cast<size_t>(index)]); };
  Scales scale(call.dtype);
  if (call.epilogue == codegen::ConvEpilogue::None)
    return run(pl, stream, kernel, "cudnnConvolutionForward", [&](void* workspace) {
      return api_.cudnnConvolutionForward(handle_, scale.one(), pl.x, at(call.x), pl.w, at(call.weights), pl.conv,
                                          static_cast<cudnnConvolutionFwdAlgo_t>(pl.algo), workspace,
                                          pl.workspaceBytes, scale.zero(), pl.y, at(call.output));
    });
  // y = act(conv(x) + alpha2 z + bias): z is the residual (alpha2 = 1), or, without one, y, scaled
  // by 0 (z must be a valid tensor either way).
  bool residual = call.residual >= 0;
  return run(pl, stream, kernel, "cudnnConvolutionBiasActivationForward", [&](void* workspace) {
    return api_.cudnnConvolutionBiasActivationForward(
        handle_, scale.one(), pl.x, at(call.x), pl.w, at(call.weights), pl.conv,
        static_cast<cudnnConvolutionFwdAlgo_t>(pl.algo), workspace, pl.workspaceBytes,
        residual ? scale.one() : scale.zero(), pl.y, at(residual ? call.residual : call.output), pl.bias, at(call.bias),
        pl.activation, pl.y, at(call.output));
  });
}

Expected<LibraryOutcome> Cudnn::backwardData(const codegen::ConvCall& call, CUdeviceptr dy, CUdeviceptr w,
                                             CUdeviceptr dx, CUstream stream, std::string_view kernel) {
  auto p = plan(PlanKey{geometryOf(call), Direction::BackwardData}, kernel);
  if (!p) return p.error();
  Plan& pl = **p;
  Scales scale(call.dtype);
  return run(pl, stream, kernel, "cudnnConvolutionBackwardData", [&](void* workspace) {
    return api_.cudnnConvolutionBackwardData(handle_, scale.one(), pl.w, ptr(w), pl.y, ptr(dy), pl.conv,
                                             static_cast<cudnnConvolutionBwdDataAlgo_t>(pl.algo), workspace,
                                             pl.workspaceBytes, scale.zero(), pl.x, ptr(dx));
  });
}

Expected<LibraryOutcome> Cudnn::backwardFilter(const codegen::ConvCall& call, CUdeviceptr x, CUdeviceptr dy,
                                               CUdeviceptr dw, CUstream stream, std::string_view kernel) {
  auto p = plan(PlanKey{geometryOf(call), Direction::BackwardFilter}, kernel);
  if (!p) return p.error();
  Plan& pl = **p;
  Scales scale(call.dtype);
  return run(pl, stream, kernel, "cudnnConvolutionBackwardFilter", [&](void* workspace) {
    return api_.cudnnConvolutionBackwardFilter(handle_, scale.one(), pl.x, ptr(x), pl.y, ptr(dy), pl.conv,
                                               static_cast<cudnnConvolutionBwdFilterAlgo_t>(pl.algo), workspace,
                                               pl.workspaceBytes, scale.zero(), pl.w, ptr(dw));
  });
}

}  // namespace kiln::cuda
