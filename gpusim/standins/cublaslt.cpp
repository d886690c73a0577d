// libkiln_gpusim_cublaslt.so: cuBLASLt's C ABI (cublasLt.h) over the GPU simulator, for the calls
// kiln makes (runtime/cuda/cublaslt.cpp). Descriptors keep their attributes; cublasLtMatmul checks
// its arguments as cuBLASLt documents (status codes included) and queues a host reference of
// D = epilogue(alpha op(A) op(B) + beta C) on the stream (gpusimLaunchHostWork), over the
// simulated device memory. What it accepts: column- or row-ordered layouts, either op on A and B,
// strided batches, f16/bf16/f32 (f32 compute, TF32 when asked) and f64, the epilogues DEFAULT,
// RELU, BIAS, RELU_BIAS, GELU and GELU_BIAS, host-pointer alpha and beta. The rest of cuBLASLt
// answers CUBLAS_STATUS_NOT_SUPPORTED, as cuBLASLt does for a problem it has no kernel for.
//
// As the real library: the heuristic's algorithm assumes 256-byte aligned matrices unless the
// preference lowers CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES, so a less aligned pointer makes
// cublasLtMatmul answer NOT_SUPPORTED; the algorithm asks for workspace (up to the preference's
// maximum), and a call given less is INVALID_VALUE. Unlike it, device ranges are checked when
// called and again when run, and a bad one is reported instead of faulting.
#include <cublasLt.h>
#include <cuda.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>

#include "gpusim/standins/standin_support.h"


