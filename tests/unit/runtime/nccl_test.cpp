// NCCL: the library (or on the GPU simulator its stand-in, KILN_NCCL_LIBRARY) loads through
// kiln's search path and reports a version new enough (2.10+, for ncclAvg), and every kiln dtype
// has a NCCL type. Collectives need several ranks: tests/gpusim/nccl_standin_check.cpp and the
// mpi_*_cuda tests run them on simulated GPUs.
#include <gtest/gtest.h>

#if KILN_HAVE_CUDA

#include "runtime/cuda/nccl.h"

namespace kiln::cuda {
namespace {

TEST(Nccl, LoadsAndReportsItsVersion) {
  auto api = ncclLibrary();
  if (!api) GTEST_SKIP() << "NCCL is not installed here: " << api.error().str();
  EXPECT_GE((*api)->version, 21000) << (*api)->path;
  EXPECT_NE((*api)->ncclAllReduce, nullptr);
}

TEST(Nccl, MapsDtypesToNcclTypes) {
  EXPECT_EQ(ncclType(DType::F32), ncclFloat32);
  EXPECT_EQ(ncclType(DType::BF16), ncclBfloat16);
  EXPECT_EQ(ncclType(DType::F16), ncclFloat16);
  EXPECT_EQ(ncclType(DType::I64), ncclInt64);
  EXPECT_EQ(ncclType(DType::Bool), ncclInt8);
  EXPECT_EQ(ncclType(DType::U8), ncclUint8);
  EXPECT_EQ(ncclType(DType::U64), ncclUint64);
  EXPECT_EQ(ncclType(DType::I16), std::nullopt);  // NCCL has no 16-bit ints
  EXPECT_EQ(ncclType(DType::U16), std::nullopt);
}

}  // namespace
}  // namespace kiln::cuda

#else

TEST(Nccl, NotBuilt) { GTEST_SKIP() << "built without the CUDA toolkit's headers: no NCCL"; }

#endif
