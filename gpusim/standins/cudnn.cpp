// libkiln_gpusim_cudnn.so: cuDNN 9's legacy convolution API (cudnn.h) over the GPU simulator, for
// the calls kiln makes (runtime/cuda/cudnn.cpp): 4-d tensor, filter, convolution and activation
// descriptors; the v7 algorithm heuristics and workspace queries; the forward convolution, the
// forward with bias and activation, and the data and filter gradients. Each call is checked as
// cuDNN documents (status codes included) and queued on the handle's stream (cudnnSetStream) as a
// host reference over the simulated device memory (gpusimLaunchHostWork), summed in double and
// rounded once.
//
// Accepted: NCHW and NHWC tensors, NCHW (KCRS) filters, padding, stride, dilation and groups,
// cross-correlation and convolution, f16/bf16/f32 data computed in f32 and f64 in f64, relu or
// identity with the bias. As cuDNN: the identity activation is only fused with
// IMPLICIT_PRECOMP_GEMM, algorithms other than the two each direction offers are NOT_SUPPORTED,
// and a call given less workspace than its algorithm needs is BAD_PARAM. For f32 whose math type
// allows tensor ops, the heuristic ranks a TF32 tensor-op entry first (as cuDNN does on sm_80+),
// which a caller wanting exact f32 must skip. Unlike cuDNN, device ranges are checked when called
// and again when run, and a bad one is reported instead of faulting.
#include <cuda.h>
#include <cudnn.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "gpusim/standins/standin_support.h"


using gpusim::standins::Element;

struct cudnnContext {
  int device = -1;
  CUstream stream = nullptr;
};

struct cudnnTensorStruct {
  bool set = false;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW;
  int n = 0, c = 0, h = 0, w = 0;
};

struct cudnnFilterStruct {
  bool set = false;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW;
  int k = 0, c = 0, h = 0, w = 0;
};

struct cudnnConvolutionStruct {
  bool set = false;
  int padH = 0, padW = 0, strideH = 1, strideW = 1, dilationH = 1, dilationW = 1;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  int groups = 1;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};

struct cudnnActivationStruct {
  bool set = false;
  cudnnActivationMode_t mode = CUDNN_ACTIVATION_RELU;
  cudnnNanPropagation_t nan = CUDNN_PROPAGATE_NAN;
  double coef = 0;
};