namespace {

using gpusim::standins::bytesOf;
using gpusim::standins::deviceBytes;
using gpusim::standins::Element;
using gpusim::standins::tf32;

constexpr uint64_t kAlgoTag = 0x6B696C6E'63426C74ull;  // "kilncBlt": an algorithm this library made
constexpr size_t kWorkspaceWanted = size_t{1} << 20;  // what the algorithm asks for, at most

struct Layout {
  cudaDataType_t type = CUDA_R_32F;
  int32_t order = CUBLASLT_ORDER_COL;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
  int32_t batch = 1;
  int64_t batchStride = 0;
};

struct Desc {
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cudaDataType_t scale = CUDA_R_32F;
  int32_t pointerMode = CUBLASLT_POINTER_MODE_HOST;
  int32_t transA = CUBLAS_OP_N, transB = CUBLAS_OP_N;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
  int32_t biasType = -1;  // -1: D's type
  int64_t biasBatchStride = 0;
};

struct Preference {
  uint64_t maxWorkspace = 0;
  uint32_t minAlignment[4] = {256, 256, 256, 256};  // A, B, C, D
};

Element elementOf(cudaDataType_t t) {
  switch (t) {
    case CUDA_R_16F: return Element::F16;
    case CUDA_R_16BF: return Element::BF16;
    case CUDA_R_32F: return Element::F32;
    case CUDA_R_64F: return Element::F64;
    default: return Element::None;
  }
}

size_t elementBytes(cudaDataType_t t) { return bytesOf(elementOf(t)); }

const char* typeName(cudaDataType_t t) {
  switch (t) {
    case CUDA_R_16F: return "CUDA_R_16F";
    case CUDA_R_16BF: return "CUDA_R_16BF";
    case CUDA_R_32F: return "CUDA_R_32F";
    case CUDA_R_64F: return "CUDA_R_64F";
    default: return "an unsupported cudaDataType_t";
  }
}

double load(const uint8_t* p, cudaDataType_t t) { return gpusim::standins::load(p, elementOf(t)); }
void store(uint8_t* p, cudaDataType_t t, double v) { gpusim::standins::store(p, elementOf(t), v); }


// Where element (r, c) of one batch entry of `l` lies, in elements from the entry's start.
int64_t offsetOf(const Layout& l, uint64_t r, uint64_t c) {
  return l.order == CUBLASLT_ORDER_COL ? static_cast<int64_t>(r) + static_cast<int64_t>(c) * l.ld
                                       : static_cast<int64_t>(r) * l.ld + static_cast<int64_t>(c);
}

// The bytes a layout's matrices span, first element to last (0 for an empty matrix).
size_t spanBytes(const Layout& l) {
  if (l.rows == 0 || l.cols == 0 || l.batch == 0) return 0;
  int64_t last = offsetOf(l, l.rows - 1, l.cols - 1) + static_cast<int64_t>(l.batch - 1) * l.batchStride;
  return static_cast<size_t>(last + 1) * elementBytes(l.type);
}

uint32_t alignmentOf(const void* p) {
  auto a = reinterpret_cast<uintptr_t>(p);
  uint32_t alignment = 256;
  while (alignment > 1 && a % alignment != 0) alignment /= 2;
  return alignment;
}

// A refused call's status. A caller's mistake (INVALID_VALUE, NOT_INITIALIZED) is also reported
// (gpusimLastReport, and a "gpusim: " line on stderr); NOT_SUPPORTED, cuBLASLt's "no kernel for
// this problem", is an answer callers act on (kiln then runs its own kernel), so it is not.
cublasStatus_t refuse(cublasStatus_t status, const std::string& why) {
  if (status != CUBLAS_STATUS_NOT_SUPPORTED) gpusimReport(("cublasLt stand-in: " + why).c_str());
  return status;
}

bool hasBias(uint32_t e) { return e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_RELU_BIAS || e == CUBLASLT_EPILOGUE_GELU_BIAS; }
bool hasRelu(uint32_t e) { return e == CUBLASLT_EPILOGUE_RELU || e == CUBLASLT_EPILOGUE_RELU_BIAS; }
bool hasGelu(uint32_t e) { return e == CUBLASLT_EPILOGUE_GELU || e == CUBLASLT_EPILOGUE_GELU_BIAS; }

// The problem's supported combinations (cublasLtMatmul's table, the part kiln uses): "" or why not.
std::string unsupported(const Desc& d, const Layout& a, const Layout& b, const Layout& c, const Layout& out) {
  if (a.type != b.type) return "A and B have different types";
  if (c.type != out.type) return "C and D have different types";
  bool f64 = d.compute == CUBLAS_COMPUTE_64F || d.compute == CUBLAS_COMPUTE_64F_PEDANTIC;
  if (f64) {
    if (d.scale != CUDA_R_64F || a.type != CUDA_R_64F || c.type != CUDA_R_64F)
      return "CUBLAS_COMPUTE_64F takes CUDA_R_64F scale, inputs and outputs";
  } else if (d.compute == CUBLAS_COMPUTE_32F || d.compute == CUBLAS_COMPUTE_32F_PEDANTIC ||
             d.compute == CUBLAS_COMPUTE_32F_FAST_TF32) {
    if (d.scale != CUDA_R_32F) return "32-bit compute takes a CUDA_R_32F scale type";
    bool same = a.type == c.type && (a.type == CUDA_R_32F || a.type == CUDA_R_16F || a.type == CUDA_R_16BF);
    bool halfToFloat = (a.type == CUDA_R_16F || a.type == CUDA_R_16BF) && c.type == CUDA_R_32F;
    if (!same && !halfToFloat)
      return std::string("inputs ") + typeName(a.type) + " with outputs " + typeName(c.type) + " in 32-bit compute";
    if (d.compute == CUBLAS_COMPUTE_32F_FAST_TF32 && a.type != CUDA_R_32F) return "TF32 compute takes CUDA_R_32F inputs";
  } else {
    return "compute type " + std::to_string(d.compute) + " (the stand-in has 32F, 32F_FAST_TF32 and 64F)";
  }
  for (const Layout* l : {&a, &b, &c, &out})
    if (l->order != CUBLASLT_ORDER_COL && l->order != CUBLASLT_ORDER_ROW) return "a layout order other than COL or ROW";
  uint32_t e = d.epilogue;
  if (e != CUBLASLT_EPILOGUE_DEFAULT && !hasBias(e) && !hasRelu(e) && !hasGelu(e))
    return "epilogue " + std::to_string(e) + " (the stand-in has DEFAULT, RELU, BIAS, RELU_BIAS, GELU, GELU_BIAS)";
  if (d.pointerMode != CUBLASLT_POINTER_MODE_HOST) return "alpha and beta on the device";
  if (d.transA != CUBLAS_OP_N && d.transA != CUBLAS_OP_T) return "TRANSA other than N or T";
  if (d.transB != CUBLAS_OP_N && d.transB != CUBLAS_OP_T) return "TRANSB other than N or T";
  if (hasBias(e) && d.biasType != -1 && d.biasType != out.type) return "a bias of another type than D";
  return "";
}

// op(X)'s rows and columns.
std::pair<uint64_t, uint64_t> opShape(const Layout& l, int32_t trans) {
  return trans == CUBLAS_OP_N ? std::pair{l.rows, l.cols} : std::pair{l.cols, l.rows};
}

// One queued matmul: everything it reads, copied when called (descriptors may change afterwards).
struct Matmul {
  Desc desc;
  Layout a, b, c, d;
  double alpha = 1, beta = 0;
  uint64_t pa = 0, pb = 0, pc = 0, pd = 0, pbias = 0;
  uint64_t m = 0, n = 0, k = 0;
};

// Views of one operand's bytes on the device; null (reported) when not inside one allocation.
uint8_t* view(int device, uint64_t address, const Layout& l, int access, const char* what) {
  size_t bytes = spanBytes(l);
  if (bytes == 0) return nullptr;
  return deviceBytes(device, address, bytes, access, what);
}

int runMatmul(int device, void* user) {
  const Matmul& mm = *static_cast<const Matmul*>(user);
  if (mm.m == 0 || mm.n == 0) return 0;
  const uint8_t* a = view(device, mm.pa, mm.a, GPUSIM_READ, "cublasLtMatmul's A");
  const uint8_t* b = view(device, mm.pb, mm.b, GPUSIM_READ, "cublasLtMatmul's B");
  const uint8_t* c = mm.beta != 0 ? view(device, mm.pc, mm.c, GPUSIM_READ, "cublasLtMatmul's C") : nullptr;
  uint8_t* d = view(device, mm.pd, mm.d, GPUSIM_WRITE, "cublasLtMatmul's D");
  size_t biasBytes = mm.m * elementBytes(mm.d.type);
  const uint8_t* bias = hasBias(mm.desc.epilogue)
                            ? deviceBytes(device, mm.pbias, biasBytes, GPUSIM_READ, "cublasLtMatmul's bias")
                            : nullptr;
  if ((mm.k && (!a || !b)) || (mm.beta != 0 && !c) || !d || (hasBias(mm.desc.epilogue) && !bias))
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  bool toTf32 = mm.desc.compute == CUBLAS_COMPUTE_32F_FAST_TF32;
  auto at = [](const Layout& l, int64_t batch, uint64_t r, uint64_t col) {  // in bytes
    return (batch * l.batchStride + offsetOf(l, r, col)) * static_cast<int64_t>(elementBytes(l.type));
  };
  for (int64_t batch = 0; batch < mm.d.batch; ++batch)
    for (uint64_t j = 0; j < mm.n; ++j)
      for (uint64_t i = 0; i < mm.m; ++i) {
        double sum = 0;
        for (uint64_t p = 0; p < mm.k; ++p) {
          auto [ar, ac] = mm.desc.transA == CUBLAS_OP_N ? std::pair{i, p} : std::pair{p, i};
          auto [br, bc] = mm.desc.transB == CUBLAS_OP_N ? std::pair{p, j} : std::pair{j, p};
          double x = load(a + at(mm.a, batch, ar, ac), mm.a.type);
          double y = load(b + at(mm.b, batch, br, bc), mm.b.type);
          if (toTf32) x = tf32(x), y = tf32(y);
          sum += x * y;
        }
        double v = mm.alpha * sum;
        if (mm.beta != 0) v += mm.beta * load(c + at(mm.c, batch, i, j), mm.c.type);
        if (bias) v += load(bias + (batch * mm.desc.biasBatchStride + static_cast<int64_t>(i)) *
                                       static_cast<int64_t>(elementBytes(mm.d.type)), mm.d.type);
        if (hasRelu(mm.desc.epilogue)) v = std::max(v, 0.0);
        if (hasGelu(mm.desc.epilogue))  // the tanh form, as cuBLASLt's GELU epilogue
          v = 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
        store(d + at(mm.d, batch, i, j), mm.d.type, v);
      }
  return 0;
}

template <class T>
cublasStatus_t setAttribute(T& field, const void* buf, size_t size) {
  if (!buf || size != sizeof(T)) return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(&field, buf, sizeof(T));
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

struct cublasLtContext {
  int device = -1;
};

// The opaque handles are the library's own structs; the caller only passes the pointers back.
static Layout* layoutOf(cublasLtMatrixLayout_t l) { return reinterpret_cast<Layout*>(l); }
static Desc* descOf(cublasLtMatmulDesc_t d) { return reinterpret_cast<Desc*>(d); }
static Preference* preferenceOf(cublasLtMatmulPreference_t p) { return reinterpret_cast<Preference*>(p); }

STANDIN_EXPORT cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  int device = gpusimCurrentDevice();
  if (device < 0) return refuse(CUBLAS_STATUS_NOT_INITIALIZED, "cublasLtCreate without a current CUDA context");
  *handle = new cublasLtContext{device};
  return CUBLAS_STATUS_SUCCESS;
}

STANDIN_EXPORT cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

// The version of the cuBLASLt this stands in for (the toolkit's headers it was built with).
STANDIN_EXPORT size_t cublasLtGetVersion(void) { return CUBLAS_VERSION; }

STANDIN_EXPORT const char* cublasLtGetStatusName(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "CUBLAS_STATUS_UNKNOWN";
  }
}

