// Streaming stores (codegen/streaming_stores.h): a CPU kernel whose output is at least
// streamingOutputBytes() writes it with non-temporal stores where a vector store is aligned, and
// fences them before it returns; a smaller output is stored as usual. Either way the kernel
// computes what the interpreter does.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "codegen/cpu_compiler.h"
#include "codegen/streaming_stores.h"
#include "kiln_internal.h"

namespace kiln {
namespace {

// `func @main(%x: f32[n], %r: f32[n]) -> f32[n]` computing x * r + x.
std::string program(int64_t n) {
  std::string t = "f32[" + std::to_string(n) + "]";
  return "func @main(%x: " + t + ", %r: " + t + ") -> " + t + " {\n  %m = mul %x, %r\n  %y = add %m, %x\n  return %y\n}\n";
}

// Elements of an f32 output of at least the streaming size, whole vectors of 16.
int64_t streamingElements() { return (codegen::streamingOutputBytes() / 4 + 15) / 16 * 16; }

std::string assemblyOf(const std::string& text) {
  auto m = parseModule(text, "stream.kiln");
  EXPECT_TRUE(m.ok()) << m.error().str();
  if (!m.ok()) return "";
  auto compiled = codegen::compileForCpu(*(*m)->entry(), {});
  EXPECT_TRUE(compiled.ok()) << compiled.error().str();
  if (!compiled.ok()) return "";
  auto asmText = codegen::emitCpuAssembly(*compiled->module, *compiled->tm);
  EXPECT_TRUE(asmText.ok()) << asmText.error().str();
  return asmText.ok() ? *asmText : "";
}

TEST(StreamingStores, ThresholdIsTwiceTheCoresL2) {
  // At least 2 MiB (1 MiB per core where the host says nothing, one core at least), and the same
  // every time it is asked.
  EXPECT_GE(codegen::streamingOutputBytes(), int64_t{2} << 20);
  EXPECT_EQ(codegen::streamingOutputBytes(), codegen::streamingOutputBytes());
}

TEST(StreamingStores, BigOutputsStreamAndSmallOnesDoNot) {
  std::string big = assemblyOf(program(streamingElements()));
  EXPECT_NE(big.find("movntps"), std::string::npos) << "no non-temporal store for an output past the threshold";
  EXPECT_NE(big.find("sfence"), std::string::npos) << "streaming stores not fenced";
  std::string small = assemblyOf(program(4096));
  EXPECT_EQ(small.find("movnt"), std::string::npos) << "a 16 KB output streamed";
  EXPECT_EQ(small.find("sfence"), std::string::npos);
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