namespace {

enum class Direction { Forward, BackwardData, BackwardFilter };

// The calling thread's last refusal (cudnnGetLastErrorString reads and clears it), kept in a map by
// thread rather than in thread_local storage: LeakSanitizer's scan at exit read a stale bound of
// this dlopen'ed library's dynamic TLS block and crashed its tracer (a passing
// CudnnStandIn.RefusesAnOutputOfTheWrongSize run alone under ASan, every time). Elements of an
// unordered_map stay where they are as others are added.
std::string& lastError() {
  static std::mutex mutex;
  static std::unordered_map<std::thread::id, std::string> errors;
  std::lock_guard<std::mutex> lock(mutex);
  return errors[std::this_thread::get_id()];
}

// A refused call: BAD_PARAM and NOT_INITIALIZED are the caller's mistakes and are reported as
// gpusim reports them; NOT_SUPPORTED is cuDNN's "no kernel for this problem" (kiln then runs its
// own), so it is only kept for cudnnGetLastErrorString.
cudnnStatus_t refuse(cudnnStatus_t status, const std::string& why) {
  lastError() = why;
  if (status < CUDNN_STATUS_NOT_SUPPORTED || status >= CUDNN_STATUS_INTERNAL_ERROR)
    gpusimReport(("cuDNN stand-in: " + why).c_str());
  return status;
}

Element elementOf(cudnnDataType_t t) {
  switch (t) {
    case CUDNN_DATA_HALF: return Element::F16;
    case CUDNN_DATA_BFLOAT16: return Element::BF16;
    case CUDNN_DATA_FLOAT: return Element::F32;
    case CUDNN_DATA_DOUBLE: return Element::F64;
    default: return Element::None;
  }
}

std::string dims(int n, int c, int h, int w) {
  return "[" + std::to_string(n) + "," + std::to_string(c) + "," + std::to_string(h) + "," + std::to_string(w) + "]";
}

// Offsets, in elements, of a tensor's (n, c, h, w) and a filter's (k, c, r, s).
int64_t at(const cudnnTensorStruct& t, int64_t n, int64_t c, int64_t h, int64_t w) {
  if (t.format == CUDNN_TENSOR_NHWC) return ((n * t.h + h) * t.w + w) * t.c + c;
  return ((n * t.c + c) * t.h + h) * t.w + w;
}
int64_t at(const cudnnFilterStruct& f, int64_t k, int64_t c, int64_t r, int64_t s) {
  return ((k * f.c + c) * f.h + r) * f.w + s;
}
size_t bytes(const cudnnTensorStruct& t) {
  return static_cast<size_t>(t.n) * t.c * t.h * t.w * gpusim::standins::bytesOf(elementOf(t.type));
}
size_t bytes(const cudnnFilterStruct& f) {
  return static_cast<size_t>(f.k) * f.c * f.h * f.w * gpusim::standins::bytesOf(elementOf(f.type));
}

// One convolution: x (the input or its gradient), w (the filter or its gradient), y (the output or
// its gradient), as every direction's call names them.
struct Problem {
  cudnnTensorStruct x, y;
  cudnnFilterStruct w;
  cudnnConvolutionStruct conv;
};

// cuDNN's checks of a convolution's descriptors, shared by the heuristics, the workspace queries
// and the calls.
cudnnStatus_t checkProblem(const Problem& p) {
  if (!p.x.set || !p.y.set || !p.w.set || !p.conv.set)
    return refuse(CUDNN_STATUS_BAD_PARAM, "a tensor, filter or convolution descriptor was never set");
  if (p.x.type != p.w.type || p.y.type != p.x.type)
    return refuse(CUDNN_STATUS_BAD_PARAM, "the input, filter and output descriptors have different data types");
  if (p.w.format != CUDNN_TENSOR_NCHW)
    return refuse(CUDNN_STATUS_NOT_SUPPORTED_LAYOUT, "a filter layout other than NCHW (KCRS)");
  const cudnnConvolutionStruct& c = p.conv;
  if (p.x.c != p.w.c * c.groups || p.w.k % c.groups != 0)
    return refuse(CUDNN_STATUS_BAD_PARAM, "input " + dims(p.x.n, p.x.c, p.x.h, p.x.w) + " and filter " +
                                              dims(p.w.k, p.w.c, p.w.h, p.w.w) + " do not fit " +
                                              std::to_string(c.groups) + " group(s)");
  int outH = (p.x.h + 2 * c.padH - ((p.w.h - 1) * c.dilationH + 1)) / c.strideH + 1;
  int outW = (p.x.w + 2 * c.padW - ((p.w.w - 1) * c.dilationW + 1)) / c.strideW + 1;
  if (outH < 1 || outW < 1 || p.y.n != p.x.n || p.y.c != p.w.k || p.y.h != outH || p.y.w != outW)
    return refuse(CUDNN_STATUS_BAD_PARAM, "the output is " + dims(p.y.n, p.y.c, p.y.h, p.y.w) + "; the convolution of " +
                                              dims(p.x.n, p.x.c, p.x.h, p.x.w) + " gives " +
                                              dims(p.x.n, p.w.k, outH, outW));
  bool f64 = p.x.type == CUDNN_DATA_DOUBLE;
  if (elementOf(p.x.type) == Element::None || (f64 && c.compute != CUDNN_DATA_DOUBLE) ||
      (!f64 && c.compute != CUDNN_DATA_FLOAT && !(p.x.type == CUDNN_DATA_HALF && c.compute == CUDNN_DATA_HALF)))
    return refuse(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "this data and compute type");
  return CUDNN_STATUS_SUCCESS;
}

// The two algorithms each direction offers (algorithm 1 needs workspace: an index table of the
// filter's taps), and what any other is.
bool offered(int algo) { return algo == 0 || algo == 1; }
size_t workspaceFor(const Problem& p, int algo) {
  return algo == 1 ? static_cast<size_t>(p.w.c) * p.w.h * p.w.w * sizeof(int64_t) : 0;
}

// The heuristic's ranking, as cuDNN's v7 query returns it: tensor-op entries first where the data
// or the math type allows them, then the FMA ones, then every other algorithm NOT_SUPPORTED.
template <class Perf, class Algo>
int rank(const Problem& p, int requested, int* returned, Perf* perfs, int algoCount) {
  bool halves = p.x.type == CUDNN_DATA_HALF || p.x.type == CUDNN_DATA_BFLOAT16;
  bool tensorOps = halves || (p.x.type == CUDNN_DATA_FLOAT && p.conv.math != CUDNN_FMA_MATH);
  std::vector<Perf> list;
  auto add = [&](int algo, cudnnStatus_t status, cudnnMathType_t math) {
    Perf perf{};
    perf.algo = static_cast<Algo>(algo);
    perf.status = status;
    perf.time = status == CUDNN_STATUS_SUCCESS ? 0.01f * static_cast<float>(list.size() + 1) : -1.0f;
    perf.memory = status == CUDNN_STATUS_SUCCESS ? workspaceFor(p, algo) : 0;
    perf.determinism = CUDNN_DETERMINISTIC;
    perf.mathType = math;
    list.push_back(perf);
  };
  if (tensorOps) add(1, CUDNN_STATUS_SUCCESS, CUDNN_TENSOR_OP_MATH);
  if (!halves) {
    add(1, CUDNN_STATUS_SUCCESS, CUDNN_FMA_MATH);
    add(0, CUDNN_STATUS_SUCCESS, CUDNN_FMA_MATH);
  }
  for (int algo = 2; algo < algoCount; ++algo) add(algo, CUDNN_STATUS_NOT_SUPPORTED, CUDNN_DEFAULT_MATH);
  *returned = std::min<int>(requested, static_cast<int>(list.size()));
  std::copy(list.begin(), list.begin() + *returned, perfs);
  return *returned;
}

// One queued call: everything it reads, copied when called.
struct ConvWork {
  Direction direction;
  Problem p;
  double alpha = 1, beta = 0, alpha2 = 0;
  uint64_t x = 0, w = 0, y = 0, z = 0, bias = 0;  // device addresses; z and bias: the fused forward only
  cudnnTensorStruct zDesc, biasDesc;
  bool relu = false, fused = false;
};

// Calls f(n, o, oh, ow, channel, ih, iw, ci, r, s) for every product term of the convolution:
// output (n, o, oh, ow) reads input channel `channel` at (ih, iw) with tap (ci, r, s) of filter o.
template <class F>
void forEachTerm(const Problem& p, const F& f) {
  const cudnnConvolutionStruct& c = p.conv;
  int perGroupIn = p.w.c, perGroupOut = p.w.k / c.groups;
  for (int n = 0; n < p.y.n; ++n)
    for (int o = 0; o < p.y.c; ++o)
      for (int oh = 0; oh < p.y.h; ++oh)
        for (int ow = 0; ow < p.y.w; ++ow)
          for (int ci = 0; ci < perGroupIn; ++ci)
            for (int r = 0; r < p.w.h; ++r)
              for (int s = 0; s < p.w.w; ++s) {
                int ih = oh * c.strideH - c.padH + r * c.dilationH, iw = ow * c.strideW - c.padW + s * c.dilationW;
                if (ih < 0 || ih >= p.x.h || iw < 0 || iw >= p.x.w) continue;
                // Convolution proper flips the filter; cross-correlation (ONNX's Conv) does not.
                int fr = c.mode == CUDNN_CONVOLUTION ? p.w.h - 1 - r : r, fs = c.mode == CUDNN_CONVOLUTION ? p.w.w - 1 - s : s;
                f(n, o, oh, ow, (o / perGroupOut) * perGroupIn + ci, ih, iw, ci, fr, fs);
              }
}

int runConv(int device, void* user) {
  const ConvWork& job = *static_cast<const ConvWork*>(user);
  const Problem& p = job.p;
  Element e = elementOf(p.x.type);
  size_t size = gpusim::standins::bytesOf(e);
  using gpusim::standins::deviceBytes;
  bool toX = job.direction == Direction::BackwardData, toW = job.direction == Direction::BackwardFilter;
  int read = GPUSIM_READ, write = GPUSIM_WRITE | (job.beta != 0 ? GPUSIM_READ : 0);
  uint8_t* x = deviceBytes(device, job.x, bytes(p.x), toX ? write : read, toX ? "the convolution's dx" : "its x");
  uint8_t* w = deviceBytes(device, job.w, bytes(p.w), toW ? write : read, toW ? "the convolution's dw" : "its w");
  bool toY = !toX && !toW;
  uint8_t* y = deviceBytes(device, job.y, bytes(p.y), toY ? write : read, toY ? "the convolution's y" : "its dy");
  const uint8_t* z = job.fused && job.alpha2 != 0 ? deviceBytes(device, job.z, bytes(p.y), read, "its z") : nullptr;
  const uint8_t* bias = job.fused ? deviceBytes(device, job.bias, bytes(job.biasDesc), read, "its bias") : nullptr;
  if (!x || !w || !y || (job.fused && ((job.alpha2 != 0 && !z) || !bias))) return CUDA_ERROR_ILLEGAL_ADDRESS;

  size_t outCount = toX ? bytes(p.x) / size : toW ? bytes(p.w) / size : bytes(p.y) / size;
  std::vector<double> sum(outCount, 0.0);
  auto value = [&](const uint8_t* base, int64_t index) { return gpusim::standins::load(base + index * size, e); };
  // f32 on tensor cores (a TENSOR_OP math type) rounds its operands to TF32, as the GPU does.
  bool toTf32 = p.x.type == CUDNN_DATA_FLOAT &&
                (p.conv.math == CUDNN_TENSOR_OP_MATH || p.conv.math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION);
  auto operand = [&](const uint8_t* base, int64_t index) {
    double v = value(base, index);
    return toTf32 ? gpusim::standins::tf32(v) : v;
  };
  forEachTerm(p, [&](int n, int o, int oh, int ow, int channel, int ih, int iw, int ci, int r, int s) {
    int64_t xi = at(p.x, n, channel, ih, iw), wi = at(p.w, o, ci, r, s), yi = at(p.y, n, o, oh, ow);
    if (toX) sum[static_cast<size_t>(xi)] += operand(y, yi) * operand(w, wi);
    else if (toW) sum[static_cast<size_t>(wi)] += operand(y, yi) * operand(x, xi);
    else sum[static_cast<size_t>(yi)] += operand(x, xi) * operand(w, wi);
  });
  uint8_t* out = toX ? x : toW ? w : y;
  for (size_t i = 0; i < outCount; ++i) {
    double v = job.alpha * sum[i];
    if (job.beta != 0) v += job.beta * value(out, static_cast<int64_t>(i));
    if (job.fused) {
      int64_t channel = p.y.format == CUDNN_TENSOR_NHWC ? static_cast<int64_t>(i) % p.y.c
                                                        : static_cast<int64_t>(i) / (p.y.h * p.y.w) % p.y.c;
      if (z) v += job.alpha2 * value(z, static_cast<int64_t>(i));
      v += value(bias, at(job.biasDesc, 0, channel, 0, 0));
      if (job.relu) v = std::isnan(v) ? v : std::max(v, 0.0);
    }
    gpusim::standins::store(out + i * size, e, v);
  }
  return 0;
}

cudnnStatus_t checkRange(int device, uint64_t address, size_t size, const char* what) {
  if (size == 0 || gpusimDeviceMemory(device, address, size, 0, what)) return CUDNN_STATUS_SUCCESS;
  lastError() = std::string(what) + " is not inside one live allocation";
  return CUDNN_STATUS_BAD_PARAM;
}

double scalar(const void* p, const Problem& problem) {
  return problem.x.type == CUDNN_DATA_DOUBLE ? *static_cast<const double*>(p) : *static_cast<const float*>(p);
}

// Checks a call and queues it on the handle's stream.
cudnnStatus_t launch(cudnnHandle_t handle, std::unique_ptr<ConvWork> job, int algo, size_t workspaceBytes,
                     const void* workspace, const char* name) {
  if (cudnnStatus_t s = checkProblem(job->p)) return s;
  if (!offered(algo)) return refuse(CUDNN_STATUS_NOT_SUPPORTED, std::string(name) + " with algorithm " + std::to_string(algo));
  size_t needed = workspaceFor(job->p, algo);
  if (workspaceBytes < needed || (needed && !workspace))
    return refuse(CUDNN_STATUS_BAD_PARAM, std::string(name) + ": algorithm " + std::to_string(algo) + " needs " +
                                              std::to_string(needed) + " bytes of workspace; the call gives " +
                                              std::to_string(workspaceBytes));
  int device = handle->device;
  for (auto [address, size, what] : {std::tuple{job->x, bytes(job->p.x), "the convolution's x (or dx)"},
                                     std::tuple{job->w, bytes(job->p.w), "the convolution's w (or dw)"},
                                     std::tuple{job->y, bytes(job->p.y), "the convolution's y (or dy)"}})
    if (cudnnStatus_t s = checkRange(device, address, size, what)) return s;
  int r = gpusimLaunchHostWork(handle->stream, name, runConv, job.release(),
                               [](void* u) { delete static_cast<ConvWork*>(u); });
  return r == 0 ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_EXECUTION_FAILED;
}

Problem problemOf(cudnnTensorDescriptor_t x, cudnnFilterDescriptor_t w, cudnnConvolutionDescriptor_t c,
                  cudnnTensorDescriptor_t y) {
  return Problem{*x, *y, *w, *c};
}

}  // namespace

