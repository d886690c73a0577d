// Tiled transposes on the GPU (codegen/transpose_tile.h): loop kernels that read an input with
// its innermost axis moved go through a 32 x 32 shared-memory tile. Each equals the interpreter
// (on the GPU simulator in CI, whose racecheck also guards the tile's barriers) over partial
// tiles, 2-D to 4-D permutations, fused elementwise ops and broadcast operands, and every dtype
// width; tests/lit/compile/transpose_tile.test pins the PTX.
#include <gtest/gtest.h>

#include "codegen/transpose_tile.h"
#include "passes/fusion.h"
#include "tests/unit/codegen/cpu_test_util.h"

namespace kiln::test {
namespace {

// The group the planner makes of `text`'s function after fusion (its first kernel). The module
// and plan stay alive (the last call's) while the test reads the tile's values.
std::optional<codegen::TransposeTile> tileOf(const std::string& text) {
  static std::unique_ptr<Module> module;
  static std::unique_ptr<codegen::BlockPlan> plan;
  module = parseOrFail(text);
  passes::PassContext context;
  EXPECT_TRUE(passes::fuseOps(*module, context).ok());
  plan = codegen::planFunction(*module->entry());
  EXPECT_FALSE(plan->groups.empty());
  return codegen::transposeTile(plan->groups[0]);
}

TEST(TransposeTile, OnlyWhereTheInnermostAxisMoves) {
  auto tile = tileOf("func @f(%x: f32[64,48]) -> f32[48,64] {\n  %t = transpose %x {perm = [1, 0]}\n  return %t\n}\n");
  ASSERT_TRUE(tile);
  EXPECT_EQ(tile->inputInnerAxis, 0);
  EXPECT_EQ(tile->tiles(), 2 * 2);
  auto nhwc = tileOf("func @f(%x: f32[2,8,40,40]) -> f32[2,40,40,8] {\n  %t = transpose %x {perm = [0, 2, 3, 1]}\n  return %t\n}\n");
  ASSERT_TRUE(nhwc);
  EXPECT_EQ(nhwc->inputInnerAxis, 2);        // the input's W lands on output axis 2
  EXPECT_EQ(nhwc->tiles(), 2 * 40 * 2 * 1);  // N x H x ceil(W/32) x ceil(C/32)
  // The innermost axis stays innermost: loads and stores already agree.
  EXPECT_FALSE(tileOf("func @f(%x: f32[8,16,32]) -> f32[16,8,32] {\n  %t = transpose %x {perm = [1, 0, 2]}\n  return %t\n}\n"));
  // Too small to be worth a tile.
  EXPECT_FALSE(tileOf("func @f(%x: f32[16,16]) -> f32[16,16] {\n  %t = transpose %x {perm = [1, 0]}\n  return %t\n}\n"));
  // Through a reshape of an input (a flatten's gradient unflattened): the tile reads the input's
  // buffer at the reshaped operand's linear index.
  auto viewed = tileOf("func @f(%x: f32[32,4096]) -> f32[32,8,8,64] {\n  %r = reshape %x {shape = [32, 64, 8, 8]}\n"
                       "  %t = transpose %r {perm = [0, 2, 3, 1]}\n  return %t\n}\n");
  ASSERT_TRUE(viewed);
  EXPECT_EQ(viewed->input->type().shape, (Shape{32, 64, 8, 8}));
  EXPECT_EQ(viewed->buffer->type().shape, (Shape{32, 4096}));
}

void expectMatches(const std::string& text, DiffOptions o = {}) {
  auto m = parseOrFail(text);
  ASSERT_TRUE(m);
  expectSameAsInterpreter(*m->entry(), o);
}

TEST(GpuTransposeTile, EqualsTheInterpreter) {
  // Partial tiles on both axes, and exact ones.
  expectMatches("func @f(%x: f32[67,45]) -> f32[45,67] {\n  %t = transpose %x {perm = [1, 0]}\n  return %t\n}\n");
  expectMatches("func @f(%x: f32[64,96]) -> f32[96,64] {\n  %t = transpose %x {perm = [1, 0]}\n  return %t\n}\n");
  // 3-D and NCHW -> NHWC, NHWC -> NCHW.
  expectMatches("func @f(%x: f32[3,70,40]) -> f32[3,40,70] {\n  %t = transpose %x {perm = [0, 2, 1]}\n  return %t\n}\n");
  expectMatches("func @f(%x: f32[2,5,33,31]) -> f32[2,33,31,5] {\n  %t = transpose %x {perm = [0, 2, 3, 1]}\n  return %t\n}\n");
  expectMatches("func @f(%x: f32[2,33,31,5]) -> f32[2,5,33,31] {\n  %t = transpose %x {perm = [0, 3, 1, 2]}\n  return %t\n}\n");
  expectMatches("func @f(%x: f32[40,3,50]) -> f32[50,40,3] {\n  %t = transpose %x {perm = [2, 0, 1]}\n  return %t\n}\n");
  expectMatches("func @f(%x: f32[6,2100]) -> f32[6,30,70] {\n  %r = reshape %x {shape = [6, 70, 30]}\n"
                "  %t = transpose %r {perm = [0, 2, 1]}\n  return %t\n}\n");
}

TEST(GpuTransposeTile, FusedElementwiseAndBroadcastOperands) {
  DiffOptions specials;
  specials.specials = true;
  expectMatches(R"(func @f(%x: f32[2,8,36,36], %b: f32[8]) -> f32[2,36,36,8] {
  %t = transpose %x {perm = [0, 2, 3, 1]}
  %y = add %t, %b
  %r = relu %y
  return %r
}
)", specials);
  // Two outputs of the output's shape, one reading the transposed input twice.
  expectMatches(R"(func @f(%x: f32[50,60], %y: f32[60,50]) -> (f32[60,50], f32[60,50]) {
  %t = transpose %x {perm = [1, 0]}
  %s = mul %t, %t
  %d = sub %t, %y
  return %s, %d
}
)");
}

