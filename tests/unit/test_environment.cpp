// Part of every unit-test binary: on the GPU simulator (ctest sets KILN_CUDA_DRIVER), the
// simulator's stand-ins for vendor libraries are selected as a user selects them
// (KILN_CUBLASLT_LIBRARY, KILN_CUDNN_LIBRARY, KILN_NCCL_LIBRARY), unless a variable is set
// already. ctest cannot pass them itself: gtest_discover_tests gives each test property one value
// (tests/CMakeLists.txt).
#include <cstdlib>

namespace {

[[maybe_unused]] const bool kStandInsSelected = [] {
#ifdef KILN_TEST_CUBLASLT_STANDIN
  if (const char* driver = std::getenv("KILN_CUDA_DRIVER"); driver && *driver) {
    setenv("KILN_CUBLASLT_LIBRARY", KILN_TEST_CUBLASLT_STANDIN, /*overwrite=*/0);
    setenv("KILN_CUDNN_LIBRARY", KILN_TEST_CUDNN_STANDIN, /*overwrite=*/0);
    setenv("KILN_NCCL_LIBRARY", KILN_TEST_NCCL_STANDIN, /*overwrite=*/0);
  }
#endif
  return true;
}();

}  // namespace