// --- handles, versions, errors ---

STANDIN_EXPORT size_t cudnnGetVersion(void) { return CUDNN_VERSION; }

STANDIN_EXPORT cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) {
  if (!handle) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  int device = gpusimCurrentDevice();
  if (device < 0) return refuse(CUDNN_STATUS_NOT_INITIALIZED, "cudnnCreate without a current CUDA context");
  *handle = new cudnnContext{device, nullptr};
  return CUDNN_STATUS_SUCCESS;
}

STANDIN_EXPORT cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  delete handle;
  return CUDNN_STATUS_SUCCESS;
}

STANDIN_EXPORT cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  if (!handle) return CUDNN_STATUS_NOT_INITIALIZED;
  handle->stream = reinterpret_cast<CUstream>(stream);
  return CUDNN_STATUS_SUCCESS;
}

STANDIN_EXPORT const char* cudnnGetErrorString(cudnnStatus_t status) {
  switch (status) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_NOT_INITIALIZED: return "CUDNN_STATUS_NOT_INITIALIZED";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_BAD_PARAM_NULL_POINTER: return "CUDNN_STATUS_BAD_PARAM_NULL_POINTER";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    case CUDNN_STATUS_NOT_SUPPORTED_LAYOUT: return "CUDNN_STATUS_NOT_SUPPORTED_LAYOUT";
    case CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE: return "CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE";
    case CUDNN_STATUS_EXECUTION_FAILED: return "CUDNN_STATUS_EXECUTION_FAILED";
    default: return "CUDNN_STATUS_UNKNOWN";
  }
}

