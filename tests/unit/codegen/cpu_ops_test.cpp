// Differential tests, CPU backend vs interpreter: reductions, normalisations, matmul, layout ops,
// gather, convolution, pooling, batch norm and cross entropy, on several shapes and dtypes.
#include <optional>
#include <regex>

#include <fmt/format.h>

#include "codegen/conv_rows.h"
#include "codegen/kernel_emitter.h"
#include "codegen/cpu_target.h"
#include "codegen/kernel_plan.h"
#include "codegen/row_block.h"
#include "codegen/row_prefetch.h"
#include "codegen/scatter_rows.h"
#include "codegen/transpose_tile.h"
#include "passes/pass_manager.h"
#include "tests/unit/codegen/cpu_test_util.h"

namespace kiln::test {
namespace {

const char* kFloatTypes[] = {"f16", "bf16", "f32", "f64"};
const char* kNumTypes[] = {"i8", "i32", "i64", "f16", "bf16", "f32", "f64"};
const char* kAllTypes[] = {"bool", "i8", "i32", "i64", "f16", "bf16", "f32", "f64"};

void check(const std::string& params, const std::string& line, DiffOptions o = {}) {
  SCOPED_TRACE(line + "   with " + params);
  auto m = oneOp(params, line);
  if (!m) return;
  expectSameAsInterpreter(*m->entry(), o);
}

// `text`'s @main on the CPU equals the interpreter's, NaN and infinities among its inputs.
void checkWithSpecials(const std::string& text) {
  auto m = parseOrFail(text);
  ASSERT_TRUE(m);
  DiffOptions specials;
  specials.specials = true;
  expectSameAsInterpreter(*m->entry(), specials);
}

TEST(CpuOps, Reductions) {
  // Adjacent reduced axes ([1, 2], and all of them) run as one loop over their product.
  const char* axes[] = {"", " {axes = [1]}", " {axes = [0, 2], keepdims = true}", " {axes = [1, 2]}", " {axes = [-1]}",
                        " {axes = []}"};
  for (const char* op : {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"})
    for (const char* t : kNumTypes)
      for (const char* a : axes)
        for (bool specials : {false, true})
          check(std::string("%x: ") + t + "[3,4,5]", std::string(op) + " %x" + a, {accumulateTolerance(), 1, specials});
  // Empty reductions: sum 0, prod 1, float mean NaN; max of nothing is an error on both.
  for (const char* op : {"reduce_sum", "reduce_prod", "reduce_mean", "reduce_max"})
    check("%x: f32[3,0]", std::string(op) + " %x {axes = [1]}");
}

// Reductions that keep the innermost axis go a tile of 32-128 columns at a time, reduced axes
// outside (codegen/column_reduction.h): whole and partial tiles (300 = 9 x 32 + 12, and 2 x 128 +
// 44), a middle axis, two axes with keepdims, every reduce op and dtype, NaN and infinities; and a
// bias gradient's shape:
// the full values and their column sum stored by one kernel, with an epilogue after the sum.
TEST(CpuOps, ColumnReductionsInTiles) {
  for (const char* op : {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"})
    for (const char* t : kNumTypes)
      for (bool specials : {false, true}) {
        DiffOptions o{accumulateTolerance(), 1, specials};
        check(std::string("%x: ") + t + "[37,300]", std::string(op) + " %x {axes = [0]}", o);
        check(std::string("%x: ") + t + "[4,9,130]", std::string(op) + " %x {axes = [1]}", o);
        check(std::string("%x: ") + t + "[5,3,16]", std::string(op) + " %x {axes = [0, 1], keepdims = true}", o);
      }
  // Enough rows for whole 128-column tiles (40 x 3 tiles), the last one partial.
  check("%x: f32[40,7,300]", "reduce_sum %x {axes = [1]}", {accumulateTolerance()});
  auto biasGradient = parseOrFail(R"(func @main(%g: f32[256,1000], %a: f32[256,1000], %m: f32[1000]) -> (f32[256,1000], f32[1000]) {
  %sq = mul %a, %a
  %one = constant 1.0 : f32[]
  %d = sub %one, %sq
  %dz = mul %g, %d
  %db = reduce_sum %dz {axes = [0]}
  %mdb = mul %m, %db
  %t = tanh %mdb
  return %dz, %t
}
)");
  ASSERT_TRUE(biasGradient);
  expectSameAsInterpreter(*biasGradient->entry(), {accumulateTolerance()});
}

TEST(CpuOps, ArgReductions) {
  for (const char* op : {"argmax", "argmin"})
    for (const char* t : kNumTypes)
      for (const char* a : {"", " {axis = 1}", " {axis = -1, keepdims = true}"})
        for (bool specials : {false, true}) check(std::string("%x: ") + t + "[4,6]", std::string(op) + " %x" + a, {{}, 1, specials});
  // Rows longer than the vectors of the two passes (emit_reduction.cpp), along the last axis (a
  // row kernel) and a middle one; a fused operand, computed again in the second pass.
  for (const char* op : {"argmax", "argmin"})
    for (const char* t : {"i8", "f16", "f32", "f64"}) {
      check(std::string("%x: ") + t + "[3,1003]", std::string(op) + " %x {axis = 1}", {{}, 1, true});
      check(std::string("%x: ") + t + "[2,77,5]", std::string(op) + " %x {axis = 1, keepdims = true}", {{}, 1, true});
    }
  checkWithSpecials(R"(func @main(%x: f32[16,1000], %b: f32[1000]) -> (i64[16], i64[16]) {
  %y = add %x, %b
  %s = softmax %y
  %i = argmax %s {axis = 1}
  %j = argmin %y {axis = 1}
  return %i, %j
}
)");
  // Down a strided axis in column tiles (column_reduction.h): axis 0 and a middle one, keepdims,
  // columns that fill no whole tile, every number type, and fused work read again per column.
  for (const char* op : {"argmax", "argmin"})
    for (const char* t : kNumTypes) {
      check(std::string("%x: ") + t + "[300,200]", std::string(op) + " %x {axis = 0}", {{}, 1, true});
      check(std::string("%x: ") + t + "[3,70,37]", std::string(op) + " %x {axis = 1, keepdims = true}", {{}, 1, true});
    }
  checkWithSpecials(R"(func @main(%x: f32[500,300], %b: f32[300]) -> (i64[300], i64[1,300], f32[300]) {
  %y = mul %x, %b
  %i = argmax %y {axis = 0}
  %j = argmin %y {axis = 0, keepdims = true}
  %s = reduce_sum %y {axes = [0]}
  return %i, %j, %s
}
)");
}

TEST(CpuOps, SoftmaxAndLayerNorm) {
  for (const char* op : {"softmax", "log_softmax"})
    for (const char* t : kFloatTypes)
      for (const char* a : {"", " {axis = 0}", " {axis = 1}"})
        for (bool specials : {false, true})
          check(std::string("%x: ") + t + "[3,7,5]", std::string(op) + " %x" + a, {accumulateTolerance(), 1, specials});
  for (const char* t : kFloatTypes) {
    std::string T = t;
    check("%x: " + T + "[4,6,8], %s: " + T + "[8], %b: " + T + "[8]", "layer_norm %x, %s, %b", {accumulateTolerance()});
    check("%x: " + T + "[4,6,8], %s: " + T + "[6,8], %b: " + T + "[6,8]", "layer_norm %x, %s, %b {axis = 1, epsilon = 0.1}",
          {accumulateTolerance()});
  }
  // Rows at and past the length whose reduction operands stay on the stack (softmax's exp read
  // back, not computed again: ElementEmitter::rowScratchFor), with NaN and infinities.
  for (const char* shape : {"[2,16384]", "[2,16385]"})
    for (const char* t : {"f32", "bf16"})
      check(std::string("%x: ") + t + shape, "softmax %x", {accumulateTolerance(), 1, true});
}

// `text` after the default pipeline, and its kernel plan (which points into the module: kept
// alive beside it). No plan where it does not parse.
struct PlannedText {
  std::unique_ptr<Module> module;
  std::unique_ptr<codegen::BlockPlan> plan;
};
PlannedText planText(const std::string& text) {
  PlannedText p;
  p.module = parseOrFail(text);
  if (!p.module) return p;
  Status fused = passes::runPasses(*p.module, passes::defaultPipeline());
  EXPECT_TRUE(fused.ok()) << fused.error().str();
  p.plan = codegen::planFunction(*p.module->entry());
  return p;
}

// What the row kernel of `text` (after fusion) fetches a row ahead, or nothing where it has no
// row kernel.
std::optional<codegen::RowPrefetch> rowPrefetchOf(const std::string& text) {
  PlannedText p = planText(text);
  if (!p.plan) return std::nullopt;
  for (const codegen::KernelGroup* group : p.plan->allGroups())
    if (group->kind == codegen::KernelKind::Row) return codegen::rowPrefetchFor(*group);
  ADD_FAILURE() << "no row kernel in\n" << text;
  return std::nullopt;
}

// Row kernels whose rows span several dims with a long last one (a layer norm over its last two
// dims, split-reductions' chunks of a full sum) sum a loop per run of the last dim
// (ElementEmitter::sumInnerRuns): operands broadcast along either dim, every reduction, NaN and
// infinities, against the interpreter.
TEST(CpuOps, RowsOfSeveralDimsSumARunOfTheLastDimAtATime) {
  for (const char* op : {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"})
    checkWithSpecials(fmt::format(
        "func @main(%x: f32[6,5,96], %s: f32[96], %r: f32[6,5,1]) -> f32[6] {{\n  %m = mul %x, %s\n"
        "  %n = add %m, %r\n  %y = {} %n {{axes = [1, 2]}}\n  return %y\n}}\n",
        op));
  for (const char* t : {"f32", "bf16", "f64"})
    check(fmt::format("%x: {0}[4,6,96], %s: {0}[6,96], %b: {0}[6,96]", t), "layer_norm %x, %s, %b {axis = 1}",
          {accumulateTolerance()});
  // A full sum split into 32 chunks of [8,512] (its elements computed by exp), and one whose
  // chunks are rows of 8192 kept on the stack for a second pass (a mean's subtraction).
  const std::string fullSum =
      "func @main(%x: f32[256,512], %s: f32[512]) -> f32[] {\n  %m = mul %x, %s\n  %e = exp %m\n"
      "  %y = reduce_sum %e\n  return %y\n}\n";
  checkWithSpecials(fullSum);
  PlannedText p = planText(fullSum);
  ASSERT_TRUE(p.plan);
  bool chunked = false;
  for (const codegen::KernelGroup* group : p.plan->allGroups())
    chunked |= group->kind == codegen::KernelKind::Row && group->inner == Shape{8, 512};
  EXPECT_TRUE(chunked) << "the full sum is not cut into rows of [8,512]";
  checkWithSpecials(
      "func @main(%x: f32[4,16,512]) -> f32[4,16,512] {\n  %a = abs %x\n"
      "  %m = reduce_mean %a {axes = [1, 2], keepdims = true}\n  %y = sub %a, %m\n  return %y\n}\n");
}

TEST(CpuOps, RowKernelsFetchTheNextRowInTheirSecondPass) {
  // The input read along the rows, not the scale and bias every row shares; blocks of 4 KiB of it.
  for (const auto& [t, block] : std::vector<std::pair<std::string, int64_t>>{{"f32", 1024}, {"f64", 512}, {"bf16", 2048}}) {
    SCOPED_TRACE(t);
    auto ln = rowPrefetchOf("func @main(%x: " + t + "[4,3000], %s: " + t + "[3000], %b: " + t + "[3000]) -> " + t +
                            "[4,3000] {\n  %y = layer_norm %x, %s, %b\n  return %y\n}\n");
    ASSERT_TRUE(ln);
    EXPECT_EQ(ln->inputs, std::vector<size_t>{0});
    EXPECT_EQ(ln->blockElements, block);
  }
  // A residual added before the norm is read along the rows too; an input a transpose reads is
  // read across them, and one of another shape (the mask's row of [4,1]) is not fetched.
  auto two = rowPrefetchOf("func @main(%x: f32[256,256], %r: f32[256,256], %m: f32[256,1]) -> f32[256,256] {\n"
                           "  %t = transpose %r {perm = [1, 0]}\n  %a = add %x, %t\n  %b = add %a, %m\n"
                           "  %y = softmax %b\n  return %y\n}\n");
  ASSERT_TRUE(two);
  EXPECT_EQ(two->inputs.size(), 1u);
  auto residual = rowPrefetchOf("func @main(%x: f32[64,1024], %r: f32[64,1024]) -> f32[64,1024] {\n"
                                "  %a = add %x, %r\n  %y = softmax %a\n  return %y\n}\n");
  ASSERT_TRUE(residual);
  EXPECT_EQ(residual->inputs, (std::vector<size_t>{0, 1}));
  // Rows shorter than kMinPrefetchRowBytes fetch nothing: the hardware follows them.
  EXPECT_FALSE(rowPrefetchOf("func @main(%x: f32[64,255]) -> f32[64,255] {\n  %y = softmax %x\n  return %y\n}\n"));
  EXPECT_TRUE(rowPrefetchOf("func @main(%x: f32[64,256]) -> f32[64,256] {\n  %y = softmax %x\n  return %y\n}\n"));

  // The passes run in blocks of the rows (and one remainder): every one computes what the
  // interpreter does, rows shorter than a block, a whole number of blocks and with a remainder
  // (of one element too),
  // the last row (which fetches itself again) included, NaN and infinities among the inputs. The
  // root-mean-square norm's second pass is its outputs'.
  const std::string rms = "  %q = mul %x, %x\n  %m = reduce_mean %q {axes = [-1], keepdims = true}\n"
                          "  %r = rsqrt %m\n  %y = mul %x, %r\n";
  for (const char* t : {"f32", "f64", "bf16"})
    for (const char* n : {"1000", "1025", "2048", "2500"}) {
      std::string x = std::string(t) + "[3," + n + "]";
      for (const char* op : {"softmax %x", "log_softmax %x"})
        check("%x: " + x, op, {accumulateTolerance(), 1, true});
      check("%x: " + x + ", %s: " + t + "[" + n + "], %b: " + t + "[" + n + "]", "layer_norm %x, %s, %b",
            {accumulateTolerance(), 2, true});
      auto m = parseOrFail("func @main(%x: " + x + ") -> " + x + " {\n" + rms + "  return %y\n}\n");
      ASSERT_TRUE(m);
      DiffOptions o{accumulateTolerance(), 3, true};
      expectSameAsInterpreter(*m->entry(), o);
    }
}

// How many rows each work item of `text`'s row kernels (after fusion) takes side by side on this
// host (row_block.h); 0 where there is no row kernel or they differ.
int64_t rowsPerItemOf(const std::string& text) {
  PlannedText p = planText(text);
  if (!p.plan) return 0;
  codegen::CpuTarget target;
  int64_t rows = 0;
  for (const codegen::KernelGroup* group : p.plan->allGroups()) {
    if (group->kind != codegen::KernelKind::Row) continue;
    if (rows && rows != target.rowsPerItem(*group)) return 0;
    rows = target.rowsPerItem(*group);
  }
  return rows;
}

TEST(CpuOps, ShortRowsGoInBlocksOfRowsSideBySide) {
  const int64_t lanes = codegen::CpuTarget().floatSumLanes();
  auto softmaxOf = [](int64_t rows, int64_t n) {
    std::string x = "f32[" + std::to_string(rows) + "," + std::to_string(n) + "]";
    return "func @main(%x: " + x + ") -> " + x + " {\n  %y = softmax %x\n  return %y\n}\n";
  };
  // Rows shorter than two vectors, a block's worth of them at least, and enough elements in all.
  // (`many` rows: past kMinRowBlockElements for rows of any length.)
  const int64_t many = codegen::kMinRowBlockElements;
  EXPECT_EQ(rowsPerItemOf(softmaxOf(many, lanes + 2)), lanes);
  EXPECT_EQ(rowsPerItemOf(softmaxOf(many, 2 * lanes - 1)), lanes);
  EXPECT_EQ(rowsPerItemOf(softmaxOf(many, lanes)), lanes);
  EXPECT_EQ(rowsPerItemOf(softmaxOf(many, 2 * lanes)), 1);
  EXPECT_EQ(rowsPerItemOf(softmaxOf(codegen::kMinRowBlockElements / 2, 2)), lanes);
  EXPECT_EQ(rowsPerItemOf(softmaxOf(codegen::kMinRowBlockElements / 2 - 1, 2)), 1);
  // A row of one vector only where the kernel writes full rows, not for a sum alone.
  auto sumOf = [](int64_t rows, int64_t n) {
    std::string x = "f32[" + std::to_string(rows) + "," + std::to_string(n) + "]";
    return "func @main(%x: " + x + ") -> f32[" + std::to_string(rows) + "] {\n  %y = reduce_sum %x {axes = [1]}\n  return %y\n}\n";
  };
  EXPECT_EQ(rowsPerItemOf(sumOf(many, lanes)), 1);
  EXPECT_EQ(rowsPerItemOf(sumOf(many, lanes - 1)), lanes);

  // Every kernel kind a row can hold, against the interpreter: rows of 2 up to 31 (both sides of
  // AVX2's 8 lanes and AVX-512's 16), row counts with a short last block (1029 = 64 * 16 + 5) and
  // without (1024), NaN and infinities among the inputs.
  const std::string rms = "  %q = mul %x, %x\n  %m = reduce_mean %q {axes = [-1], keepdims = true}\n"
                          "  %r = rsqrt %m\n  %y = mul %x, %r\n";
  for (const auto& [rows, n] : std::vector<std::pair<std::string, std::string>>{
           {"4101", "2"}, {"2053", "5"}, {"1029", "8"}, {"1029", "10"}, {"1024", "10"}, {"1029", "15"}, {"1029", "16"},
           {"1029", "31"}}) {
    SCOPED_TRACE(rows + " rows of " + n);
    for (const char* t : kFloatTypes) {
      std::string x = std::string(t) + "[" + rows + "," + n + "]";
      for (const char* op : {"softmax %x", "log_softmax %x"}) check("%x: " + x, op, {accumulateTolerance(), 1, true});
      check("%x: " + x + ", %s: " + t + "[" + n + "], %b: " + t + "[" + n + "]", "layer_norm %x, %s, %b",
            {accumulateTolerance(), 2, true});
      auto m = parseOrFail("func @main(%x: " + x + ") -> " + x + " {\n" + rms + "  return %y\n}\n");
      ASSERT_TRUE(m);
      expectSameAsInterpreter(*m->entry(), {accumulateTolerance(), 3, true});
    }
    for (const char* t : {"i8", "i64", "bf16", "f32", "f64"}) {
      std::string x = std::string(t) + "[" + rows + "," + n + "]";
      for (const char* op : {"argmax %x {axis = 1}", "argmin %x {axis = 1, keepdims = true}"})
        check("%x: " + x, op, {{}, 4, true});
    }
  }
  // Rows of several dims; an input per row and one every row shares; the row's own results (a
  // sum, a max) beside the full ones; ints.
  auto mixed = parseOrFail(R"(func @main(%x: f32[2,30,23,7], %m: f32[2,30,23,1], %g: f32[7]) -> (f32[2,30,23,7], f32[2,30,23], f32[2,30,23,1]) {
  %a = mul %x, %m
  %b = add %a, %g
  %s = reduce_sum %b {axes = [3]}
  %t = reduce_max %b {axes = [3], keepdims = true}
  %d = sub %b, %t
  %e = exp %d
  return %e, %s, %t
}
)");
  ASSERT_TRUE(mixed);
  expectSameAsInterpreter(*mixed->entry(), {accumulateTolerance(), 5, true});
  check("%x: i32[1500,6]", "reduce_max %x {axes = [1], keepdims = true}");
  auto ints = parseOrFail(R"(func @main(%x: i64[1000,9]) -> i64[1000,9] {
  %m = reduce_min %x {axes = [1], keepdims = true}
  %y = sub %x, %m
  return %y
}
)");
  ASSERT_TRUE(ints);
  expectSameAsInterpreter(*ints->entry());
}

TEST(CpuOps, ARowBlocksLabelOutOfRangeIsRaisedWhereverItsRowIs) {
  // A cross entropy over 10 classes: its label checks run in every lane of a block without a
  // branch, and are raised after the block (ElementEmitter::raiseIf); the last, short block goes
  // row by row. A bad label in either, or none.
  auto m = parseOrFail(R"(func @main(%x: f32[1029,10], %l: i64[1029]) -> f32[] {
  %y = softmax_cross_entropy %x, %l
  return %y
}
)");
  ASSERT_TRUE(m);
  codegen::CompileOptions options;
  options.target = codegen::Target::Cpu;
  auto exe = Executable::compile(*m->entry(), options);
  ASSERT_TRUE(exe.ok()) << exe.error().str();
  std::vector<Tensor> inputs = randomInputs(*m->entry(), 7);
  for (int64_t bad : {-1, 20, 1027}) {
    SCOPED_TRACE("bad label in row " + std::to_string(bad));
    for (int64_t r = 0; r < 1029; ++r) inputs[1].setInt(r, r == bad ? 10 + r : r % 10);
    auto want = interpret(*m->entry(), inputs);
    auto got = (*exe)->run(inputs);
    ASSERT_EQ(want.ok(), got.ok()) << (got.ok() ? want.error().str() : got.error().str());
    if (!got.ok()) {
      EXPECT_EQ(got.error().str(), want.error().str());
      EXPECT_NE(got.error().str().find("index " + std::to_string(bad)), std::string::npos) << got.error().str();
    } else {
      EXPECT_EQ(compareTensors((*want)[0], (*got)[0], accumulateTolerance()), "");
    }
  }
}

TEST(CpuOps, Matmul) {
  const char* shapes[][2] = {{"[5,7]", "[7,3]"}, {"[7]", "[7,3]"}, {"[5,7]", "[7]"}, {"[7]", "[7]"},
                             {"[2,5,7]", "[7,3]"}, {"[2,1,5,7]", "[3,7,4]"}, {"[64,128]", "[128,33]"}};
  for (const char* t : kNumTypes)
    for (auto& s : shapes) check(std::string("%a: ") + t + s[0] + ", %b: " + t + s[1], "matmul %a, %b", {accumulateTolerance()});
}

// Generated matmuls (what oneDNN does not take; KILN_CPU_LIBRARIES=off makes every one generated)
// go 64 rows' 64 columns per work item (codegen/matmul_tile.h, cpuMatmulRows), summing in k order
// in double as the interpreter does: the same bits. Whole column blocks (B packed into a strip,
// groups of 4 rows with their sums in registers: [9,33] x [33,200] has 3 of 4, with a row past
// the last group of 4) and the last, partial one; K in blocks of 256 with a partial last block
// ([70,300] x [300,130]: a second item of 6 rows); broadcast batches, transposed operands read in
// place, epilogues, K = 0, every number type.
TEST(CpuOps, GeneratedMatmulRows) {
  setenv("KILN_CPU_LIBRARIES", "off", 1);
  DiffOptions exact;  // on the CPU; the GPU (the simulator, under ctest) contracts multiply-adds
  exact.gpuTol = accumulateTolerance();
  const char* shapes[][2] = {{"[5,7]", "[7,9]"}, {"[3,70]", "[70,130]"}, {"[2,1,5,16]", "[3,16,72]"}, {"[4,0]", "[0,9]"},
                             {"[9,33]", "[33,200]"}, {"[70,300]", "[300,130]"}, {"[66,20]", "[20,64]"}};
  for (const char* t : kNumTypes) {
    for (auto& s : shapes) check(std::string("%a: ") + t + s[0] + ", %b: " + t + s[1], "matmul %a, %b", exact);
    std::string T = t;
    // The bias adds to the product rounded to T, as the interpreter's add reads it.
    auto biased = parseModule("func @main(%a: " + T + "[20,64], %b: " + T + "[64,72], %bias: " + T + "[72]) -> " + T +
                              "[20,72] {\n  %c = matmul %a, %b\n  %d = add %c, %bias\n  return %d\n}\n", "bias.kiln");
    ASSERT_TRUE(biased.ok()) << biased.error().str();
    SCOPED_TRACE("bias, " + T);
    // cuBLASLt adds the bias before its one rounding to T (a fused epilogue): where the sum cancels,
    // as much as an ulp of the 16-bit product (up to 8 here) from the interpreter's.
    DiffOptions biasOptions = exact;
    bool narrow = T == "f16" || T == "bf16";
    biasOptions.gpuTol = Tolerance{accumulateTolerance().ulps, narrow ? 0.05 : accumulateTolerance().atol};
    expectSameAsInterpreter(*(*biased)->entry(), biasOptions);
    auto m = parseModule("func @main(%a: " + T + "[20,6], %b: " + T + "[65,20], %bias: " + T + "[65]) -> " + T + "[6,65] {\n"
                         "  %at = transpose %a {perm = [1, 0]}\n  %bt = transpose %b {perm = [1, 0]}\n"
                         "  %c = matmul %at, %bt\n  %d = add %c, %bias\n  %e = abs %d\n  return %e\n}\n", "rows.kiln");
    ASSERT_TRUE(m.ok()) << m.error().str();
    SCOPED_TRACE("transposed operands and bias+abs, " + T);
    DiffOptions specials = exact;
    specials.seed = 3;
    specials.specials = true;
    expectSameAsInterpreter(*(*m)->entry(), specials);
  }
  unsetenv("KILN_CPU_LIBRARIES");
}

// The layout the CPU gives the conv2d kernel of `text` (after fusion), or nothing.
std::optional<codegen::ConvRows> convRowsOf(const std::string& text) {
  PlannedText p = planText(text);
  if (!p.plan) return std::nullopt;
  for (const codegen::KernelGroup* group : p.plan->allGroups())
    for (const Op* op : group->ops)
      if (op->kind() == OpKind::Conv2d) return codegen::cpuConvRows(*group, codegen::CpuTarget().floatSumLanes());
  ADD_FAILURE() << "no conv2d kernel in\n" << text;
  return std::nullopt;
}

// Generated convolutions (f64; every float type with KILN_CPU_LIBRARIES=off) go in blocks of
// output channels by output columns of one output row, the sums in vector lanes
// (codegen/conv_rows.h), each adding the terms the interpreter adds in its order: the same bits.
// Padding on every side, uneven; column strides 2 and 3 (a contiguous run, every stride-th kept)
// and 5 (gathered), with dilation; groups (blocks inside one group: 2 of 3 channels each),
// depthwise; a channel count that leaves a last block short; rows shorter than a vector, and a
// single column; windows whose columns loop (20 wide) or whose rows do (11 x 7); a bias and relu
// fused after it. NaN and infinities among the weights: a padded column must add no 0 * inf.
TEST(CpuOps, GeneratedConvBlocks) {
  setenv("KILN_CPU_LIBRARIES", "off", 1);
  DiffOptions exact;
  exact.gpuTol = accumulateTolerance();
  exact.specials = true;
  struct Case {
    const char *x, *w, *attrs;
  };
  const Case cases[] = {
      {"[2,8,13,13]", "[6,8,3,3]", "pads = [1, 1, 1, 1]"},
      {"[2,5,17,19]", "[7,5,3,3]", "pads = [1, 2, 0, 1], strides = [2, 2]"},
      {"[1,4,11,40]", "[5,4,3,4]", "pads = [1, 2, 1, 3], strides = [1, 3]"},
      {"[1,4,11,40]", "[5,4,3,4]", "pads = [1, 2, 1, 3], strides = [2, 5], dilations = [1, 2]"},
      {"[1,4,20,23]", "[5,4,3,2]", "pads = [2, 1, 2, 3], strides = [3, 1], dilations = [2, 2]"},
      {"[1,6,9,9]", "[9,2,3,3]", "pads = [1, 1, 1, 1], groups = 3"},
      {"[2,6,10,21]", "[6,1,3,3]", "pads = [1, 1, 1, 1], groups = 6"},
      {"[3,4,7,3]", "[5,4,3,3]", "pads = [1, 1, 1, 1]"},
      {"[3,4,7,1]", "[5,4,3,1]", "pads = [1, 0, 1, 0]"},
      {"[1,3,12,40]", "[5,3,5,20]", "pads = [2, 9, 2, 10]"},
      {"[1,3,20,20]", "[5,3,11,7]", "pads = [5, 3, 5, 3]"},
  };
  for (const char* t : kFloatTypes) {
    std::string T = t;
    for (const Case& c : cases) check("%x: " + T + c.x + ", %w: " + T + c.w, std::string("conv2d %x, %w {") + c.attrs + "}", exact);
    std::string text = "func @main(%x: " + T + "[2,8,12,40], %w: " + T + "[10,8,3,3], %b: " + T + "[10,1,1]) -> " + T +
                       "[2,10,12,40] {\n  %y = conv2d %x, %w {pads = [1, 1, 1, 1]}\n  %z = add %y, %b\n  %r = relu %z\n"
                       "  return %r\n}\n";
    auto m = parseOrFail(text);
    ASSERT_TRUE(m);
    SCOPED_TRACE("bias and relu, " + T);
    expectSameAsInterpreter(*m->entry(), exact);
  }
  unsetenv("KILN_CPU_LIBRARIES");
  // The blocks: 8 channels by two vectors of f64 lanes on AVX-512 (16 vector sums), 4 by two on
  // AVX2; twice the channels where a row takes one vector; within a group's channels.
  const int lanes = std::max(2, codegen::CpuTarget().floatSumLanes() / 2);
  auto layout = [](const std::string& x, const std::string& w, const std::string& attrs) {
    return convRowsOf("func @main(%x: f64" + x + ", %w: f64" + w + ") -> f64[] {\n  %y = conv2d %x, %w {" + attrs +
                      "}\n  %s = reduce_sum %y {axes = [0, 1, 2, 3]}\n  return %s\n}\n");
  };
  auto wide = layout("[1,16,8,40]", "[16,16,3,3]", "pads = [1, 1, 1, 1]");
  ASSERT_TRUE(wide);
  EXPECT_EQ(wide->lanes, lanes);
  EXPECT_EQ(wide->vectors, 2);
  EXPECT_EQ(wide->rows, lanes >= 8 ? 8 : 4);
  auto narrow = layout("[1,16,8," + std::to_string(lanes) + "]", "[16,16,3,3]", "pads = [1, 1, 1, 1]");
  ASSERT_TRUE(narrow);
  EXPECT_EQ(narrow->vectors, 1);
  EXPECT_EQ(narrow->rows, lanes >= 8 ? 16 : 8);
  auto grouped = layout("[1,6,8,40]", "[9,2,3,3]", "pads = [1, 1, 1, 1], groups = 3");
  ASSERT_TRUE(grouped);
  EXPECT_EQ(grouped->rows, 3);
  EXPECT_FALSE(layout("[1,8,40,16]", "[16,16,3,3]", "pads = [1, 1, 1, 1], layout = \"nhwc\"").has_value());
}

std::optional<codegen::ScatterRows> scatterRowsOf(const std::string& text) {
  PlannedText p = planText(text);
  if (!p.plan) return std::nullopt;
  for (const codegen::KernelGroup* group : p.plan->allGroups())
    for (const Op* op : group->ops)
      if (op->kind() == OpKind::GatherBackward) return codegen::cpuScatterRows(*group);
  ADD_FAILURE() << "no gather_backward kernel in\n" << text;
  return std::nullopt;
}

// gather_backward (an embedding's gradient) goes in blocks of output rows by columns
// (codegen/scatter_rows.h): each block walks the indices once, adding each index's slice of dy
// into its rows' double sums in index order, the interpreter's terms in its order: the same bits.
// Repeated indices (8 into 3 rows) with NaN and infinities, an inner axis, 2-D indices (36: two
// vector compares of 16 and 4 one at a time), every float type; 64 f64 slices into 3 rows (their sums round); several blocks of rows (9000 rows of 3) and of columns (rows of 4100: blocks of 4 x
// 4096, cut at both edges); negative indices and an epilogue; an index out of range fails with
// the interpreter's message.
TEST(CpuOps, GeneratedGatherBackwardBlocks) {
  for (const char* t : kFloatTypes) {
    std::string T = t;
    check("%dy: " + T + "[8,5], %i: i32[8]", "gather_backward %dy, %i {input_shape = [3, 5]}", {{}, 1, true, 3});
    check("%dy: " + T + "[2,6,4], %i: i64[6]", "gather_backward %dy, %i {axis = 1, input_shape = [2, 3, 4]}", {{}, 1, false, 3});
    check("%dy: " + T + "[2,3,4], %i: i32[2,3]", "gather_backward %dy, %i {input_shape = [5, 4]}", {{}, 1, false, 5});
    check("%dy: " + T + "[4,9,3], %i: i64[4,9]", "gather_backward %dy, %i {input_shape = [6, 3]}", {{}, 2, true, 6});
  }
  // f64 terms round as they are added: ~21 of them per row, in the interpreter's order.
  check("%dy: f64[64,5], %i: i32[64]", "gather_backward %dy, %i {input_shape = [3, 5]}", {{}, 1, false, 3});
  check("%dy: f32[300,4100], %i: i32[300]", "gather_backward %dy, %i {input_shape = [7, 4100]}", {{}, 1, false, 7});
  check("%dy: f64[200,3], %i: i64[200]", "gather_backward %dy, %i {input_shape = [9000, 3]}", {{}, 1, false, 9000});
  auto m = parseOrFail(
      "func @main(%dy: f32[4,6]) -> f32[3,6] {\n  %i = constant [-1, 2, -3, 2] : i32[4]\n"
      "  %g = gather_backward %dy, %i {input_shape = [3, 6]}\n  %h = mul %g, %g\n  %y = relu %h\n  return %y\n}\n");
  ASSERT_TRUE(m);
  expectSameAsInterpreter(*m->entry());
  // Inside a map, each body's indices are a slice 68 bytes after the last: the vector compare's
  // load is aligned only as an index is.
  auto mapped = parseOrFail(
      "func @main(%dys: f32[3,17,4], %is: i32[3,17]) -> f32[3,5,4] {\n"
      "  %gs = map %dys, %is (%dy: f32[17,4], %i: i32[17]) {\n"
      "    %g = gather_backward %dy, %i {input_shape = [5, 4]}\n    yield %g\n  }\n  return %gs\n}\n");
  ASSERT_TRUE(mapped);
  DiffOptions rows;
  rows.intBound = 5;
  expectSameAsInterpreter(*mapped->entry(), rows);
  auto bad = parseOrFail(
      "func @main(%dy: f32[2,6]) -> f32[3,6] {\n  %i = constant [1, 3] : i32[2]\n"
      "  %y = gather_backward %dy, %i {input_shape = [3, 6]}\n  return %y\n}\n");
  ASSERT_TRUE(bad);
  expectSameAsInterpreter(*bad->entry());
  // The blocks: as many rows as fill 16384 double sums, rows of at most 4096 columns.
  auto layout = [](const std::string& dy, const std::string& shape) {
    return scatterRowsOf("func @main(%dy: f32" + dy + ", %i: i32[" + dy.substr(1, dy.find(',') - 1) + "]) -> f32" + shape +
                         " {\n  %y = gather_backward %dy, %i {input_shape = " + shape + "}\n  return %y\n}\n");
  };
  auto embedding = layout("[16384,256]", "[32000, 256]");
  ASSERT_TRUE(embedding);
  EXPECT_EQ(embedding->rows, 64);
  EXPECT_EQ(embedding->columns, 256);
  EXPECT_EQ(embedding->items(), 500);
  auto wide = layout("[10,5000]", "[20, 5000]");
  ASSERT_TRUE(wide);
  EXPECT_EQ(wide->rows, 4);
  EXPECT_EQ(wide->columns, 4096);
  EXPECT_EQ(wide->items(), 10);
}

// A loop kernel computed through one transpose that moves the innermost axis goes a 32x32 tile
// at a time, the input moved into a stack tile in 8x8 blocks transposed in registers
// (codegen/emit_register_tile.cpp): every dtype (1, 2, 4 and 8 bytes, bool) on whole tiles
// ([64,96]), tiles and blocks cut by the tensor's edges (45 and 70: a 13-row block, a 6-column
// one), an untiled axis between the tiled ones ([37,5,45] reversed), NCHW <-> NHWC; elementwise
// work fused in, with a broadcast operand and NaN and infinities.
TEST(CpuOps, TransposesInRegisterTiles) {
  for (const char* t : kAllTypes) {
    std::string T = t;
    check("%x: " + T + "[64,96]", "transpose %x {perm = [1, 0]}");
    check("%x: " + T + "[45,70]", "transpose %x {perm = [1, 0]}");
    check("%x: " + T + "[37,5,45]", "transpose %x {perm = [2, 1, 0]}");
    check("%x: " + T + "[2,24,9,40]", "transpose %x {perm = [0, 2, 3, 1]}");
    check("%x: " + T + "[2,9,40,24]", "transpose %x {perm = [0, 3, 1, 2]}");
  }
  // Through a reshape of the input (reading its buffer at the reshaped index).
  auto viewed = parseOrFail(R"(func @main(%x: f32[6,2100]) -> f32[6,30,70] {
  %r = reshape %x {shape = [6, 70, 30]}
  %t = transpose %r {perm = [0, 2, 1]}
  %n = neg %t
  return %n
}
)");
  ASSERT_TRUE(viewed);
  expectSameAsInterpreter(*viewed->entry());
  checkWithSpecials(R"(func @main(%x: f32[3,70,40], %b: f32[70]) -> f32[40,3,70] {
  %t = transpose %x {perm = [2, 0, 1]}
  %y = add %t, %b
  %r = relu %y
  return %r
}
)");
}

