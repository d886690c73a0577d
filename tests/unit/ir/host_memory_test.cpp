// allocateHostBytes / releaseHostBytes (include/kiln/tensor.h): the alignment tensors and arenas
// get, and freed blocks of 1 MiB and more handed out again for their size.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "kiln/tensor.h"

namespace kiln {
namespace {

uintptr_t address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

TEST(HostMemory, AlignedTo64AndFrom256BytesTo256) {
  for (size_t bytes : {size_t{1}, size_t{4}, size_t{100}, size_t{255}}) {
    void* p = allocateHostBytes(bytes);
    EXPECT_EQ(address(p) % 64, 0u) << bytes;
    releaseHostBytes(p, bytes);
  }
  for (size_t bytes : {size_t{256}, size_t{1000}, size_t{3} << 20}) {
    void* p = allocateHostBytes(bytes);
    EXPECT_EQ(address(p) % 256, 0u) << bytes;
    releaseHostBytes(p, bytes);
  }
  Tensor t(TensorType{DType::F32, {3, 5}});
  EXPECT_EQ(address(t.data()) % 64, 0u);
}

TEST(HostMemory, FreedLargeBlocksAreHandedOutAgainForTheirSize) {
  const size_t bytes = (size_t{5} << 20) + 12345;  // an odd size no other test allocates
  void* first = allocateHostBytes(bytes);
  std::memset(first, 1, bytes);
  releaseHostBytes(first, bytes);
  void* again = allocateHostBytes(bytes);
  EXPECT_EQ(again, first) << "a freed block of the same size was not reused";
  void* another = allocateHostBytes(bytes);  // the kept one is taken: a new block
  EXPECT_NE(another, again);
  releaseHostBytes(another, bytes);
  releaseHostBytes(again, bytes);
  // A result tensor of that size gets one of them.
  Tensor t = Tensor::uninitialized(TensorType{DType::U8, {static_cast<int64_t>(bytes)}});
  EXPECT_TRUE(t.data() == first || t.data() == another);
}

TEST(HostMemory, SmallBlocksAndZeroBytesWork) {
  void* empty = allocateHostBytes(0);
  EXPECT_NE(empty, nullptr);
  releaseHostBytes(empty, 0);
  releaseHostBytes(nullptr, 100);  // a no-op, as free(nullptr)
  Tensor none(TensorType{DType::F32, {0}});
  EXPECT_EQ(none.byteSize(), 0u);
}

}  // namespace
}  // namespace kiln