STANDIN_EXPORT void cudnnGetLastErrorString(char* message, size_t maxSize) {
  if (!message || maxSize == 0) return;
  std::string& last = lastError();
  std::snprintf(message, maxSize, "%s", last.c_str());
  last.clear();
}

// --- descriptors ---

#define STANDIN_CREATE_DESTROY(Type, Create, Destroy)                  \
  STANDIN_EXPORT cudnnStatus_t Create(Type** out) {                    \
    if (!out) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;              \
    *out = new Type;                                                   \
    return CUDNN_STATUS_SUCCESS;                                       \
  }                                                                    \
  STANDIN_EXPORT cudnnStatus_t Destroy(Type* d) {                      \
    delete d;                                                          \
    return CUDNN_STATUS_SUCCESS;                                       \
  }
STANDIN_CREATE_DESTROY(cudnnTensorStruct, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor)
STANDIN_CREATE_DESTROY(cudnnFilterStruct, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor)
STANDIN_CREATE_DESTROY(cudnnConvolutionStruct, cudnnCreateConvolutionDescriptor, cudnnDestroyConvolutionDescriptor)
STANDIN_CREATE_DESTROY(cudnnActivationStruct, cudnnCreateActivationDescriptor, cudnnDestroyActivationDescriptor)
#undef STANDIN_CREATE_DESTROY