STANDIN_EXPORT const char* cublasLtGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    default: return "unknown error";
  }
}

STANDIN_EXPORT cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute,
                                                       cudaDataType_t scale) {
  if (!desc) return CUBLAS_STATUS_INVALID_VALUE;
  auto* d = new Desc;
  d->compute = compute;
  d->scale = scale;
  *desc = reinterpret_cast<cublasLtMatmulDesc_t>(d);
  return CUBLAS_STATUS_SUCCESS;
}

STANDIN_EXPORT cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete descOf(desc);
  return CUBLAS_STATUS_SUCCESS;
}

STANDIN_EXPORT cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                                             cublasLtMatmulDescAttributes_t attr, const void* buf,
                                                             size_t size) {
  Desc* d = descOf(desc);
  if (!d) return CUBLAS_STATUS_INVALID_VALUE;
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE: return setAttribute(d->compute, buf, size);
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE: return setAttribute(d->scale, buf, size);
    case CUBLASLT_MATMUL_DESC_POINTER_MODE: return setAttribute(d->pointerMode, buf, size);
    case CUBLASLT_MATMUL_DESC_TRANSA: return setAttribute(d->transA, buf, size);
    case CUBLASLT_MATMUL_DESC_TRANSB: return setAttribute(d->transB, buf, size);
    case CUBLASLT_MATMUL_DESC_EPILOGUE: return setAttribute(d->epilogue, buf, size);
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: return setAttribute(d->bias, buf, size);
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: return setAttribute(d->biasType, buf, size);
    case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE: return setAttribute(d->biasBatchStride, buf, size);
    default: return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "matmul descriptor attribute " + std::to_string(attr));
  }
}