TEST(GpuTransposeTile, EveryElementWidth) {
  DiffOptions ints;
  ints.intBound = 1000;
  // [40,50]: 50 is no multiple of 4, so one element per thread; [44,52]: both axes are, so four
  // neighbours per thread, read and written as vectors, in partial tiles on both axes.
  for (const char* shape : {"[40,50]", "[44,52]"}) {
    std::string in = shape, out = shape == std::string("[40,50]") ? "[50,40]" : "[52,44]";
    for (const char* t : {"f32", "f64", "f16", "bf16", "i64", "u8", "bool"}) {
      std::string text = std::string("func @f(%x: ") + t + in + ") -> " + t + out +
                         " {\n  %t = transpose %x {perm = [1, 0]}\n  return %t\n}\n";
      expectMatches(text, std::string(t) == "i64" || std::string(t) == "u8" ? ints : DiffOptions{});
    }
  }
}

// Four neighbours per thread with fused work: two outputs, a broadcast operand read at every
// element of the vector, NaN and infinities, and a 4-D permute whose tiles overhang.
TEST(GpuTransposeTile, VectorsOfFourWithFusedWork) {
  DiffOptions specials;
  specials.specials = true;
  expectMatches(R"(func @f(%x: f32[52,60], %y: f32[60,52], %b: f32[52]) -> (f32[60,52], f32[60,52]) {
  %t = transpose %x {perm = [1, 0]}
  %s = mul %t, %b
  %d = sub %t, %y
  return %s, %d
}
)", specials);
  expectMatches("func @f(%x: bf16[3,12,20,36]) -> bf16[3,20,36,12] {\n  %t = transpose %x {perm = [0, 2, 3, 1]}\n"
                "  %r = relu %t\n  return %r\n}\n", specials);
}

}  // namespace
}  // namespace kiln::test