STANDIN_EXPORT cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t t, cudnnTensorFormat_t format,
                                                        cudnnDataType_t type, int n, int c, int h, int w) {
  if (!t) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (n < 1 || c < 1 || h < 1 || w < 1)
    return refuse(CUDNN_STATUS_BAD_PARAM, "cudnnSetTensor4dDescriptor of " + dims(n, c, h, w));
  if (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC)
    return refuse(CUDNN_STATUS_NOT_SUPPORTED_LAYOUT, "a tensor format other than NCHW or NHWC");
  *t = cudnnTensorStruct{true, type, format, n, c, h, w};
  return CUDNN_STATUS_SUCCESS;
}

STANDIN_EXPORT cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t f, cudnnDataType_t type,
                                                        cudnnTensorFormat_t format, int k, int c, int h, int w) {
  if (!f) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (k < 1 || c < 1 || h < 1 || w < 1)
    return refuse(CUDNN_STATUS_BAD_PARAM, "cudnnSetFilter4dDescriptor of " + dims(k, c, h, w));
  *f = cudnnFilterStruct{true, type, format, k, c, h, w};
  return CUDNN_STATUS_SUCCESS;
}

STANDIN_EXPORT cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d, int padH, int padW,
                                                             int strideH, int strideW, int dilationH, int dilationW,
                                                             cudnnConvolutionMode_t mode, cudnnDataType_t compute) {
  if (!d) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (padH < 0 || padW < 0 || strideH < 1 || strideW < 1 || dilationH < 1 || dilationW < 1)
    return refuse(CUDNN_STATUS_BAD_PARAM, "cudnnSetConvolution2dDescriptor: padding must be >= 0, strides and "
                                          "dilations >= 1");
  d->set = true;
  d->padH = padH, d->padW = padW, d->strideH = strideH, d->strideW = strideW;
  d->dilationH = dilationH, d->dilationW = dilationW, d->mode = mode, d->compute = compute;
  return CUDNN_STATUS_SUCCESS;
}