// The loop kernel of `text` (after fusion) that holds a transpose: its CPU register tile (with
// elementwise ops before the transpose allowed) and its GPU tile (without), the module and plan
// they point into kept alive beside them.
struct TransposeTiles {
  PlannedText planned;
  std::optional<codegen::TransposeTile> cpu, gpu;
};
TransposeTiles tilesOf(const std::string& text) {
  TransposeTiles tiles{planText(text), std::nullopt, std::nullopt};
  if (!tiles.planned.plan) return tiles;
  for (const codegen::KernelGroup* group : tiles.planned.plan->allGroups())
    for (const Op* op : group->ops)
      if (op->kind() == OpKind::Transpose) {
        tiles.cpu = codegen::registerTransposeTile(*group);
        tiles.gpu = codegen::transposeTile(*group);
        return tiles;
      }
  ADD_FAILURE() << "no transpose in\n" << text;
  return tiles;
}

TEST(CpuOps, TransposesAfterElementwiseOpsReadTheirInputFromTheTile) {
  // A bias and a relu before the transpose back from channels-last: the CPU's tile holds the
  // input, and the ops run per element from it; the GPU's tile takes no such ops.
  const std::string biasRelu = R"(func @main(%x: f32[2,30,40,64], %b: f32[64]) -> f32[2,64,30,40] {
  %y = add %x, %b
  %r = relu %y
  %t = transpose %r {perm = [0, 3, 1, 2]}
  return %t
}
)";
  TransposeTiles tiles = tilesOf(biasRelu);
  ASSERT_TRUE(tiles.cpu);
  EXPECT_EQ(tiles.cpu->stacked->name(), "x");
  EXPECT_EQ(tiles.cpu->buffer, tiles.cpu->stacked);
  EXPECT_EQ(tiles.cpu->input->name(), "r");
  EXPECT_FALSE(tiles.gpu);
  checkWithSpecials(biasRelu);
  // The chain may change the dtype (the tile holds the input's), run on a square tensor (whose ops
  // before and after the transpose have one shape), or read a broadcast value computed in the
  // kernel; ops after the transpose too.
  checkWithSpecials(R"(func @main(%x: f32[3,70,40]) -> bf16[40,3,70] {
  %h = cast %x {to = bf16}
  %t = transpose %h {perm = [2, 0, 1]}
  return %t
}
)");
  auto square = parseOrFail(R"(func @main(%x: f32[64,64], %b: f32[64], %c: f32[64]) -> f32[64,64] {
  %s = mul %b, %c
  %y = sub %x, %s
  %e = exp %y
  %t = transpose %e {perm = [1, 0]}
  %z = mul %t, %b
  return %z
}
)");
  ASSERT_TRUE(square);
  expectSameAsInterpreter(*square->entry(), {mathTolerance(), 1, true});
  // Two inputs of the operand's shape: no chain to one input, no tile; the same results.
  const std::string two = R"(func @main(%x: f32[2,30,40,64], %w: f32[2,30,40,64]) -> f32[2,64,30,40] {
  %y = add %x, %w
  %t = transpose %y {perm = [0, 3, 1, 2]}
  return %t
}
)";
  EXPECT_FALSE(tilesOf(two).cpu);
  checkWithSpecials(two);
}

