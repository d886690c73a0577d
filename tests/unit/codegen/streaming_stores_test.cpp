// Streaming stores (codegen/streaming_stores.h): a CPU kernel whose output is at least
// streamingOutputBytes() and which moves more than streamingKernelBytes() writes it with
// non-temporal stores where a vector store is aligned, and fences them before it returns; a smaller
// output, or a kernel whose buffers fit half the last-level cache (all of it for one that writes
// more than it reads), stores as usual. Either way the kernel computes what the interpreter does.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "codegen/cpu_compiler.h"
#include "codegen/host_caches.h"
#include "codegen/streaming_stores.h"
#include "kiln_internal.h"
#include "tests/unit/codegen/cpu_assembly.h"

namespace kiln {
namespace {

// `func @main(%x: f32[n], %r: f32[n]) -> f32[n]` computing x * r + x.
std::string program(int64_t n) {
  std::string t = "f32[" + std::to_string(n) + "]";
  return "func @main(%x: " + t + ", %r: " + t + ") -> " + t + " {\n  %m = mul %x, %r\n  %y = add %m, %x\n  return %y\n}\n";
}

// Elements of program()'s f32 output (its kernel moves three times the output) that streams:
// at least the streaming output size, the kernel past the streaming kernel size; whole vectors of 16.
int64_t streamingElements() {
  int64_t bytes = std::max(codegen::streamingOutputBytes(), codegen::streamingKernelBytes(false) / 3 + 1);
  return (bytes + 63) / 64 * 16;  // rounded up: a last-level cache of a multiple of 12 bytes would otherwise lose the + 1
}

TEST(StreamingStores, ThresholdsComeFromTheHostsCaches) {
  // Twice the L2 caches together; half the last-level ones, or all of them for a kernel writing
  // more than it reads; the same every time they are asked.
  const codegen::HostCaches& caches = codegen::hostCaches();
  EXPECT_GT(caches.l2Bytes, 0);
  EXPECT_GE(caches.lastLevelBytes, 0);
  EXPECT_EQ(codegen::streamingOutputBytes(), 2 * caches.l2Bytes);
  EXPECT_EQ(codegen::streamingKernelBytes(false), caches.lastLevelBytes / 2);
  EXPECT_EQ(codegen::streamingKernelBytes(true), caches.lastLevelBytes);
  EXPECT_EQ(&codegen::hostCaches(), &caches);
  int64_t output = codegen::streamingOutputBytes(), half = codegen::streamingKernelBytes(false);
  int64_t whole = codegen::streamingKernelBytes(true);
  EXPECT_TRUE(codegen::streamsOutput(output, std::max<int64_t>(0, half + 1 - output), output));
  EXPECT_FALSE(codegen::streamsOutput(output - 1, int64_t{1} << 50, output - 1));
  EXPECT_FALSE(codegen::streamsOutput(int64_t{1} << 40, half - (int64_t{1} << 40), int64_t{1} << 40));
  // Writing more than it reads: the whole last-level cache (where the host names one).
  if (whole >= output) {
    EXPECT_FALSE(codegen::streamsOutput(whole, 0, whole));
  }
  EXPECT_TRUE(codegen::streamsOutput(std::max(output, whole + 1), 0, std::max(output, whole + 1)));
}

TEST(StreamingStores, BigOutputsStreamAndSmallOnesDoNot) {
  std::string big = cpuAssemblyOf(program(streamingElements()));
  EXPECT_NE(big.find("movntps"), std::string::npos) << "no non-temporal store for an output past the threshold";
  EXPECT_NE(big.find("sfence"), std::string::npos) << "streaming stores not fenced";
  std::string small = cpuAssemblyOf(program(4096));
  EXPECT_EQ(small.find("movnt"), std::string::npos) << "a 16 KB output streamed";
  EXPECT_EQ(small.find("sfence"), std::string::npos);
}

// `func @main(%x: f32[1024]) -> f32[rows,1024]`, a broadcast: it writes far more than it reads.
std::string broadcast(int64_t rows) {
  std::string t = "f32[" + std::to_string(rows) + ",1024]";
  return "func @main(%x: f32[1024]) -> " + t + " {\n  %y = broadcast_to %x {shape = [" + std::to_string(rows) +
         ", 1024]}\n  return %y\n}\n";
}

TEST(StreamingStores, KernelsThatFitTheLastLevelCacheStoreAsUsual) {
  if (codegen::streamingKernelBytes(false) <= 2 * codegen::streamingOutputBytes())
    GTEST_SKIP() << "this host's last-level cache (" << codegen::hostCaches().lastLevelBytes
                 << " bytes) is not bigger than four times its L2 caches (" << codegen::hostCaches().l2Bytes << ")";
  // x * r + x moving a little more than half the last-level cache streams; a broadcast to the same
  // output, which writes more than it reads, fits the whole of it and stores as usual.
  int64_t elements = (codegen::streamingKernelBytes(false) / 12 / 1024 + 1) * 1024;
  std::string streamed = cpuAssemblyOf(program(elements));
  EXPECT_NE(streamed.find("movntps"), std::string::npos) << "a kernel moving more than half the last-level cache did not stream";
  std::string plain = cpuAssemblyOf(broadcast(elements / 1024));
  EXPECT_NE(plain.find("vmovups"), std::string::npos) << "no vector store at all";
  EXPECT_EQ(plain.find("movnt"), std::string::npos) << "a broadcast within the last-level cache streamed";
  // Past the whole last-level cache a broadcast streams too.
  std::string big = cpuAssemblyOf(broadcast(codegen::streamingKernelBytes(true) / 4096 + 1));
  EXPECT_NE(big.find("movntps"), std::string::npos) << "a broadcast bigger than the last-level cache did not stream";
}

// `func @main(%x: f32[rows,width], %y: f32[width]) -> f32[rows,width]` computing x + y: looped in
// rows of `width`.
std::string rowsPlusVector(int64_t rows, int64_t width) {
  std::string t = "f32[" + std::to_string(rows) + "," + std::to_string(width) + "]", v = "f32[" + std::to_string(width) + "]";
  return "func @main(%x: " + t + ", %y: " + v + ") -> " + t + " {\n  %z = add %x, %y\n  return %z\n}\n";
}

TEST(StreamingStores, RowsEndingMidLineStoreAsUsual) {
  // Rows of 56 f32 end mid-line, and the scalar stores after each row's vector loop would share
  // lines with the next row's streaming ones; rows of 64 are whole lines.
  // Outputs past the threshold, of a kernel (reading as much as it writes) moving more than half
  // the last-level cache.
  int64_t elements = std::max(codegen::streamingOutputBytes() / 4, codegen::streamingKernelBytes(false) / 8 + 1);
  std::string whole = cpuAssemblyOf(rowsPlusVector(elements / 64 + 1, 64));
  EXPECT_NE(whole.find("movntps"), std::string::npos) << "rows of whole lines did not stream";
  std::string midLine = cpuAssemblyOf(rowsPlusVector(elements / 56 + 1, 56));
  EXPECT_NE(midLine.find("vmovups"), std::string::npos) << "no vector store at all";
  EXPECT_EQ(midLine.find("movnt"), std::string::npos) << "rows ending mid-line streamed";
}

TEST(StreamingStores, StreamedResultIsComputedRight) {
  // Odd element counts too: the vector loop's remainder and any unaligned start are plain stores.
  for (int64_t n : {streamingElements(), streamingElements() + 7}) {
    SCOPED_TRACE(n);
    auto m = parseModule(program(n), "stream.kiln");
    ASSERT_TRUE(m.ok()) << m.error().str();
    auto exe = Executable::compile(*(*m)->entry(), {});
    ASSERT_TRUE(exe.ok()) << exe.error().str();
    Tensor x = Tensor::uninitialized(TensorType{DType::F32, {n}}), r = Tensor::uninitialized(TensorType{DType::F32, {n}});
    auto* xs = static_cast<float*>(x.data());
    auto* rs = static_cast<float*>(r.data());
    for (int64_t i = 0; i < n; ++i) xs[i] = static_cast<float>(i % 1000) * 0.5f, rs[i] = static_cast<float>(i % 7) - 3.0f;
    auto got = (*exe)->run({x, r});
    ASSERT_TRUE(got.ok()) << got.error().str();
    const auto* y = static_cast<const float*>((*got)[0].data());
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; ++i) wrong += y[i] != std::fma(xs[i], rs[i], xs[i]) && y[i] != xs[i] * rs[i] + xs[i];
    EXPECT_EQ(wrong, 0);
  }
}

}  // namespace
}  // namespace kiln