STANDIN_EXPORT cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int groups) {
  if (!d) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (groups < 1) return refuse(CUDNN_STATUS_BAD_PARAM, "a group count below 1");
  d->groups = groups;
  return CUDNN_STATUS_SUCCESS;
}

STANDIN_EXPORT cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t math) {
  if (!d) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  d->math = math;
  return CUDNN_STATUS_SUCCESS;
}

STANDIN_EXPORT cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t a, cudnnActivationMode_t mode,
                                                          cudnnNanPropagation_t nan, double coef) {
  if (!a) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  *a = cudnnActivationStruct{true, mode, nan, coef};
  return CUDNN_STATUS_SUCCESS;
}

// --- heuristics and workspace ---

STANDIN_EXPORT cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t x, const cudnnFilterDescriptor_t w,
    const cudnnConvolutionDescriptor_t c, const cudnnTensorDescriptor_t y, const int requested, int* returned,
    cudnnConvolutionFwdAlgoPerf_t* perfs) {
  if (!handle) return CUDNN_STATUS_NOT_INITIALIZED;
  if (!x || !w || !c || !y || !returned || !perfs || requested < 1) return CUDNN_STATUS_BAD_PARAM;
  Problem p = problemOf(x, w, c, y);
  if (cudnnStatus_t s = checkProblem(p)) return s;
  rank<cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionFwdAlgo_t>(p, requested, returned, perfs,
                                                                 CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
  return CUDNN_STATUS_SUCCESS;
}

STANDIN_EXPORT cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t w, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t c, const cudnnTensorDescriptor_t dx, const int requested, int* returned,
    cudnnConvolutionBwdDataAlgoPerf_t* perfs) {
  if (!handle) return CUDNN_STATUS_NOT_INITIALIZED;
  if (!w || !dy || !c || !dx || !returned || !perfs || requested < 1) return CUDNN_STATUS_BAD_PARAM;
  Problem p = problemOf(dx, w, c, dy);
  if (cudnnStatus_t s = checkProblem(p)) return s;
  rank<cudnnConvolutionBwdDataAlgoPerf_t, cudnnConvolutionBwdDataAlgo_t>(p, requested, returned, perfs,
                                                                         CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
  return CUDNN_STATUS_SUCCESS;
}

STANDIN_EXPORT cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t x, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t c, const cudnnFilterDescriptor_t dw, const int requested, int* returned,
    cudnnConvolutionBwdFilterAlgoPerf_t* perfs) {
  if (!handle) return CUDNN_STATUS_NOT_INITIALIZED;
  if (!x || !dy || !c || !dw || !returned || !perfs || requested < 1) return CUDNN_STATUS_BAD_PARAM;
  Problem p = problemOf(x, dw, c, dy);
  if (cudnnStatus_t s = checkProblem(p)) return s;
  rank<cudnnConvolutionBwdFilterAlgoPerf_t, cudnnConvolutionBwdFilterAlgo_t>(p, requested, returned, perfs,
                                                                             CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);
  return CUDNN_STATUS_SUCCESS;
}