// Transposing loop parts the tiles do not take go in bands of 32 rows, column by column
// (codegen/cpu_target.cpp, emitBandLoops): rows of 5 to 7 columns (shorter than a block), with
// whole bands, a last band of fewer rows, and the partial rows at either end of a thread's chunk
// ([6,1001] splits mid-row on two threads); several transposed parts in one kernel (the weight
// transposes of a training step).
TEST(CpuOps, TransposesInBandsOfRows) {
  check("%x: f32[1001,6]", "transpose %x {perm = [1, 0]}");
  check("%x: i8[70,5,33]", "transpose %x {perm = [2, 0, 1]}");
  check("%x: f64[7,999]", "transpose %x {perm = [1, 0]}");
  auto parts = parseOrFail(R"(func @main(%a: f32[1024,10], %w: f32[300,200], %x: f32[64,77]) -> (f32[10,1024], f32[200,300], f32[77,64]) {
  %ta = transpose %a {perm = [1, 0]}
  %tw = transpose %w {perm = [1, 0]}
  %tx = transpose %x {perm = [1, 0]}
  return %ta, %tw, %tx
}
)");
  ASSERT_TRUE(parts);
  expectSameAsInterpreter(*parts->entry());
}

// Rows of at most 4 columns (an image's channels moved last) go row by row instead, the columns
// in a constant-trip loop LLVM unrolls, so the loop over rows vectorises: row lengths 1 to 4,
// odd row counts whose thread chunks end mid-row, elementwise work fused in, 16-bit elements.
TEST(CpuOps, TransposesToShortRows) {
  check("%x: f32[1,3,97,101]", "transpose %x {perm = [0, 2, 3, 1]}");
  check("%x: f32[4,2501]", "transpose %x {perm = [1, 0]}");
  check("%x: bf16[2,2,333,7]", "transpose %x {perm = [0, 2, 3, 1]}");
  check("%x: f32[1,5003]", "transpose %x {perm = [1, 0]}");
  auto fused = parseOrFail(R"(func @main(%x: f32[3,4001], %b: f32[3]) -> f32[4001,3] {
  %t = transpose %x {perm = [1, 0]}
  %y = mul %t, %b
  return %y
}
)");
  ASSERT_TRUE(fused);
  expectSameAsInterpreter(*fused->entry());
}

