// How many neighbouring elements a GPU thread takes at once (codegen/kernel_emitter.h, vectorWidth):
// as many as fill 128 bits, 8 for kernels whose elements are 16 bits or narrower, 4 otherwise; and
// the same for a long row's lanes (rowElementsPerStep). Each width, and the cases around it (a
// tail shorter than an item, rows that are a multiple of 4 but not 8, broadcast inputs, mixed
// dtypes, NaN and infinities), equals the interpreter on the GPU simulator.
// tests/lit/compile/bf16_vectors.test pins the loads, stores and conversions in the PTX.
#include <gtest/gtest.h>

#include "codegen/kernel_emitter.h"
#include "codegen/kernel_plan.h"
#include "codegen/nvptx_target.h"
#include "tests/unit/codegen/cpu_test_util.h"

namespace kiln::test {
namespace {

// The vector width of each kernel of `text`'s entry on the GPU, in plan order.
std::vector<int64_t> widthsOf(const std::string& text) {
  auto m = parseOrFail(text);
  std::vector<int64_t> widths;
  if (!m) return widths;
  auto plan = codegen::planFunction(*m->entry());
  codegen::NvptxTarget target;
  for (const codegen::KernelGroup* group : plan->allGroups()) widths.push_back(codegen::vectorWidth(*group, target));
  return widths;
}

TEST(GpuVectorWidth, SixteenBitKernelsTakeEightElementsAndWiderOnesFour) {
  EXPECT_EQ(widthsOf("func @main(%x: bf16[64], %y: bf16[64]) -> bf16[64] {\n  %z = add %x, %y\n  return %z\n}\n"),
            std::vector<int64_t>{8});
  EXPECT_EQ(widthsOf("func @main(%x: u8[64]) -> bool[64] {\n  %z = cast %x {to = bool}\n  return %z\n}\n"),
            std::vector<int64_t>{8});
  // One f32 buffer decides: a bf16 -> f32 cast stores 128 bits of f32 and loads 64 of bf16.
  EXPECT_EQ(widthsOf("func @main(%x: bf16[64]) -> f32[64] {\n  %z = cast %x {to = f32}\n  return %z\n}\n"),
            std::vector<int64_t>{4});
  EXPECT_EQ(widthsOf("func @main(%x: f64[64]) -> f64[64] {\n  %z = neg %x\n  return %z\n}\n"), std::vector<int64_t>{4});
}

// examples/elementwise_chain.kiln's eight ops in dtype `t` over [rows, cols] with a bias of [cols].
std::string chain(const std::string& t, int64_t rows, int64_t cols) {
  std::string shape = t + "[" + std::to_string(rows) + "," + std::to_string(cols) + "]";
  return "func @main(%x: " + shape + ", %b: " + t + "[" + std::to_string(cols) + "], %r: " + shape + ", %s: " + t +
         "[]) -> " + shape + " {\n  %half = constant 0.5 : " + t + "[]\n  %a = add %x, %b\n  %m = mul %a, %s\n"
         "  %t = tanh %m\n  %g = mul %t, %half\n  %u = add %g, %half\n  %v = mul %u, %a\n  %w = add %v, %r\n"
         "  %y = max %w, %half\n  return %y\n}\n";
}

TEST(GpuVectorWidth, SixteenBitChainsEqualTheInterpreter) {
  // A multiply and an add in bf16/f16 may become one fma on the GPU (contraction, as nvcc's
  // default): one rounding fewer, so a few ulps of slack; NaN and infinities must agree exactly.
  DiffOptions o;
  o.tol = mathTolerance();
  o.gpuTol = Tolerance{4, 0};
  o.specials = true;
  // Whole items only; a tail shorter than an item; rows a multiple of 4 but not 8 (an item crosses
  // rows); one row shorter than an item.
  for (const char* t : {"bf16", "f16"})
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{4, 1024}, {3, 37}, {5, 12}, {1, 5}}) {
      SCOPED_TRACE(std::string(t) + " [" + std::to_string(rows) + "," + std::to_string(cols) + "]");
      auto m = parseOrFail(chain(t, rows, cols));
      ASSERT_TRUE(m);
      expectSameAsInterpreter(*m->entry(), o);
    }
}

TEST(GpuVectorWidth, NarrowIntegerAndMixedKernelsEqualTheInterpreter) {
  DiffOptions ints;
  ints.intBound = 100;
  auto narrow = parseOrFail(R"(func @main(%a: u8[3,40], %b: i8[40], %c: bool[3,40]) -> (i8[3,40], bool[3,40]) {
  %x = cast %a {to = i8}
  %s = add %x, %b
  %p = gt %s, %b
  %q = and %p, %c
  return %s, %q
}
)");
  ASSERT_TRUE(narrow);
  expectSameAsInterpreter(*narrow->entry(), ints);
  // bf16 in, f32 and bf16 out: four per thread, the bf16 loads 64 bits wide.
  auto mixed = parseOrFail(R"(func @main(%x: bf16[6,20], %y: f32[20]) -> (f32[6,20], bf16[6,20]) {
  %w = cast %x {to = f32}
  %s = mul %w, %y
  %h = cast %s {to = bf16}
  return %s, %h
}
)");
  ASSERT_TRUE(mixed);
  DiffOptions o;
  o.specials = true;
  expectSameAsInterpreter(*mixed->entry(), o);
}

// Row kernels over bf16: 8 per step where the row has 8 for every lane, else 4, else 1; a warp per
// row and a block per row; NaN wins a max.
TEST(GpuVectorWidth, SixteenBitRowsEqualTheInterpreter) {
  DiffOptions o;
  o.tol = accumulateTolerance();
  o.gpuTol = Tolerance{64, 1e-2};  // bf16 results: one rounding apart is 2^-8 of the largest
  for (const char* params : {"%x: bf16[3,2048]", "%x: bf16[2,2052]", "%x: bf16[2,1030]", "%x: bf16[64,256]"}) {
    SCOPED_TRACE(params);
    for (const char* op : {"softmax %x {axis = -1}", "log_softmax %x {axis = -1}"}) {
      auto m = oneOp(params, op);
      ASSERT_TRUE(m);
      expectSameAsInterpreter(*m->entry(), o);
    }
    DiffOptions specials;
    specials.specials = true;
    for (const char* op : {"reduce_max %x {axes = [1]}", "reduce_min %x {axes = [1], keepdims = true}"}) {
      auto m = oneOp(params, op);
      ASSERT_TRUE(m);
      expectSameAsInterpreter(*m->entry(), specials);
    }
  }
  auto ln = oneOp("%x: bf16[4,2048], %g: bf16[2048], %b: bf16[2048]", "layer_norm %x, %g, %b {axis = -1, epsilon = 1e-5}");
  ASSERT_TRUE(ln);
  expectSameAsInterpreter(*ln->entry(), o);
}

}  // namespace
}  // namespace kiln::test