namespace {

cudnnStatus_t workspaceSize(cudnnHandle_t handle, const Problem& p, int algo, size_t* size) {
  if (!handle) return CUDNN_STATUS_NOT_INITIALIZED;
  if (!size) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (cudnnStatus_t s = checkProblem(p)) return s;
  if (!offered(algo)) return refuse(CUDNN_STATUS_NOT_SUPPORTED, "algorithm " + std::to_string(algo));
  *size = workspaceFor(p, algo);
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace

STANDIN_EXPORT cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t handle,
                                                                     const cudnnTensorDescriptor_t x,
                                                                     const cudnnFilterDescriptor_t w,
                                                                     const cudnnConvolutionDescriptor_t c,
                                                                     const cudnnTensorDescriptor_t y,
                                                                     cudnnConvolutionFwdAlgo_t algo, size_t* size) {
  if (!x || !w || !c || !y) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  return workspaceSize(handle, problemOf(x, w, c, y), algo, size);
}

STANDIN_EXPORT cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(cudnnHandle_t handle,
                                                                          const cudnnFilterDescriptor_t w,
                                                                          const cudnnTensorDescriptor_t dy,
                                                                          const cudnnConvolutionDescriptor_t c,
                                                                          const cudnnTensorDescriptor_t dx,
                                                                          cudnnConvolutionBwdDataAlgo_t algo,
                                                                          size_t* size) {
  if (!w || !dy || !c || !dx) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  return workspaceSize(handle, problemOf(dx, w, c, dy), algo, size);
}

STANDIN_EXPORT cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnnHandle_t handle,
                                                                            const cudnnTensorDescriptor_t x,
                                                                            const cudnnTensorDescriptor_t dy,
                                                                            const cudnnConvolutionDescriptor_t c,
                                                                            const cudnnFilterDescriptor_t dw,
                                                                            cudnnConvolutionBwdFilterAlgo_t algo,
                                                                            size_t* size) {
  if (!x || !dy || !c || !dw) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  return workspaceSize(handle, problemOf(x, dw, c, dy), algo, size);
}

// --- the convolutions ---

STANDIN_EXPORT cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void* alpha,
                                                     const cudnnTensorDescriptor_t xDesc, const void* x,
                                                     const cudnnFilterDescriptor_t wDesc, const void* w,
                                                     const cudnnConvolutionDescriptor_t convDesc,
                                                     cudnnConvolutionFwdAlgo_t algo, void* workspace,
                                                     size_t workspaceBytes, const void* beta,
                                                     const cudnnTensorDescriptor_t yDesc, void* y) {
  if (!handle) return CUDNN_STATUS_NOT_INITIALIZED;
  if (!alpha || !beta || !xDesc || !wDesc || !convDesc || !yDesc) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  auto job = std::make_unique<ConvWork>();
  job->direction = Direction::Forward;
  job->p = problemOf(xDesc, wDesc, convDesc, yDesc);
  job->alpha = scalar(alpha, job->p), job->beta = scalar(beta, job->p);
  job->x = reinterpret_cast<uint64_t>(x), job->w = reinterpret_cast<uint64_t>(w), job->y = reinterpret_cast<uint64_t>(y);
  return launch(handle, std::move(job), algo, workspaceBytes, workspace, "cudnnConvolutionForward");
}

