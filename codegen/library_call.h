// Which vendor library call runs a kernel group: on the CUDA target cuBLASLt for a matmul and its
// epilogue, cuDNN for a conv2d and its epilogue; on the CPU oneDNN for an f32 matmul and its
// epilogue; else the generated kernel, with the reason. Pure planning (no CUDA or oneDNN headers),
// so `kiln explain` says the same thing on any machine, and the runtimes (runtime/cuda/cublaslt.h,
// cudnn.h; runtime/onednn.h) execute exactly what this describes.
#pragma once

#include <cstdint>
#include <string>
#include <variant>

#include "codegen/compile_options.h"
#include "codegen/kernel_plan.h"

namespace kiln::codegen {

// The elementwise ops after a matmul that cuBLASLt applies in its epilogue, in that order: the bias
// add first, then the activation. Gelu is the tanh approximation only: that is what cuBLASLt's
// GELU computes, and kiln's default gelu (approximate = "none") is the erf form.
enum class MatmulEpilogue { None, Bias, Relu, BiasRelu, Gelu, BiasGelu };

// C = A @ B (+ bias) (then relu or gelu), row-major, repeated over a strided batch. Buffer
// indices count the group's inputs, then its outputs: the kernel's argument order.
struct MatmulCall {
  DType dtype = DType::F32;         // of A, B, the bias and C alike: f32, f16, bf16 or f64
  int64_t m = 0, n = 0, k = 0;      // A is [m,k], B is [k,n], C is [m,n] (1-D operands promoted)
  int64_t batch = 1;                // C is `batch` matrices m x n, one after another
  int64_t batchStrideA = 0;         // elements between A's matrices; 0 when A is broadcast
  int64_t batchStrideB = 0;         // the same for B
  int a = -1, b = -1, bias = -1, output = -1;  // buffer indices; bias is -1 without a bias add
  // The buffer holds the operand transposed (A as [batch?,k,m], B as [batch?,n,k]): the group
  // computes the operand as a transpose of its last two axes, which the library reads in place.
  bool transposeA = false, transposeB = false;
  MatmulEpilogue epilogue = MatmulEpilogue::None;
  // A residual added after the bias and before the activation: C = act(A @ B + bias + R), R a
  // buffer of C's type and shape (cuBLASLt's C with beta = 1; oneDNN's sum post-op, C starting
  // as a copy of R). -1 without one.
  int residual = -1;

  bool operator==(const MatmulCall&) const = default;
};

// What the library applies after the convolution: cudnnConvolutionBiasActivationForward adds a
// per-channel bias and then applies relu or nothing; oneDNN's post-ops also relu6 (eltwise_clip
// to [0, 6]), which kiln asks of oneDNN alone.
enum class ConvEpilogue { None, Bias, BiasRelu, BiasRelu6 };

// Which cuDNN convolution: y = conv2d(x, w) or one of its two gradients (the backward ops).
enum class ConvDirection { Forward, BackwardData, BackwardFilter };

// y = conv2d(x, w) (+ bias[o]) (then relu), NCHW (or NHWC), as ONNX Conv with symmetric pads; or, for the
// backward ops, dx from (dy, w) or dw from (x, dy) of that convolution (no epilogue).
struct ConvCall {
  ConvDirection direction = ConvDirection::Forward;
  DType dtype = DType::F32;
  int64_t n = 0, c = 0, h = 0, w = 0;  // x is [n,c,h,w]
  int64_t o = 0, kh = 0, kw = 0;       // w is [o,c/groups,kh,kw]
  int64_t outH = 0, outW = 0;          // y is [n,o,outH,outW]
  // padH and padW: the top and left padding (cuDNN's, both sides); oneDNN's far sides follow from
  // the output size, so asymmetric pads (the CPU only) need no more.
  int64_t strideH = 1, strideW = 1, padH = 0, padW = 0, dilationH = 1, dilationW = 1, groups = 1;
  // Buffer indices; bias is -1 without a bias add. Forward: x, weights -> output (y).
  // BackwardData: dy, weights -> output (dx). BackwardFilter: x, dy -> output (dw).
  int x = -1, weights = -1, dy = -1, bias = -1, output = -1;
  ConvEpilogue epilogue = ConvEpilogue::None;
  // A residual added after the bias and before the activation: y = act(conv(x, w) + bias + r), r
  // a buffer of y's type and shape (cuDNN's z with alpha2 = 1; oneDNN's sum post-op, y starting
  // as a copy of r). Forward only, and only with a bias (cuDNN adds z in its fused call alone).
  // -1 without one.
  int residual = -1;
  // conv2d {layout = "nhwc"}: x and y are stored [n,h,w,c] and [n,outH,outW,o] (forward only;
  // the channels-last pass writes it on the CPU, where oneDNN's kernels take this layout directly).
  bool channelsLast = false;

