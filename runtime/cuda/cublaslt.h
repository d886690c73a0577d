// cuBLASLt, loaded at run time, for the matmul library calls codegen selects (codegen/library_call.h):
// one handle, descriptors and the heuristic's algorithm cached per call, and one workspace.
#pragma once

#include <cublasLt.h>
#include <cuda.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/library_call.h"
#include "ir/status.h"
#include "runtime/cuda/library_support.h"

namespace kiln::cuda {

// Every cuBLASLt function kiln calls, looked up once into CublasLtApi.
#define KILN_CUBLASLT_FUNCTIONS(X)                                                                   \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtGetVersion) X(cublasLtGetStatusName)                 \
  X(cublasLtGetStatusString) X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescDestroy)                 \
  X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy)      \
  X(cublasLtMatrixLayoutSetAttribute) X(cublasLtMatmulPreferenceCreate)                              \
  X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulPreferenceSetAttribute)                         \
  X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul)

struct CublasLtApi {
#define KILN_CUBLASLT_POINTER(fn) decltype(&::fn) fn = nullptr;
  KILN_CUBLASLT_FUNCTIONS(KILN_CUBLASLT_POINTER)
#undef KILN_CUBLASLT_POINTER
  size_t version = 0;  // cublasLtGetVersion: 130000 and up for CUDA 13
  std::string path;    // the library that was opened
};

// libcublasLt.so.13, loaded once per process (the loader's search, then $KILN_CUDA_LIBRARY_PATH
// and the toolkit's lib64). Needs no GPU; fails with the places tried, or the missing entry points.
Expected<const CublasLtApi*> cublasLtLibrary();

// "CUBLAS_STATUS_NOT_SUPPORTED (the functionality requested is not supported)".
std::string cublasStatusName(cublasStatus_t status);

struct CublasLtOptions {
  // f32 matmuls compute in full f32 (CUBLAS_COMPUTE_32F) unless this allows TF32 tensor cores
  // (CUBLAS_COMPUTE_32F_FAST_TF32: inputs rounded to 10-bit mantissas, ~1e-3 relative error).
  bool allowTf32 = false;
  // The most workspace the heuristic may ask for.
  size_t maxWorkspaceBytes = size_t{32} << 20;
};

// One cuBLASLt handle with its plans and workspace, for one stream of one context (the workspace
// is shared by its calls, so two streams need two CublasLt). Not thread-safe.
class CublasLt {
 public:
  // Loads the library and creates the handle: the driver must be loaded (cuda::driver()) and the
  // context the calls will run in current.
  static Expected<std::unique_ptr<CublasLt>> create(CublasLtOptions options = {});
  CublasLt(const CublasLt&) = delete;
  CublasLt& operator=(const CublasLt&) = delete;
  ~CublasLt();

  // Queues `call` on `stream`. `buffers` are the kernel group's buffers in argument order (its
  // inputs, then its outputs), `kernel` its name for errors ("cublasLtMatmul failed for
  // k0_library_matmul: ..."). The first call for a MatmulCall (and pointer alignments) builds its
  // descriptors and asks the heuristic for an algorithm; later calls reuse both. NoAlgorithm: the
  // heuristic has none (nothing was queued): run the generated kernel instead.
  Expected<LibraryOutcome> matmul(const codegen::MatmulCall& call, const std::vector<CUdeviceptr>& buffers,
                                  CUstream stream, std::string_view kernel);

  // Plans cached so far (for tests: a second identical call adds none).
  size_t numPlans() const { return plans_.size(); }

 private:
  struct Plan;
  struct PlanKey {
    codegen::MatmulCall call;
    uint32_t alignA, alignB, alignBias, alignC;
    bool operator==(const PlanKey&) const = default;
  };
  CublasLt(const CublasLtApi& api, cublasLtHandle_t handle, CublasLtOptions options);
  Expected<Plan*> plan(const PlanKey& key, const std::vector<CUdeviceptr>& buffers, std::string_view kernel);

  const CublasLtApi& api_;
  cublasLtHandle_t handle_;
  CublasLtOptions options_;
  // A step has few distinct matmuls: a linear search over them costs less than hashing the key.
  std::vector<std::pair<PlanKey, std::unique_ptr<Plan>>> plans_;
  DeviceWorkspace workspace_;
};

}  // namespace kiln::cuda