// Transposes that move an input's innermost axis of 2-4 elements out, whose output's innermost
// axis is the input's next one, loop in the input's order (codegen/kernel_emitter.h,
// movedShortAxisOf): [N,3] -> [3,N], an image's channels moved first or to axis 1, every number
// type; rows longer than a block of columns (4099 * 2 has no divisor in [256, 4096]: one block
// per row) and chunks of work that start and end mid-unit; elementwise work fused in.
TEST(CpuOps, TransposesOfAShortInnermostAxisGoInTheInputsOrder) {
  std::vector<std::optional<codegen::MovedAxis>> moved;
  for (const char* text : {"func @main(%x: f32[1001,3]) -> f32[3,1001] {\n  %t = transpose %x {perm = [1, 0]}\n  return %t\n}\n",
                           "func @main(%x: f32[2,9,11,4]) -> f32[2,4,9,11] {\n  %t = transpose %x {perm = [0, 3, 1, 2]}\n  return %t\n}\n",
                           "func @main(%x: f32[1001,6]) -> f32[6,1001] {\n  %t = transpose %x {perm = [1, 0]}\n  return %t\n}\n",
                           "func @main(%x: f32[9,11,3]) -> f32[3,11,9] {\n  %t = transpose %x {perm = [2, 1, 0]}\n  return %t\n}\n"}) {
    auto m = parseOrFail(text);
    ASSERT_TRUE(m);
    auto plan = codegen::planFunction(*m->entry());
    const codegen::KernelGroup& group = *plan->allGroups().at(0);
    moved.push_back(codegen::movedShortAxisOf(group, group.segments.at(0)));
  }
  ASSERT_TRUE(moved[0] && moved[1]);
  EXPECT_EQ(moved[0]->extent, 3);
  EXPECT_EQ(moved[0]->stride, 1001);
  EXPECT_EQ(moved[1]->extent, 4);
  EXPECT_EQ(moved[1]->stride, 99);
  EXPECT_FALSE(moved[2]) << "6 elements: bands of rows";
  EXPECT_FALSE(moved[3]) << "the output's rows come from the input's outermost axis";
  for (const char* t : kAllTypes) {
    std::string T = t;
    check("%x: " + T + "[1001,3]", "transpose %x {perm = [1, 0]}");
    check("%x: " + T + "[5,37,41,3]", "transpose %x {perm = [0, 3, 1, 2]}");
  }
  check("%x: f32[64,64,2]", "transpose %x {perm = [2, 0, 1]}");
  check("%x: f16[3,8198,4]", "transpose %x {perm = [0, 2, 1]}");
  check("%x: f32[135168,3]", "transpose %x {perm = [1, 0]}");  // units of 3 x 4096 columns
  check("%x: f32[131071,3]", "transpose %x {perm = [1, 0]}");  // a prime: one block per row
  check("%x: f64[2,4,9000,3]", "transpose %x {perm = [3, 0, 1, 2]}");
  checkWithSpecials(R"(func @main(%x: f32[96,101,3], %m: f32[3,1,1]) -> f32[3,96,101] {
  %t = transpose %x {perm = [2, 0, 1]}
  %s = sub %t, %m
  %y = relu %s
  return %y
}
)");
}