  bool operator==(const ConvCall&) const = default;
};

// The generated kernel runs the group, for `reason` ("epilogue 'sigmoid' has no cuBLASLt epilogue").
struct GeneratedKernel {
  std::string reason;
};

using LibraryCall = std::variant<GeneratedKernel, MatmulCall, ConvCall>;

// Whether the group holds a matmul, conv2d or pooling op (a `library` fusion or a lone such op).
bool hasLibraryOp(const KernelGroup& group);

// The input the group's library op adds to its result as a residual (MatmulCall::residual,
// ConvCall::residual), where the group reads it only there; null otherwise. Its output may take
// the residual's bytes when nothing reads the residual after the kernel (runtime/buffer_plan.h):
// every call, and the generated kernel, reads an output element's residual only to compute that
// element, before writing it (so no element is read through one buffer pointer after being
// written through the other, and the kernels' noalias buffer parameters still hold).
const Value* inPlaceResidual(const KernelGroup& group);

// The library call that computes the whole group, or GeneratedKernel with the reason it cannot:
// an op the library cannot apply, a dtype it does not take, a batch broadcast that is not one
// strided batch, asymmetric padding, an intermediate value the kernel must also store.
LibraryCall selectLibraryCall(const KernelGroup& group, Target target = Target::Cuda);

// "bias+relu", "none", ...; with a residual, "bias+residual+relu".
std::string epilogueName(MatmulEpilogue epilogue, bool residual = false);
std::string epilogueName(ConvEpilogue epilogue, bool residual = false);

// What `kiln explain` prints: "cuBLASLt matmul (epilogue bias+relu)", "cuDNN conv2d (bias+relu)",
// "oneDNN matmul (no epilogue)" on the CPU, "generated kernel: <reason>".
std::string describeLibraryCall(const LibraryCall& call, Target target = Target::Cuda);

// A row-major MatmulCall as the column-major GEMM cuBLASLt computes. Row-major C[m,n] is
// column-major C^T[n,m] with leading dimension n, so C = A @ B is C^T = B^T @ A^T: cuBLASLt's
// first operand is kiln's B (n x k, ld n), its second is kiln's A (k x m, ld k), and its output
// has n rows, which is why a bias of length n (one value per column of kiln's C) is cuBLASLt's
// per-row bias. A kiln operand stored transposed (B as [n,k] row-major) is the column-major k x n
// matrix with ld k, which cuBLASLt takes with CUBLAS_OP_T: its layout is then k x n (rows x cols
// as stored, before the op).
struct ColumnMajorGemm {
  int64_t m = 0, n = 0, k = 0;             // cuBLASLt's: m = kiln n, n = kiln m
  int first = -1, second = -1, output = -1; // buffer indices of cuBLASLt's A, B and D (C = D)
  bool transFirst = false, transSecond = false;  // CUBLASLT_MATMUL_DESC_TRANSA, TRANSB
  int64_t rowsFirst = 0, colsFirst = 0, rowsSecond = 0, colsSecond = 0;  // as stored
  int64_t ldFirst = 0, ldSecond = 0, ldOutput = 0;
  int64_t strideFirst = 0, strideSecond = 0, strideOutput = 0;  // batch strides in elements
  int64_t batch = 1;
};
ColumnMajorGemm columnMajorGemm(const MatmulCall& call);

}  // namespace kiln::codegen
