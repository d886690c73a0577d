// Fused kernels against the interpreter: graphs run through decompose + fusion, then
//  - the fusion pass must not change results (interpreter before == after, bit for bit),
//  - the CPU backend must compute each fused kernel exactly as the interpreter runs its ops
//    (loop kernels with tails and segments, row kernels with any row length, row values and
//    several inner dims, library epilogues), NaN and inf included,
//  - the PTX of every fused kernel must assemble (row kernels use warp shuffles).
#include "codegen/compile_stages.h"
#include "passes/pass_manager.h"
#include "tests/unit/codegen/cpu_test_util.h"
#include "tests/unit/codegen/nvptx_test_util.h"

namespace kiln::test {
namespace {

struct FusedCase {
  const char* name;
  const char* source;
  int64_t intBound = 0;
};

const FusedCase kCases[] = {
    {"softmax_short_rows", R"(func @main(%x: f32[5,37]) -> f32[5,37] {
  %y = softmax %x
  return %y
})"},
    {"log_softmax_and_softmax_share_rows", R"(func @main(%x: f32[3,64]) -> (f32[3,64], f32[3,64]) {
  %s = softmax %x
  %l = log_softmax %x
  return %s, %l
})"},
    {"layer_norm_two_inner_dims", R"(func @main(%x: f32[2,3,4,5], %g: f32[4,5], %b: f32[4,5]) -> f32[2,3,4,5] {
  %y = layer_norm %x, %g, %b {axis = 2}
  return %y
})"},
    {"f16_softmax", R"(func @main(%x: f16[4,33]) -> f16[4,33] {
  %y = softmax %x
  return %y
})"},
    {"row_value_and_full_outputs", R"(func @main(%x: f32[6,40]) -> (f32[6], f32[6,40]) {
  %s = reduce_sum %x {axes = [1]}
  %r = reshape %s {shape = [6, 1]}
  %y = sub %x, %r
  return %s, %y
})"},
    {"int_rows", R"(func @main(%x: i32[7,9]) -> (i32[7,1], i32[7,9]) {
  %m = reduce_max %x {axes = [1], keepdims = true}
  %d = sub %x, %m
  %s = reduce_sum %d {axes = [1], keepdims = true}
  %y = mul %d, %s
  return %s, %y
})", 100},
    {"whole_tensor_sum", R"(func @main(%x: f32[3,50]) -> f32[] {
  %a = abs %x
  %s = reduce_sum %a
  return %s
})"},
    {"loop_tail_and_broadcasts", R"(func @main(%x: f32[7,5], %b: f32[5], %c: f32[7,1], %s: f32[]) -> f32[7,5] {
  %a = add %x, %b
  %m = mul %a, %c
  %t = tanh %m
  %y = div %t, %s
  return %y
})"},
    {"horizontal_segments_with_tails", R"(func @main(%p: f32[10], %g: f32[10], %q: f32[3,4], %h: f32[3,4]) -> (f32[10], f32[3,4]) {
  %lr = constant 0.5 : f32[]
  %u = mul %g, %lr
  %pn = sub %p, %u
  %w = mul %h, %lr
  %qn = sub %q, %w
  return %pn, %qn
})"},
    {"f64_and_i64_loops", R"(func @main(%x: f64[9,8], %i: i64[9,8]) -> (f64[9,8], i64[9,8]) {
  %e = exp %x
  %y = mul %e, %x
  %j = mul %i, %i
  %k = add %j, %i
  return %y, %k
})", 50},
    {"bf16_loop", R"(func @main(%x: bf16[6,12], %b: bf16[12]) -> bf16[6,12] {
  %a = add %x, %b
  %y = gelu %a
  return %y
})"},
    {"layout_ops_in_a_loop", R"(func @main(%x: f32[4,6], %y: f32[4,2], %i: i64[3]) -> f32[3,8] {
  %c = concat %x, %y {axis = 1}
  %n = neg %c
  %g = gather %n, %i {axis = 0}
  %p = pad %x {pads = [0, 1, -1, 1]}
  %s = slice %p {starts = [0, 0], ends = [3, 8]}
  %r = add %g, %s
  return %r
})", 4},
    // No library computes integer matmuls, so fusion gives them any elementwise epilogue.
    {"matmul_epilogue", R"(func @main(%x: i32[5,12], %w: i32[12,7], %b: i32[7]) -> i32[5,7] {
  %h = matmul %x, %w
  %a = add %h, %b
  %y = mul %a, %a
  return %y
})", 50},
    {"column_sum_epilogue", R"(func @main(%x: f32[9,6]) -> f32[6] {
  %q = mul %x, %x
  %s = reduce_sum %q {axes = [0]}
  %r = sqrt %s
  return %r
})"},
    // A pool gradient a window's columns per item (windowColumnsOf) with the relu gradient fused
    // after it: one kernel, reading %a as the window and as the relu's input.
    {"pool_gradient_windows_with_epilogue", R"(func @main(%a: f32[2,3,6,40], %g: f32[2,3,3,20]) -> f32[2,3,6,40] {
  %d = max_pool2d_backward %a, %g {kernel = [2, 2], strides = [2, 2]}
  %z = constant 0.0 : f32[]
  %p = gt %a, %z
  %r = select %p, %d, %z
  return %r
})"},
};