STANDIN_EXPORT cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type,
                                                         uint64_t rows, uint64_t cols, int64_t ld) {
  if (!layout) return CUBLAS_STATUS_INVALID_VALUE;
  *layout = reinterpret_cast<cublasLtMatrixLayout_t>(new Layout{type, CUBLASLT_ORDER_COL, rows, cols, ld, 1, 0});
  return CUBLAS_STATUS_SUCCESS;
}

STANDIN_EXPORT cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  delete layoutOf(layout);
  return CUBLAS_STATUS_SUCCESS;
}

STANDIN_EXPORT cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                               cublasLtMatrixLayoutAttribute_t attr, const void* buf,
                                                               size_t size) {
  Layout* l = layoutOf(layout);
  if (!l) return CUBLAS_STATUS_INVALID_VALUE;
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_TYPE: {
      uint32_t t;
      if (cublasStatus_t s = setAttribute(t, buf, size)) return s;
      l->type = static_cast<cudaDataType_t>(t);
      return CUBLAS_STATUS_SUCCESS;
    }
    case CUBLASLT_MATRIX_LAYOUT_ORDER: return setAttribute(l->order, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_ROWS: return setAttribute(l->rows, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_COLS: return setAttribute(l->cols, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_LD: return setAttribute(l->ld, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: return setAttribute(l->batch, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: return setAttribute(l->batchStride, buf, size);
    default: return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "matrix layout attribute " + std::to_string(attr));
  }
}

STANDIN_EXPORT cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  if (!pref) return CUBLAS_STATUS_INVALID_VALUE;
  *pref = reinterpret_cast<cublasLtMatmulPreference_t>(new Preference);
  return CUBLAS_STATUS_SUCCESS;
}

STANDIN_EXPORT cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  delete preferenceOf(pref);
  return CUBLAS_STATUS_SUCCESS;
}

STANDIN_EXPORT cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                                   cublasLtMatmulPreferenceAttributes_t attr,
                                                                   const void* buf, size_t size) {
  Preference* p = preferenceOf(pref);
  if (!p) return CUBLAS_STATUS_INVALID_VALUE;
  switch (attr) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES: return setAttribute(p->maxWorkspace, buf, size);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES: return setAttribute(p->minAlignment[0], buf, size);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES: return setAttribute(p->minAlignment[1], buf, size);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES: return setAttribute(p->minAlignment[2], buf, size);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES: return setAttribute(p->minAlignment[3], buf, size);
    default: return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "matmul preference attribute " + std::to_string(attr));
  }
}

