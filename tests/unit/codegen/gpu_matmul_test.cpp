// Generated matmuls on the GPU as shared-memory tiles (codegen/matmul_tile.h): what runs where
// cuBLASLt does not (on the simulator: every matmul). Each equals the interpreter over partial
// tiles, K not a multiple of the tile, batches with broadcasting, fused epilogues, every dtype the
// op takes, NaN and infinities; tests/lit/compile/matmul_tile.test pins the PTX.
#include <gtest/gtest.h>

#include "codegen/matmul_tile.h"
#include "tests/unit/codegen/cpu_test_util.h"

namespace kiln::test {
namespace {

std::optional<codegen::MatmulTile> tileOf(const std::string& params, const std::string& line) {
  auto m = oneOp(params, line);
  auto plan = codegen::planFunction(*m->entry());
  return codegen::matmulTile(plan->groups.at(0));
}

TEST(MatmulTile, WhereBothSidesSpanATile) {
  auto tile = tileOf("%a: f32[64,48], %b: f32[48,96]", "matmul %a, %b");
  ASSERT_TRUE(tile);
  EXPECT_EQ(tile->k, 48);
  EXPECT_EQ(tile->tiles(), 2 * 3);
  auto batched = tileOf("%a: f32[3,40,50], %b: f32[50,36]", "matmul %a, %b");
  ASSERT_TRUE(batched);
  EXPECT_EQ(batched->tiles(), 3 * 2 * 2);
  EXPECT_FALSE(tileOf("%a: f32[64,48], %b: f32[48]", "matmul %a, %b"));      // a vector operand
  EXPECT_FALSE(tileOf("%a: f32[16,48], %b: f32[48,96]", "matmul %a, %b"));   // M under a tile
  EXPECT_FALSE(tileOf("%a: f32[64,48], %b: f32[48,10]", "matmul %a, %b"));   // N under a tile
}

void expectMatches(const std::string& text, DiffOptions o = {}) {
  auto m = parseOrFail(text);
  ASSERT_TRUE(m);
  if (!o.gpuTol) o.gpuTol = accumulateTolerance();  // NVPTX contracts multiply-adds into fma
  // The CPU backend runs f32 matmuls through oneDNN, which accumulates in f32.
  if (o.tol.ulps == 0 && o.tol.atol == 0) o.tol = accumulateTolerance();
  expectSameAsInterpreter(*m->entry(), o);
}

std::string matmul(const std::string& a, const std::string& b, const std::string& result) {
  return "func @f(%a: " + a + ", %b: " + b + ") -> " + result + " {\n  %y = matmul %a, %b\n  return %y\n}\n";
}

TEST(GpuMatmulTile, EqualsTheInterpreter) {
  DiffOptions specials;
  specials.specials = true;
  expectMatches(matmul("f32[64,48]", "f32[48,96]", "f32[64,96]"));
  expectMatches(matmul("f32[33,70]", "f32[70,45]", "f32[33,45]"), specials);  // partial tiles, K % 32 != 0
  expectMatches(matmul("f32[3,40,50]", "f32[50,36]", "f32[3,40,36]"));         // batched
  expectMatches(matmul("f32[2,1,40,33]", "f32[3,33,40]", "f32[2,3,40,40]"));   // broadcast batch dims
  expectMatches(matmul("f64[40,7]", "f64[7,40]", "f64[40,40]"));               // K under a tile
}

TEST(GpuMatmulTile, IntegersAndHalfPrecision) {
  DiffOptions ints;
  ints.intBound = 20;
  expectMatches(matmul("i32[40,60]", "i32[60,50]", "i32[40,50]"), ints);
  expectMatches(matmul("i64[33,33]", "i64[33,33]", "i64[33,33]"), ints);
  DiffOptions half;
  half.tol = Tolerance{2, 1e-3};
  half.gpuTol = half.tol;
  expectMatches(matmul("f16[40,64]", "f16[64,48]", "f16[40,48]"), half);
  expectMatches(matmul("bf16[40,64]", "bf16[64,48]", "bf16[40,48]"), half);
}

TEST(GpuMatmulTile, FusedEpilogues) {
  expectMatches(R"(func @f(%x: f32[64,100], %w: f32[100,80], %bias: f32[80]) -> f32[64,80] {
  %h = matmul %x, %w
  %a = add %h, %bias
  %y = relu %a
  return %y
}
)");
  // Two outputs, one of them the matmul itself.
  expectMatches(R"(func @f(%x: f32[40,50], %w: f32[50,40]) -> (f32[40,40], f32[40,40]) {
  %h = matmul %x, %w
  %t = tanh %h
  return %h, %t
}
)");
}

}  // namespace
}  // namespace kiln::test