// A row through a pad or a concat along the innermost axis loops over each run of columns
// between their edges on its own (codegen/kernel_emitter.h, columnBreaksOf): fill on both sides,
// a crop on one side with fill on the other, fill wider than the row's input, concats of two and
// three inputs (one a single column), every numeric dtype; rows that threads' chunks split in the
// middle ([999,990] padded to 1001 columns on two threads); elementwise work fused after.
TEST(CpuOps, PadsAndConcatsInRunsOfColumns) {
  for (const char* t : kNumTypes) {
    std::string T = t;
    check("%x: " + T + "[300,37]", "pad %x {pads = [0, 2, 0, 3], value = 1}");
    check("%x: " + T + "[300,37]", "pad %x {pads = [1, -2, 0, 5]}");
    check("%x: " + T + "[30,3]", "pad %x {pads = [0, 9, 0, 12]}");
    check("%a: " + T + "[300,17], %b: " + T + "[300,40]", "concat %a, %b {axis = -1}");
    check("%a: " + T + "[300,17], %b: " + T + "[300,40], %c: " + T + "[300,1]", "concat %a, %b, %c {axis = 1}");
  }
  check("%x: f32[999,990]", "pad %x {pads = [0, 5, 0, 6]}");
  checkWithSpecials(R"(func @main(%x: f32[64,100], %y: f32[64,28], %b: f32[134]) -> f32[64,134] {
  %p = pad %x {pads = [0, 3, 0, 3], value = -1.0}
  %c = concat %y, %p {axis = 1}
  %s = add %c, %b
  %r = relu %s
  return %r
}
)");
  // An op of no operands at the row's shape beside the pad (iota, copied into the kernel).
  checkWithSpecials(R"(func @main(%x: f32[64,100]) -> f32[64,106] {
  %p = pad %x {pads = [0, 3, 0, 3]}
  %i = iota {axis = 1} : f32[64,106]
  %y = add %p, %i
  return %y
}
)");
}

