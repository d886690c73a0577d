// Loading cuBLASLt and running MatmulCalls through it (cublaslt.h). The row-major to column-major
// mapping is codegen::columnMajorGemm's, unit-tested without a GPU; this file only passes it on.
#include "runtime/cuda/cublaslt.h"

#include <algorithm>
#include <mutex>

#include "runtime/cuda/driver.h"
#include "runtime/cuda/dynamic_library.h"

namespace kiln::cuda {

namespace {

struct LoadedCublasLt {
  Expected<DynamicLibrary> library = Error("not loaded");
  CublasLtApi api;
  Status status;
};

Status load(LoadedCublasLt& l) {
  l.library = DynamicLibrary::open("cuBLASLt", candidatesOr("KILN_CUBLASLT_LIBRARY", {"libcublasLt.so.13"}),
                                   "kiln calls cuBLASLt 13 for matmuls on the GPU: install the CUDA 13 toolkit's "
                                   "libcublasLt.so.13 (or NVIDIA's nvidia-cublas wheel) and name its folder in "
                                   "$KILN_CUDA_LIBRARY_PATH if the loader does not find it");
  if (!l.library) return l.library.error();
  std::string missing;
#define KILN_CUBLASLT_LOOKUP(fn)                                                   \
  l.api.fn = reinterpret_cast<decltype(l.api.fn)>((*l.library).symbol(#fn));       \
  if (!l.api.fn) missing += std::string(missing.empty() ? "" : ", ") + #fn;
  KILN_CUBLASLT_FUNCTIONS(KILN_CUBLASLT_LOOKUP)
#undef KILN_CUBLASLT_LOOKUP
  l.api.path = (*l.library).path();
  if (!missing.empty()) return Error("cuBLASLt at " + l.api.path + " lacks " + missing + "; kiln needs cuBLASLt 13");
  l.api.version = l.api.cublasLtGetVersion();
  return {};
}

Status check(cublasStatus_t status, const char* call, std::string_view kernel) {
  if (status == CUBLAS_STATUS_SUCCESS) return {};
  return Error(std::string(call) + " failed for " + std::string(kernel) + ": " + cublasStatusName(status));
}

#define KILN_CUBLASLT(fn, kernel, ...) KILN_TRY(check(api_.fn(__VA_ARGS__), #fn, kernel))

cudaDataType_t dataType(DType dtype) {
  switch (dtype) {
    case DType::F16: return CUDA_R_16F;
    case DType::BF16: return CUDA_R_16BF;
    case DType::F64: return CUDA_R_64F;
    default: return CUDA_R_32F;
  }
}

cublasLtEpilogue_t epilogueOf(codegen::MatmulEpilogue epilogue) {
  switch (epilogue) {
    case codegen::MatmulEpilogue::None: return CUBLASLT_EPILOGUE_DEFAULT;
    case codegen::MatmulEpilogue::Bias: return CUBLASLT_EPILOGUE_BIAS;
    case codegen::MatmulEpilogue::Relu: return CUBLASLT_EPILOGUE_RELU;
    case codegen::MatmulEpilogue::BiasRelu: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case codegen::MatmulEpilogue::Gelu: return CUBLASLT_EPILOGUE_GELU;
    case codegen::MatmulEpilogue::BiasGelu: return CUBLASLT_EPILOGUE_GELU_BIAS;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

bool hasBias(codegen::MatmulEpilogue e) {
  return e == codegen::MatmulEpilogue::Bias || e == codegen::MatmulEpilogue::BiasRelu ||
         e == codegen::MatmulEpilogue::BiasGelu;
}

}  // namespace

Expected<const CublasLtApi*> cublasLtLibrary() {
  static LoadedCublasLt l;
  static std::once_flag once;
  std::call_once(once, [] { l.status = load(l); });
  if (!l.status) return l.status.error();
  return &l.api;
}

std::string cublasStatusName(cublasStatus_t status) {
  auto lib = cublasLtLibrary();
  if (!lib) return "cublasStatus_t " + std::to_string(static_cast<int>(status));
  return std::string((*lib)->cublasLtGetStatusName(status)) + " (" + (*lib)->cublasLtGetStatusString(status) + ")";
}

// A MatmulCall's descriptors and chosen algorithm; the layouts of C and D are one (C is read, with
// beta = 1, only where the call adds a residual: C is then the residual's buffer).
struct CublasLt::Plan {
  const CublasLtApi& api;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t first = nullptr, second = nullptr, output = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspaceBytes = 0;
  bool found = false;  // false: the heuristic had no algorithm, the generated kernel runs

  explicit Plan(const CublasLtApi& a) : api(a) {}
  ~Plan() {
    if (output) api.cublasLtMatrixLayoutDestroy(output);
    if (second) api.cublasLtMatrixLayoutDestroy(second);
    if (first) api.cublasLtMatrixLayoutDestroy(first);
    if (desc) api.cublasLtMatmulDescDestroy(desc);
  }
};

Expected<std::unique_ptr<CublasLt>> CublasLt::create(CublasLtOptions options) {
  auto driverApi = driver();
  if (!driverApi) return driverApi.error();
  if ((*driverApi)->simulated && !isOverridden("KILN_CUBLASLT_LIBRARY"))
    return Error(librariesNeedRealGpu("cuBLASLt", "KILN_CUBLASLT_LIBRARY", "libkiln_gpusim_cublaslt.so"));
  auto lib = cublasLtLibrary();
  if (!lib) return lib.error();
  cublasLtHandle_t handle = nullptr;
  if (cublasStatus_t s = (*lib)->cublasLtCreate(&handle); s != CUBLAS_STATUS_SUCCESS)
    return Error("cublasLtCreate failed: " + cublasStatusName(s));
  return std::unique_ptr<CublasLt>(new CublasLt(**lib, handle, options));
}

CublasLt::CublasLt(const CublasLtApi& api, cublasLtHandle_t handle, CublasLtOptions options)
    : api_(api), handle_(handle), options_(options) {}

CublasLt::~CublasLt() {
  plans_.clear();  // descriptors before the handle
  api_.cublasLtDestroy(handle_);
}

Expected<CublasLt::Plan*> CublasLt::plan(const PlanKey& key, const std::vector<CUdeviceptr>& buffers,
                                         std::string_view kernel) {
  for (auto& [k, p] : plans_)
    if (k == key) return p.get();
  const codegen::MatmulCall& call = key.call;
  codegen::ColumnMajorGemm g = codegen::columnMajorGemm(call);
  auto plan = std::make_unique<Plan>(api_);
  bool f64 = call.dtype == DType::F64;
  cublasComputeType_t compute = f64                                                    ? CUBLAS_COMPUTE_64F
                                : call.dtype == DType::F32 && options_.allowTf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                                                       : CUBLAS_COMPUTE_32F;
  KILN_CUBLASLT(cublasLtMatmulDescCreate, kernel, &plan->desc, compute, f64 ? CUDA_R_64F : CUDA_R_32F);
  uint32_t epilogue = epilogueOf(call.epilogue);
  KILN_CUBLASLT(cublasLtMatmulDescSetAttribute, kernel, plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                sizeof(epilogue));
  if (hasBias(call.epilogue)) {
    // The heuristic reads the bias pointer's alignment; the bias has C's dtype (the default).
    const void* bias = reinterpret_cast<const void*>(buffers[static_cast<size_t>(call.bias)]);
    KILN_CUBLASLT(cublasLtMatmulDescSetAttribute, kernel, plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                  sizeof(bias));
  }
  cudaDataType_t type = dataType(call.dtype);
  auto layout = [&](cublasLtMatrixLayout_t* out, int64_t rows, int64_t cols, int64_t ld, int64_t stride) -> Status {
    KILN_CUBLASLT(cublasLtMatrixLayoutCreate, kernel, out, type, static_cast<uint64_t>(rows),
                  static_cast<uint64_t>(cols), ld);
    if (g.batch == 1) return {};
    int32_t count = static_cast<int32_t>(g.batch);
    KILN_CUBLASLT(cublasLtMatrixLayoutSetAttribute, kernel, *out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                  sizeof(count));
    KILN_CUBLASLT(cublasLtMatrixLayoutSetAttribute, kernel, *out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                  &stride, sizeof(stride));
    return {};
  };
  for (auto [attribute, transposed] : {std::pair{CUBLASLT_MATMUL_DESC_TRANSA, g.transFirst},
                                       std::pair{CUBLASLT_MATMUL_DESC_TRANSB, g.transSecond}}) {
    if (!transposed) continue;
    int32_t op = CUBLAS_OP_T;
    KILN_CUBLASLT(cublasLtMatmulDescSetAttribute, kernel, plan->desc, attribute, &op, sizeof(op));
  }
  KILN_TRY(layout(&plan->first, g.rowsFirst, g.colsFirst, g.ldFirst, g.strideFirst));
  KILN_TRY(layout(&plan->second, g.rowsSecond, g.colsSecond, g.ldSecond, g.strideSecond));
  KILN_TRY(layout(&plan->output, g.m, g.n, g.ldOutput, g.strideOutput));

  cublasLtMatmulPreference_t preference = nullptr;
  KILN_CUBLASLT(cublasLtMatmulPreferenceCreate, kernel, &preference);
  uint64_t maxWorkspace = options_.maxWorkspaceBytes;
  cublasStatus_t s = api_.cublasLtMatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &maxWorkspace, sizeof(maxWorkspace));
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  if (s == CUBLAS_STATUS_SUCCESS)
    s = api_.cublasLtMatmulAlgoGetHeuristic(handle_, plan->desc, plan->first, plan->second, plan->output,
                                            plan->output, preference, 1, &result, &returned);
  api_.cublasLtMatmulPreferenceDestroy(preference);
  // NOT_SUPPORTED is the heuristic's "no algorithm for this problem"; anything else is an error.
  if (s != CUBLAS_STATUS_SUCCESS && s != CUBLAS_STATUS_NOT_SUPPORTED)
    return check(s, "cublasLtMatmulAlgoGetHeuristic", kernel).error();
  plan->found = s == CUBLAS_STATUS_SUCCESS && returned > 0;
  if (plan->found) {
    plan->algo = result.algo;
    plan->workspaceBytes = result.workspaceSize;
  }
  plans_.emplace_back(key, std::move(plan));
  return plans_.back().second.get();
}

Expected<LibraryOutcome> CublasLt::matmul(const codegen::MatmulCall& call, const std::vector<CUdeviceptr>& buffers,
                                          CUstream stream, std::string_view kernel) {
  auto at = [&](int index) { return buffers[static_cast<size_t>(index)]; };
  for (int index : {call.a, call.b, call.output, call.bias, call.residual})
    KILN_INTERNAL_CHECK(index < static_cast<int>(buffers.size()), "MatmulCall buffer index out of range");
  CUdeviceptr bias = call.bias >= 0 ? at(call.bias) : 0;
  uint32_t alignC = alignmentOf(at(call.output));
  if (call.residual >= 0) alignC = std::min(alignC, alignmentOf(at(call.residual)));  // C is the residual's buffer
  PlanKey key{call, alignmentOf(at(call.a)), alignmentOf(at(call.b)), alignmentOf(bias), alignC};
  auto p = plan(key, buffers, kernel);
  if (!p) return p.error();
  Plan& plan = **p;
  if (!plan.found) return LibraryOutcome::NoAlgorithm;
  auto workspace = workspace_.reserve(plan.workspaceBytes, stream, kernel);
  if (!workspace) return workspace.error();
  if (hasBias(call.epilogue)) {  // this step's bias buffer (the plan may come from an earlier step)
    const void* ptr = reinterpret_cast<const void*>(bias);
    KILN_CUBLASLT(cublasLtMatmulDescSetAttribute, kernel, plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &ptr,
                  sizeof(ptr));
  }
  // alpha = 1 and beta = 0 in the scale type (double for f64, float otherwise); beta = 1 with a
  // residual, which is C: D = epilogue(A B + C), the bias added before the activation.
  bool residual = call.residual >= 0;
  double alpha64 = 1, beta64 = residual ? 1 : 0;
  float alpha32 = 1, beta32 = residual ? 1 : 0;
  bool f64 = call.dtype == DType::F64;
  const void* alpha = f64 ? static_cast<const void*>(&alpha64) : &alpha32;
  const void* beta = f64 ? static_cast<const void*>(&beta64) : &beta32;
  codegen::ColumnMajorGemm g = codegen::columnMajorGemm(call);
  auto ptr = [&](int index) { return reinterpret_cast<void*>(at(index)); };
  cublasStatus_t s = api_.cublasLtMatmul(handle_, plan.desc, alpha, ptr(g.first), plan.first, ptr(g.second),
                                         plan.second, beta, ptr(residual ? call.residual : g.output), plan.output,
                                         ptr(g.output), plan.output,
                                         &plan.algo, reinterpret_cast<void*>(*workspace), plan.workspaceBytes, stream);
  if (s == CUBLAS_STATUS_NOT_SUPPORTED) {  // nothing was queued; the next step skips straight to the kernel
    plan.found = false;
    return LibraryOutcome::NoAlgorithm;
  }
  KILN_TRY(check(s, "cublasLtMatmul", kernel));
  return LibraryOutcome::Ran;
}

}  // namespace kiln::cuda