namespace {

// The checks cublasLtMatmul and the heuristic share: shapes, leading dimensions, batch counts, types.
cublasStatus_t checkProblem(const Desc& d, const Layout& a, const Layout& b, const Layout& c, const Layout& out) {
  auto [am, ak] = opShape(a, d.transA);
  auto [bk, bn] = opShape(b, d.transB);
  if (ak != bk || c.rows != am || c.cols != bn || out.rows != am || out.cols != bn)
    return refuse(CUBLAS_STATUS_INVALID_VALUE,
                  "op(A) is " + std::to_string(am) + "x" + std::to_string(ak) + ", op(B) " + std::to_string(bk) + "x" +
                      std::to_string(bn) + ", C " + std::to_string(c.rows) + "x" + std::to_string(c.cols) + ", D " +
                      std::to_string(out.rows) + "x" + std::to_string(out.cols) + ": they do not multiply");
  for (auto [l, name] : {std::pair{&a, "A"}, std::pair{&b, "B"}, std::pair{&c, "C"}, std::pair{&out, "D"}}) {
    uint64_t minLd = l->order == CUBLASLT_ORDER_COL ? l->rows : l->cols;
    if (l->ld < static_cast<int64_t>(std::max<uint64_t>(minLd, 1)))
      return refuse(CUBLAS_STATUS_INVALID_VALUE, std::string(name) + "'s leading dimension " + std::to_string(l->ld) +
                                                     " is less than its " + std::to_string(minLd) +
                                                     (l->order == CUBLASLT_ORDER_COL ? " rows" : " columns"));
    if (l->batch != out.batch)
      return refuse(CUBLAS_STATUS_INVALID_VALUE, std::string(name) + "'s batch count " + std::to_string(l->batch) +
                                                     " is not D's " + std::to_string(out.batch));
    if (elementBytes(l->type) == 0) return refuse(CUBLAS_STATUS_NOT_SUPPORTED, std::string(name) + "'s data type");
  }
  if (std::string why = unsupported(d, a, b, c, out); !why.empty()) return refuse(CUBLAS_STATUS_NOT_SUPPORTED, why);
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

STANDIN_EXPORT cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                                             cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                                             cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                                             cublasLtMatmulPreference_t pref, int requested,
                                                             cublasLtMatmulHeuristicResult_t results[],
                                                             int* returned) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!desc || !a || !b || !c || !d || !pref || requested < 1 || !results || !returned)
    return CUBLAS_STATUS_INVALID_VALUE;
  *returned = 0;
  if (cublasStatus_t s = checkProblem(*descOf(desc), *layoutOf(a), *layoutOf(b), *layoutOf(c), *layoutOf(d)))
    return s;
  const Preference& p = *preferenceOf(pref);
  std::memset(&results[0], 0, sizeof results[0]);
  results[0].algo.data[0] = kAlgoTag;
  results[0].workspaceSize = std::min<uint64_t>(p.maxWorkspace, kWorkspaceWanted);
  results[0].algo.data[1] = results[0].workspaceSize;
  for (int k = 0; k < 4; ++k) results[0].algo.data[2 + k] = p.minAlignment[k];
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1.0f;
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