// The rows `text`'s fused loop kernel runs in on the CPU (codegen::loopRowLength), one per segment.
std::vector<int64_t> loopRowsOf(const std::string& text) {
  auto m = parseOrFail(text);
  std::vector<int64_t> rows;
  if (!m) return rows;
  Status fused = passes::runPasses(*m, {"fusion"});
  EXPECT_TRUE(fused.ok()) << fused.error().str();
  auto plan = codegen::planFunction(*m->entry());
  for (const codegen::KernelGroup* group : plan->allGroups())
    for (const codegen::Segment& segment : group->segments) rows.push_back(codegen::loopRowLength(*group, segment));
  return rows;
}

// x (f32[2,3,5,7]) and `y` (of type `yType`) through `body`, which ends in %z: f32[2,3,5,7].
std::string pointwise(const std::string& yType, const std::string& body) {
  return "func @main(%x: f32[2,3,5,7], %y: " + yType + ") -> f32[2,3,5,7] {\n" + body + "\n  return %z\n}\n";
}

TEST(CpuOps, PointwiseLoopsRunInRowsOfTheirTrailingDims) {
  // As many trailing dims as every value spans, or is broadcast along, together.
  const std::string addRelu = "  %a = add %x, %y\n  %z = relu %a";
  EXPECT_EQ(loopRowsOf(pointwise("f32[2,3,5,7]", addRelu)), std::vector<int64_t>{210});
  EXPECT_EQ(loopRowsOf(pointwise("f32[1,3,1,1]", addRelu)), std::vector<int64_t>{35});  // a bias per channel
  EXPECT_EQ(loopRowsOf(pointwise("f32[3,5,7]", addRelu)), std::vector<int64_t>{105});
  EXPECT_EQ(loopRowsOf(pointwise("f32[7]", addRelu)), std::vector<int64_t>{7});
  EXPECT_EQ(loopRowsOf(pointwise("f32[5,1]", addRelu)), std::vector<int64_t>{7});      // spans dim 2 only
  EXPECT_EQ(loopRowsOf(pointwise("f32[]", addRelu)), std::vector<int64_t>{210});
  const std::string viaBroadcast = "  %b = broadcast_to %y {shape = [2, 3, 5, 7]}\n  %z = mul %x, %b";
  EXPECT_EQ(loopRowsOf(pointwise("f32[3,1,1]", viaBroadcast)), std::vector<int64_t>{35});
  // An iota, or anything but elementwise ops, keeps the innermost dim.
  EXPECT_EQ(loopRowsOf(pointwise("f32[2,3,5,7]", "  %i = iota {axis = 2} : f32[2,3,5,7]\n  %a = add %x, %i\n  %z = add %a, %y")),
            std::vector<int64_t>{7});
  EXPECT_EQ(loopRowsOf("func @main(%x: f32[2,3,7,5]) -> f32[2,3,5,7] {\n  %t = transpose %x {perm = [0, 1, 3, 2]}\n"
                       "  %z = relu %t\n  return %z\n}\n"),
            std::vector<int64_t>{7});
  // Each computes what the interpreter does, whatever its rows, for every number type, NaN and
  // infinities among the floats'; in rows longer than a chunk of work too.
  for (const char* t : kNumTypes) {
    std::string T = t;
    for (const char* y : {"[2,3,5,7]", "[1,3,1,1]", "[3,5,7]", "[5,1]", "[]"})
      check("%x: " + T + "[2,3,5,7], %y: " + T + y, "add %x, %y");
  }
  checkWithSpecials(pointwise("f32[1,3,1,1]", addRelu));
  checkWithSpecials(pointwise("f32[3,1,1]", viaBroadcast));
  checkWithSpecials("func @main(%x: f32[16,48,56,56], %y: f32[1,48,1,1]) -> f32[16,48,56,56] {\n"
                    "  %a = mul %x, %y\n  %s = relu %a\n  %z = add %s, %x\n  return %z\n}\n");
}