std::unique_ptr<Module> fused(const std::string& source) {
  auto m = parseOrFail(source);
  if (!m) return nullptr;
  Status s = passes::runPasses(*m, {"decompose", "cse", "dce", "fusion"});
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().str());
  return m;
}

class FusedKernel : public ::testing::TestWithParam<FusedCase> {};

// Fusion changes no bit; the compiled kernel matches the interpreter exactly but for transcendental
// functions, which come from libmvec on the CPU and libdevice on the GPU (a few ulp).
TEST_P(FusedKernel, FusionKeepsResultsAndCodegenMatchesTheInterpreter) {
  const FusedCase& c = GetParam();
  auto before = parseOrFail(c.source);
  ASSERT_TRUE(before);
  ASSERT_TRUE(passes::runPasses(*before, {"decompose", "cse", "dce"}).ok());
  auto after = fused(c.source);
  ASSERT_TRUE(after);
  const Function& f = *after->entry();
  bool hasFusion = false;
  walkOps(f.body(), [&](const Op* op) { hasFusion |= op->kind() == OpKind::Fusion; });
  EXPECT_TRUE(hasFusion) << "nothing was fused:\n" << printFunction(f);

  for (uint64_t seed : {1, 2}) {
    std::vector<Tensor> inputs = randomInputs(f, seed);
    for (size_t i = 0; i < inputs.size(); ++i)
      if (c.intBound && isInt(inputs[i].dtype())) inputs[i] = randomTensor(inputs[i].type(), seed + i, c.intBound);
    auto want = interpret(*before->entry(), inputs);
    auto got = interpret(f, inputs);
    ASSERT_TRUE(want.ok() && got.ok());
    for (size_t i = 0; i < want->size(); ++i)
      EXPECT_EQ(compareTensors((*want)[i], (*got)[i], {}), "") << "fusion changed result " << i;
  }
  DiffOptions exact;
  exact.intBound = c.intBound;
  exact.specials = true;
  exact.disabledPasses = {"all"};  // compile the fused function as it is
  exact.tol = test::mathTolerance();  // libmvec's exp and tanh (vector_math_test.cpp bounds them), not libm's
  exact.gpuTol = test::Tolerance{4, 1e-12};  // libdevice's exp/tanh and fma contraction, not the host's libm
  expectSameAsInterpreter(f, exact);
}

TEST_P(FusedKernel, PtxAssembles) {
  KILN_REQUIRE_PTXAS();
  auto m = fused(GetParam().source);
  ASSERT_TRUE(m);
  codegen::CompileOptions options;
  options.target = codegen::Target::Cuda;
  options.disabledPasses = {"all"};
  auto stages = codegen::compileStages(*m->entry(), options, nullptr);
  ASSERT_TRUE(stages.ok()) << stages.error().str();
  codegen::testing::expectAssembles(stages->code, options.gpuArch, GetParam().name);
}

INSTANTIATE_TEST_SUITE_P(Cases, FusedKernel, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace kiln::test
