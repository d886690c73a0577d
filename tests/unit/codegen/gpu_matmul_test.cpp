// Generated matmuls on the GPU as shared-memory tiles (codegen/matmul_tile.h): what runs where
// cuBLASLt does not (on the simulator: every matmul). Each equals the interpreter over partial
// tiles, K not a multiple of the tile, batches with broadcasting, fused epilogues, every dtype the
// op takes, NaN and infinities; tests/lit/compile/matmul_tile.test pins the PTX.
#include <gtest/gtest.h>

#include "codegen/matmul_tile.h"
#include "passes/pass_manager.h"
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

// A backward pass's products, X^T @ dY and dY @ W^T: fusion puts the transpose of the last two
// axes in the matmul's kernel, and the tile reads the untransposed input in place (coalesced,
// written into the tile the other way round).
const char* kTransposed = R"(func @f(%x: f32[50,64], %dy: f32[50,40], %w: f32[33,40]) -> (f32[64,40], f32[50,33]) {
  %xt = transpose %x {perm = [1, 0]}
  %dw = matmul %xt, %dy
  %wt = transpose %w {perm = [1, 0]}
  %dx = matmul %dy, %wt
  return %dw, %dx
}
)";

TEST(MatmulTile, ReadsTransposedOperandsInPlace) {
  auto m = parseOrFail(kTransposed);
  ASSERT_TRUE(m);
  ASSERT_TRUE(passes::runPasses(*m, {"fusion"}).ok());
  auto plan = codegen::planFunction(*m->entry());
  ASSERT_EQ(plan->groups.size(), 2u);
  auto dw = codegen::matmulTile(plan->groups[0]), dx = codegen::matmulTile(plan->groups[1]);
  ASSERT_TRUE(dw && dx);
  EXPECT_TRUE(dw->transposed[0] && !dw->transposed[1]);
  EXPECT_EQ(dw->stored[0]->name(), "x");
  EXPECT_TRUE(!dx->transposed[0] && dx->transposed[1]);
  EXPECT_EQ(dx->stored[1]->name(), "w");
}

TEST(GpuMatmulTile, TransposedOperands) {
  DiffOptions specials;
  specials.specials = true;
  expectMatches(kTransposed, specials);
  // Both transposed, batched, partial tiles; and integers.
  expectMatches(R"(func @f(%a: f32[2,70,40], %b: f32[2,33,70]) -> f32[2,40,33] {
  %at = transpose %a {perm = [0, 2, 1]}
  %bt = transpose %b {perm = [0, 2, 1]}
  %y = matmul %at, %bt
  return %y
}
)");
  DiffOptions ints;
  ints.intBound = 20;
  expectMatches(R"(func @f(%a: i32[45,40], %b: i32[45,36]) -> i32[40,36] {
  %at = transpose %a {perm = [1, 0]}
  %y = matmul %at, %b
  return %y
}
)", ints);
}

}  // namespace
}  // namespace kiln::test