TEST(CpuOps, LayoutOps) {
  for (const char* t : kAllTypes) {
    std::string T = t;
    check("%x: " + T + "[2,3,4]", "reshape %x {shape = [4, -1]}");
    // Runs of dims map to runs (emit_layout.cpp): merged, split, size-1 dims on either side, and
    // a run that neither splits nor merges cleanly ([6,4] <- [4,6]).
    check("%x: " + T + "[2,1,3,4,1]", "reshape %x {shape = [2, 12, 1, 1]}");
    check("%x: " + T + "[1,6,4]", "reshape %x {shape = [2, 3, 1, 2, 2]}");
    check("%x: " + T + "[4,6,5]", "reshape %x {shape = [6, 4, 5]}");
    check("%x: " + T + "[2,3,4]", "transpose %x {perm = [2, 0, 1]}");
    check("%x: " + T + "[3,1]", "broadcast_to %x {shape = [2, 3, 5]}");
    check("%a: " + T + "[2,3], %b: " + T + "[2,1], %c: " + T + "[2,4]", "concat %a, %b, %c {axis = 1}");
    check("%x: " + T + "[6,7]", "slice %x {starts = [1, -5], ends = [100, 6], steps = [2, 1]}");
    check("%x: " + T + "[6,7]", "slice %x {starts = [5], ends = [-100], axes = [1], steps = [-2]}");
  }
  for (const char* t : kNumTypes) {
    std::string T = t;
    check("%x: " + T + "[3,4]", "pad %x {pads = [1, 2, 0, 3], value = 1}");
    check("%x: " + T + "[3,4]", "pad %x {pads = [-1, 0, 1, -2]}");
    check("%x: " + T + "[5,3]", "all_reduce %x");
  }
}