STANDIN_EXPORT cudnnStatus_t cudnnConvolutionBiasActivationForward(
    cudnnHandle_t handle, const void* alpha1, const cudnnTensorDescriptor_t xDesc, const void* x,
    const cudnnFilterDescriptor_t wDesc, const void* w, const cudnnConvolutionDescriptor_t convDesc,
    cudnnConvolutionFwdAlgo_t algo, void* workspace, size_t workspaceBytes, const void* alpha2,
    const cudnnTensorDescriptor_t zDesc, const void* z, const cudnnTensorDescriptor_t biasDesc, const void* bias,
    const cudnnActivationDescriptor_t activation, const cudnnTensorDescriptor_t yDesc, void* y) {
  if (!handle) return CUDNN_STATUS_NOT_INITIALIZED;
  if (!alpha1 || !alpha2 || !xDesc || !wDesc || !convDesc || !zDesc || !biasDesc || !activation || !yDesc)
    return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  auto job = std::make_unique<ConvWork>();
  job->direction = Direction::Forward;
  job->p = problemOf(xDesc, wDesc, convDesc, yDesc);
  if (cudnnStatus_t s = checkProblem(job->p)) return s;
  if (!activation->set || (activation->mode != CUDNN_ACTIVATION_RELU && activation->mode != CUDNN_ACTIVATION_IDENTITY))
    return refuse(CUDNN_STATUS_NOT_SUPPORTED, "cudnnConvolutionBiasActivationForward takes relu or identity only");
  if (activation->mode == CUDNN_ACTIVATION_IDENTITY && algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)
    return refuse(CUDNN_STATUS_NOT_SUPPORTED, "the identity activation is fused with IMPLICIT_PRECOMP_GEMM only");
  const cudnnTensorStruct& b = *biasDesc;
  if (!b.set || b.n != 1 || b.c != job->p.y.c || b.h != 1 || b.w != 1 || b.type != yDesc->type)
    return refuse(CUDNN_STATUS_BAD_PARAM, "the bias must be [1," + std::to_string(job->p.y.c) + ",1,1] of y's type");
  if (!zDesc->set || zDesc->n != yDesc->n || zDesc->c != yDesc->c || zDesc->h != yDesc->h || zDesc->w != yDesc->w)
    return refuse(CUDNN_STATUS_BAD_PARAM, "z must have y's dimensions");
  job->alpha = scalar(alpha1, job->p), job->alpha2 = scalar(alpha2, job->p);
  job->x = reinterpret_cast<uint64_t>(x), job->w = reinterpret_cast<uint64_t>(w), job->y = reinterpret_cast<uint64_t>(y);
  job->z = reinterpret_cast<uint64_t>(z), job->bias = reinterpret_cast<uint64_t>(bias);
  job->zDesc = *zDesc, job->biasDesc = b;
  job->fused = true;
  job->relu = activation->mode == CUDNN_ACTIVATION_RELU;
  if (cudnnStatus_t s = checkRange(handle->device, job->bias, bytes(b), "the convolution's bias")) return s;
  return launch(handle, std::move(job), algo, workspaceBytes, workspace, "cudnnConvolutionBiasActivationForward");
}

STANDIN_EXPORT cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t handle, const void* alpha,
                                                          const cudnnFilterDescriptor_t wDesc, const void* w,
                                                          const cudnnTensorDescriptor_t dyDesc, const void* dy,
                                                          const cudnnConvolutionDescriptor_t convDesc,
                                                          cudnnConvolutionBwdDataAlgo_t algo, void* workspace,
                                                          size_t workspaceBytes, const void* beta,
                                                          const cudnnTensorDescriptor_t dxDesc, void* dx) {
  if (!handle) return CUDNN_STATUS_NOT_INITIALIZED;
  if (!alpha || !beta || !wDesc || !dyDesc || !convDesc || !dxDesc) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  auto job = std::make_unique<ConvWork>();
  job->direction = Direction::BackwardData;
  job->p = problemOf(dxDesc, wDesc, convDesc, dyDesc);
  job->alpha = scalar(alpha, job->p), job->beta = scalar(beta, job->p);
  job->x = reinterpret_cast<uint64_t>(dx), job->w = reinterpret_cast<uint64_t>(w), job->y = reinterpret_cast<uint64_t>(dy);
  return launch(handle, std::move(job), algo, workspaceBytes, workspace, "cudnnConvolutionBackwardData");
}

STANDIN_EXPORT cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t handle, const void* alpha,
                                                            const cudnnTensorDescriptor_t xDesc, const void* x,
                                                            const cudnnTensorDescriptor_t dyDesc, const void* dy,
                                                            const cudnnConvolutionDescriptor_t convDesc,
                                                            cudnnConvolutionBwdFilterAlgo_t algo, void* workspace,
                                                            size_t workspaceBytes, const void* beta,
                                                            const cudnnFilterDescriptor_t dwDesc, void* dw) {
  if (!handle) return CUDNN_STATUS_NOT_INITIALIZED;
  if (!alpha || !beta || !xDesc || !dyDesc || !convDesc || !dwDesc) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  auto job = std::make_unique<ConvWork>();
  job->direction = Direction::BackwardFilter;
  job->p = problemOf(xDesc, dwDesc, convDesc, dyDesc);
  job->alpha = scalar(alpha, job->p), job->beta = scalar(beta, job->p);
  job->x = reinterpret_cast<uint64_t>(x), job->w = reinterpret_cast<uint64_t>(dw), job->y = reinterpret_cast<uint64_t>(dy);
  return launch(handle, std::move(job), algo, workspaceBytes, workspace, "cudnnConvolutionBackwardFilter");
}