STANDIN_EXPORT cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha,
                                             const void* A, cublasLtMatrixLayout_t adesc, const void* B,
                                             cublasLtMatrixLayout_t bdesc, const void* beta, const void* C,
                                             cublasLtMatrixLayout_t cdesc, void* D, cublasLtMatrixLayout_t ddesc,
                                             const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspaceBytes,
                                             cudaStream_t stream) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!desc || !adesc || !bdesc || !cdesc || !ddesc || !alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
  auto mm = std::make_unique<Matmul>();
  mm->desc = *descOf(desc);
  mm->a = *layoutOf(adesc), mm->b = *layoutOf(bdesc), mm->c = *layoutOf(cdesc), mm->d = *layoutOf(ddesc);
  if (cublasStatus_t s = checkProblem(mm->desc, mm->a, mm->b, mm->c, mm->d)) return s;
  if (hasBias(mm->desc.epilogue) && !mm->desc.bias)
    return refuse(CUBLAS_STATUS_INVALID_VALUE, "a BIAS epilogue without CUBLASLT_MATMUL_DESC_BIAS_POINTER");
  if (!algo || algo->data[0] != kAlgoTag)
    return refuse(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmul without an algorithm from cublasLtMatmulAlgoGetHeuristic");
  if (workspaceBytes < algo->data[1] || (algo->data[1] && !workspace))
    return refuse(CUBLAS_STATUS_INVALID_VALUE, "the algorithm needs " + std::to_string(algo->data[1]) +
                                                   " bytes of workspace; the call gives " + std::to_string(workspaceBytes));
  const void* pointers[4] = {A, B, C, D};
  for (int k = 0; k < 4; ++k)
    if (alignmentOf(pointers[k]) < algo->data[2 + k])  // the algorithm's vector loads assume this alignment
      return CUBLAS_STATUS_NOT_SUPPORTED;
  bool f64 = mm->desc.scale == CUDA_R_64F;
  mm->alpha = f64 ? *static_cast<const double*>(alpha) : *static_cast<const float*>(alpha);
  mm->beta = f64 ? *static_cast<const double*>(beta) : *static_cast<const float*>(beta);
  std::tie(mm->m, mm->k) = opShape(mm->a, mm->desc.transA);
  mm->n = mm->d.cols;
  mm->pa = reinterpret_cast<uint64_t>(A), mm->pb = reinterpret_cast<uint64_t>(B);
  mm->pc = reinterpret_cast<uint64_t>(C), mm->pd = reinterpret_cast<uint64_t>(D);
  mm->pbias = reinterpret_cast<uint64_t>(mm->desc.bias);
  // Ranges checked when called (the real library would fault when run); again when run.
  int device = handle->device;
  const std::pair<uint64_t, const Layout*> ranges[] = {{mm->pa, &mm->a}, {mm->pb, &mm->b}, {mm->pd, &mm->d}};
  const char* names[] = {"cublasLtMatmul's A", "cublasLtMatmul's B", "cublasLtMatmul's D"};
  for (int k = 0; k < 3; ++k)
    if (size_t bytes = spanBytes(*ranges[k].second);
        bytes && !gpusimDeviceMemory(device, ranges[k].first, bytes, 0, names[k]))
      return CUBLAS_STATUS_INVALID_VALUE;
  if (hasBias(mm->desc.epilogue) &&
      !gpusimDeviceMemory(device, mm->pbias, mm->m * elementBytes(mm->d.type), 0, "cublasLtMatmul's bias"))
    return CUBLAS_STATUS_INVALID_VALUE;
  int r = gpusimLaunchHostWork(stream, "cublasLtMatmul", runMatmul, mm.release(),
                               [](void* u) { delete static_cast<Matmul*>(u); });
  return r == 0 ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}