TEST(CpuOps, Gather) {
  for (const char* idx : {"i8", "i32", "i64"}) {
    std::string I = idx;
    check("%x: f32[5,3], %i: " + I + "[2,4]", "gather %x, %i", {{}, 1, false, 5});
    check("%x: i64[5,3], %i: " + I + "[7]", "gather %x, %i {axis = 1}", {{}, 1, false, 3});
    check("%x: bf16[4], %i: " + I + "[]", "gather %x, %i", {{}, 1, false, 4});
  }
  // Negative indices wrap: a constant index tensor covers them.
  auto m = parseOrFail(
      "func @main(%x: f32[5,2]) -> f32[3,2] {\n  %i = constant [-1, -5, 4] : i32[3]\n  %y = gather %x, %i\n"
      "  return %y\n}\n");
  expectSameAsInterpreter(*m->entry());
}

TEST(CpuOps, ConvolutionAndPooling) {
  for (const char* t : kFloatTypes) {
    std::string T = t;
    check("%x: " + T + "[2,3,9,8], %w: " + T + "[4,3,3,3]", "conv2d %x, %w", {accumulateTolerance()});
    check("%x: " + T + "[1,4,9,9], %w: " + T + "[6,2,3,2]",
          "conv2d %x, %w {strides = [2, 1], pads = [1, 0, 2, 1], dilations = [1, 2], groups = 2}", {accumulateTolerance()});
  }
  for (const char* t : kFloatTypes) {
    std::string T = t;
    for (const char* op : {"max_pool2d", "avg_pool2d"}) {
      check("%x: " + T + "[2,3,8,8]", std::string(op) + " %x {kernel = [2, 2]}", {accumulateTolerance(), 1, true});
      check("%x: " + T + "[1,2,7,9]", std::string(op) + " %x {kernel = [3, 2], strides = [2, 3], pads = [1, 1, 2, 0]}",
            {accumulateTolerance()});
      // Unpadded windows that leave rows and columns over: read without bounds tests.
      check("%x: " + T + "[1,2,7,9]", std::string(op) + " %x {kernel = [3, 2], strides = [2, 3]}",
            {accumulateTolerance(), 1, true});
      // Small windows go as straight-line code where the columns run at stride 1 (or channels-last),
      // rows long enough to vectorise; a 4x4 window is still unrolled, a 5x4 one loops.
      for (const char* window : {"kernel = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1]",
                                 "kernel = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]",
                                 "kernel = [5, 4], strides = [1, 1], pads = [2, 1, 2, 2]",
                                 "kernel = [4, 4], strides = [1, 1], pads = [0, 3, 1, 0]"}) {
        check("%x: " + T + "[2,3,9,40]", std::string(op) + " %x {" + window + "}", {accumulateTolerance(), 1, true});
        check("%x: " + T + "[2,9,40,3]", std::string(op) + " %x {" + window + ", layout = \"nhwc\"}",
              {accumulateTolerance(), 1, true});
      }
    }
    check("%x: " + T + "[2,3,4,4], %s: " + T + "[3], %b: " + T + "[3], %m: " + T + "[3], %v: " + T + "[3]",
          "batch_norm %x, %s, %b, %m, %v", {accumulateTolerance()});
  }
}

// The pools' gradients: windows that cannot overlap (a 2x2 pool of stride 2; stride 3 leaves gaps,
// with and without padding) find their one window by division, overlapping ones (3x3 of stride 2, padded; one
// axis of each kind) try every kernel offset. Ties and NaN go to the window's first maximum.
TEST(CpuOps, PoolGradients) {
  struct Pool {
    const char* shapes;  // x, dy
    const char* attrs;
  };
  const Pool pools[] = {
      {"[2,3,8,8], %dy: T[2,3,4,4]", "kernel = [2, 2], strides = [2, 2]"},
      {"[1,2,8,7], %dy: T[1,2,3,3]", "kernel = [2, 2], strides = [3, 3], pads = [1, 0, 0, 1]"},
      {"[1,2,9,9], %dy: T[1,2,5,5]", "kernel = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]"},
      // Overlapping windows inside x (scanned straight through) and reaching into the padding.
      {"[1,2,10,10], %dy: T[1,2,10,10]", "kernel = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1]"},
      {"[1,2,11,11], %dy: T[1,2,5,5]", "kernel = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], dilations = [2, 2]"},
      {"[1,2,8,9], %dy: T[1,2,4,4]", "kernel = [2, 3], strides = [2, 2]"},
      // Disjoint, unpadded windows (max reads them unconditionally), with rows and columns no
      // window covers: past the last window (odd sizes) and in the gaps of stride 3.
      {"[1,2,9,9], %dy: T[1,2,4,4]", "kernel = [2, 2], strides = [2, 2]"},
      {"[1,2,8,8], %dy: T[1,2,3,3]", "kernel = [2, 2], strides = [3, 3]"},
      // A window's columns per item (windowColumnsOf): rows long enough for the vector loop and
      // its scalar rest, a row no window covers, and columns of stride 3 with a gap in each.
      {"[2,3,4,40], %dy: T[2,3,2,20]", "kernel = [2, 2], strides = [2, 2]"},
      {"[1,2,9,36], %dy: T[1,2,4,18]", "kernel = [2, 2], strides = [2, 2]"},
      {"[1,2,6,39], %dy: T[1,2,2,13]", "kernel = [2, 2], strides = [3, 3]"},
  };
  // Each also channels-last (a training step's after the channels-last pass): x and dy [N,H,W,C].
  const std::regex nchw(R"(\[(\d+),(\d+),(\d+),(\d+)\])");
  for (const char* t : {"f32", "bf16"})
    for (const Pool& p : pools)
      for (bool channelsLast : {false, true}) {
        std::string params = std::string("%x: T") + p.shapes;
        for (size_t at; (at = params.find('T')) != std::string::npos;) params.replace(at, 1, t);
        std::string attrs = p.attrs;
        if (channelsLast) {
          params = std::regex_replace(params, nchw, "[$1,$3,$4,$2]");
          attrs += ", layout = \"nhwc\"";
        }
        check(params, "max_pool2d_backward %x, %dy {" + attrs + "}", {accumulateTolerance(), 1, true});
        std::string dy = params.substr(params.find("%dy"));
        std::string input = params.substr(params.find('['), params.find(']') - params.find('[') + 1);
        check(dy, "avg_pool2d_backward %dy {" + attrs + ", input_shape = " + input + "}", {accumulateTolerance()});
      }
}

TEST(CpuOps, SoftmaxCrossEntropy) {
  for (const char* t : kFloatTypes)
    for (const char* l : {"i32", "i64"})
      check(std::string("%x: ") + t + "[8,5], %l: " + l + "[8]", "softmax_cross_entropy %x, %l", {accumulateTolerance()});
}

}  // namespace
}  // namespace kiln::test
