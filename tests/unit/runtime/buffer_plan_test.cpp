// BufferPlan: on every example (default pipeline and no passes), no two values live at the same
// time share a byte, with live ranges recomputed here from the IR's use lists rather than taken
// from the plan; offsets are aligned; results and parameters stay out of the arena; reuse makes
// the arena smaller than one buffer per value where the graph allows it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/kernel_plan.h"
#include "codegen/library_call.h"
#include "codegen/optimize.h"
#include "frontend/parser.h"
#include "example_files.h"
#include "runtime/buffer_plan.h"
#include "kiln_internal.h"
#include "tensor_compare.h"

namespace kiln {
namespace {

size_t alignUp(size_t n, size_t a) { return (n + a - 1) / a * a; }

// The result of the block's op number `index`.
const Value* resultOf(const Block& block, size_t index) {
  return std::next(block.ops().begin(), static_cast<std::ptrdiff_t>(index))->get()->result(0);
}

std::unique_ptr<Module> parse(const std::string& source) {
  auto m = parseModule(source, "buffers.kiln");
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().str());
  return m.ok() ? std::move(*m) : nullptr;
}

// The op of `plan.block` that `step` runs: the region op, the fusion op, or the lone op.
const Op* opOf(const codegen::BlockPlan& plan, const codegen::Step& step) {
  if (step.kind == codegen::Step::Kind::Region) return step.region.op;
  const codegen::KernelGroup& group = plan.groups[static_cast<size_t>(step.group)];
  return group.fusion ? group.fusion : group.ops[0];
}

// The step of `plan` that runs `op` (an op of plan.block or nested in one of its ops); the
// block's terminator is steps.size(): the host reads the yielded values after the last step.
int stepOf(const codegen::BlockPlan& plan, const Op* op) {
  while (op->parentBlock() != plan.block) op = op->parentBlock()->parentOp();
  if (op == plan.block->terminator()) return static_cast<int>(plan.steps.size());
  for (size_t i = 0; i < plan.steps.size(); ++i)
    if (opOf(plan, plan.steps[i]) == op) return static_cast<int>(i);
  ADD_FAILURE() << "op " << op->name() << " is in no step";
  return -1;
}

// Checks one block's arena: every slot aligned and inside it, its live range covering the uses
// the IR has, and no two slots live at once overlapping. Recurses into region arenas.
void checkBlock(const BlockBufferPlan& block, size_t alignment, const std::string& where) {
  SCOPED_TRACE(where);
  EXPECT_EQ(block.arenaBytes % alignment, 0u);
  const int end = static_cast<int>(block.plan->steps.size());
  size_t region = 0;
  for (const BufferSlot& slot : block.slots) {
    EXPECT_EQ(slot.offset % alignment, 0u);
    EXPECT_LE(slot.offset + slot.bytes, block.arenaBytes);
    if (!slot.value) {
      ASSERT_LT(region, block.regions.size());
      EXPECT_EQ(block.regions[region]->plan, slot.region);
      EXPECT_EQ(block.regions[region]->arenaBytes, slot.bytes);
      checkBlock(*block.regions[region], alignment, where + "/region " + std::to_string(region));
      ++region;
      continue;
    }
    const Value* v = slot.value;
    std::string name = "%" + v->name();
    int def = v->isBlockArgument() ? 0 : stepOf(*block.plan, v->definingOp());
    EXPECT_LE(slot.firstStep, def) << name;
    if (v->isBlockArgument()) {
      EXPECT_EQ(slot.lastStep, end) << name << ": a while body argument lives to the end";
    }
    for (const Use& use : v->uses()) EXPECT_GE(slot.lastStep, stepOf(*block.plan, use.user)) << name;
  }
  EXPECT_EQ(region, block.regions.size());
  // A slot that takes over another's bytes (a library kernel's output written over its dying
  // residual) shares them with that slot's whole chain, and its value starts where the one before
  // it in the chain is last read.
  auto root = [&](size_t i) {
    while (block.slots[i].sameBytesAs >= 0) i = static_cast<size_t>(block.slots[i].sameBytesAs);
    return i;
  };
  for (size_t i = 0; i < block.slots.size(); ++i) {
    const BufferSlot& slot = block.slots[i];
    if (slot.sameBytesAs < 0) continue;
    const BufferSlot& chain = block.slots[root(i)];
    EXPECT_EQ(slot.offset, chain.offset);
    EXPECT_LE(slot.lastStep, chain.lastStep);
    EXPECT_EQ(slot.bytes, chain.bytes);
  }
  for (size_t i = 0; i < block.slots.size(); ++i) {
    for (size_t j = i + 1; j < block.slots.size(); ++j) {
      const BufferSlot &a = block.slots[i], &b = block.slots[j];
      if (!a.liveTogetherWith(b) || a.bytes == 0 || b.bytes == 0 || root(i) == root(j)) continue;
      bool disjoint = a.offset + alignUp(a.bytes, alignment) <= b.offset || b.offset + alignUp(b.bytes, alignment) <= a.offset;
      EXPECT_TRUE(disjoint) << "slots " << i << " and " << j << " are live together and overlap";
    }
  }
}

// Absolute byte ranges: a kernel's outputs never share a byte with its own inputs, but for a
// library kernel's residual (codegen::inPlaceResidual), which its output may take over.
void checkKernelsNeverWriteTheirInputs(const BufferPlan& plan, const codegen::BlockPlan& blockPlan) {
  for (const codegen::KernelGroup* group : blockPlan.allGroups()) {
    for (const Value* out : group->results) {
      if (!plan.has(out)) continue;
      for (const Value* in : group->inputs) {
        if (!plan.has(in) || out->type().byteSize() == 0 || in->type().byteSize() == 0) continue;
        if (in == codegen::inPlaceResidual(*group) && plan.offset(in) == plan.offset(out)) continue;
        bool disjoint = plan.offset(out) + out->type().byteSize() <= plan.offset(in) ||
                        plan.offset(in) + in->type().byteSize() <= plan.offset(out);
        EXPECT_TRUE(disjoint) << group->name << " writes %" << out->name() << " over its input %" << in->name();
      }
    }
  }
}

void checkPlan(const Function& f, const codegen::BlockPlan& blockPlan, const BufferPlan& plan, const std::string& where) {
  checkBlock(plan.root(), plan.alignment(), where);
  checkKernelsNeverWriteTheirInputs(plan, blockPlan);
  EXPECT_LE(plan.arenaBytes(), plan.unsharedBytes()) << where;
  for (const Value* p : f.params()) EXPECT_FALSE(plan.has(p)) << where << ": parameter %" << p->name();
  for (const Value* r : f.body().terminator()->operands()) {
    EXPECT_FALSE(plan.has(r)) << where << ": result %" << r->name() << " is in the arena";
    if (!r->isBlockArgument()) {
      EXPECT_NE(std::find(plan.resultValues().begin(), plan.resultValues().end(), r), plan.resultValues().end());
    }
  }
}

class BufferPlanExamples : public ::testing::TestWithParam<std::string> {};

TEST_P(BufferPlanExamples, NoTwoLiveValuesShareBytes) {
  auto module = parseFile(GetParam());
  ASSERT_TRUE(module.ok()) << module.error().str();
  for (bool passes : {true, false}) {
    codegen::CompileOptions options;
    if (!passes) options.disabledPasses = {"all"};
    auto optimized = codegen::optimizeFunction(*(*module)->entry(), options);
    ASSERT_TRUE(optimized.ok()) << optimized.error().str();
    auto blockPlan = codegen::planFunction(*optimized->function);
    for (size_t alignment : {size_t{256}, size_t{64}, size_t{4096}}) {
      BufferPlan plan = BufferPlan::build(*optimized->function, *blockPlan, alignment);
      EXPECT_EQ(plan.alignment(), alignment);
      checkPlan(*optimized->function, *blockPlan, plan,
                std::string(passes ? "default pipeline" : "no passes") + ", alignment " + std::to_string(alignment));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, BufferPlanExamples, ::testing::ValuesIn(exampleFiles()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return std::filesystem::path(info.param).stem().string();
                         });

// The figures docs/runtime.md quotes (printed, not asserted: they follow the passes).
TEST(BufferPlanFigures, ArenaVersusOneBufferPerValue) {
  std::printf("| graph | pipeline | values | one buffer each | arena | saved |\n|---|---|---:|---:|---:|---:|\n");
  for (const std::string& file : exampleFiles()) {
    auto module = parseFile(file);
    ASSERT_TRUE(module.ok()) << module.error().str();
    for (bool passes : {true, false}) {
      codegen::CompileOptions options;
      if (!passes) options.disabledPasses = {"all"};
      auto optimized = codegen::optimizeFunction(*(*module)->entry(), options);
      ASSERT_TRUE(optimized.ok()) << optimized.error().str();
      BufferPlan plan = BufferPlan::build(*optimized->function, *codegen::planFunction(*optimized->function));
      size_t sum = plan.unsharedBytes(), arena = plan.arenaBytes();
      std::printf("| %s | %s | %zu | %zu | %zu | %s |\n", std::filesystem::path(file).stem().c_str(),
                  passes ? "default" : "none", plan.offsets().size(), sum, arena,
                  sum ? (std::to_string((sum - arena) * 100 / sum) + "%").c_str() : "-");
    }
  }
}

// x -> a -> b -> c -> d, one kernel each: a and c can share (a is last read where b is made),
// b never shares with a or c (each kernel's input and output are live together).
TEST(BufferPlan, ChainReusesTheBuffersOfDeadValues) {
  auto m = parse(R"(
func @main(%x: f32[1000]) -> f32[1000] {
  %a = exp %x
  %b = exp %a
  %c = exp %b
  %d = exp %c
  return %d
})");
  const Function& f = *m->entry();
  auto blockPlan = codegen::planFunction(f);
  BufferPlan plan = BufferPlan::build(f, *blockPlan);
  checkPlan(f, *blockPlan, plan, "chain");
  // 4000 bytes rounded to 4096: three values, two buffers.
  EXPECT_EQ(plan.unsharedBytes(), 3u * 4096);
  EXPECT_EQ(plan.arenaBytes(), 2u * 4096);
  auto value = [&](size_t op) { return resultOf(f.body(), op); };
  EXPECT_EQ(plan.offset(value(0)), plan.offset(value(2)));  // %a and %c
  EXPECT_NE(plan.offset(value(0)), plan.offset(value(1)));
  EXPECT_FALSE(plan.has(value(3)));  // %d is the result
  EXPECT_EQ(plan.resultValues(), (std::vector<const Value*>{value(3)}));
}

// Residual blocks, chained: each block's second matmul adds the block's input as a residual
// (codegen::inPlaceResidual), so its output takes the input's bytes where the input dies there:
// %y1 over %y0. Not %y0 over the parameter %x, nor anything over %y2, a result (its own buffer),
// nor %r over %y3, which its matmul reads too. The run computes what the interpreter computes.
TEST(BufferPlan, LibraryKernelsWriteOverADyingResidual) {
  auto m = parse(R"(
func @main(%x: f32[64,64], %w: f32[64,64], %b: f32[64]) -> (f32[64,64], f32[64,64]) {
  %t0 = matmul %x, %w
  %v0 = relu %t0
  %h0 = matmul %v0, %w
  %a0 = add %h0, %b
  %y0 = add %a0, %x
  %t1 = matmul %y0, %w
  %v1 = relu %t1
  %h1 = matmul %v1, %w
  %a1 = add %h1, %b
  %y1 = add %y0, %a1
  %t2 = matmul %y1, %w
  %v2 = relu %t2
  %h2 = matmul %v2, %w
  %y2 = add %h2, %y1
  %t3 = matmul %y2, %w
  %v3 = relu %t3
  %h3 = matmul %v3, %w
  %y3 = add %h3, %y2
  %h4 = matmul %y3, %w
  %z = add %h4, %y3
  %r = relu %z
  %q = matmul %r, %w
  return %q, %y2
})");
  const Function& f = *m->entry();
  auto optimized = codegen::optimizeFunction(f, {});
  ASSERT_TRUE(optimized.ok()) << optimized.error().str();
  const Function& fused = *optimized->function;
  auto blockPlan = codegen::planFunction(fused);
  ASSERT_EQ(blockPlan->groups.size(), 10u) << "ten matmuls, each with its epilogue";
  BufferPlan plan = BufferPlan::build(fused, *blockPlan);
  checkPlan(fused, *blockPlan, plan, "residual chain");
  auto value = [&](const std::string& name) -> const Value* {
    for (const auto& op : fused.body().ops())
      if (op->numResults() == 1 && op->result()->name() == name) return op->result();
    ADD_FAILURE() << "no %" << name;
    return nullptr;
  };
  EXPECT_EQ(plan.offset(value("y1")), plan.offset(value("y0")));
  EXPECT_FALSE(plan.has(value("y2"))) << "a result: its own buffer";
  EXPECT_NE(plan.offset(value("r")), plan.offset(value("y3"))) << "its matmul reads %y3 too";
  auto exe = Executable::compile(f, {});
  ASSERT_TRUE(exe.ok()) << exe.error().str();
  std::vector<Tensor> inputs = randomInputs(f, 7);
  auto want = interpret(f, inputs);
  ASSERT_TRUE(want.ok()) << want.error().str();
  for (int run = 0; run < 2; ++run) {
    auto got = (*exe)->run(inputs);
    ASSERT_TRUE(got.ok()) << got.error().str();
    for (size_t k = 0; k < 2; ++k) EXPECT_EQ(compare((*want)[k], (*got)[k]), "") << "result " << k << ", run " << run;
  }
}

TEST(BufferPlan, OffsetsAndArenaFollowTheAlignment) {
  auto m = parse(R"(
func @main(%x: f32[3]) -> f32[] {
  %a = exp %x
  %b = neg %x
  %c = add %a, %b
  %s = reduce_sum %c {axes = [0]}
  return %s
})");
  const Function& f = *m->entry();
  auto blockPlan = codegen::planFunction(f);
  for (size_t alignment : {size_t{16}, size_t{256}, size_t{1024}}) {
    BufferPlan plan = BufferPlan::build(f, *blockPlan, alignment);
    checkPlan(f, *blockPlan, plan, "alignment " + std::to_string(alignment));
    // %a, %b and %c are live together at %c: three 12-byte values, each in its own aligned slot.
    EXPECT_EQ(plan.arenaBytes(), 3 * alignment);
    for (const auto& [v, offset] : plan.offsets()) EXPECT_EQ(offset % alignment, 0u) << "%" << v->name();
  }
}

TEST(BufferPlan, ResultsAndParametersHaveNoSlot) {
  auto m = parse(R"(
func @main(%x: f32[64]) -> (f32[64], f32[64], f32[64], f32[64]) {
  %a = exp %x
  %b = neg %a
  %c = abs %b
  return %a, %c, %a, %x
})");
  const Function& f = *m->entry();
  auto blockPlan = codegen::planFunction(f);
  BufferPlan plan = BufferPlan::build(f, *blockPlan);
  checkPlan(f, *blockPlan, plan, "results");
  // Each result once, in return order; the returned parameter is not one.
  EXPECT_EQ(plan.resultValues(), (std::vector<const Value*>{resultOf(f.body(), 0), resultOf(f.body(), 2)}));
  EXPECT_EQ(plan.offsets().size(), 1u);  // only %b
  EXPECT_EQ(plan.arenaBytes(), 256u);
}

// The map body's values live in the map's region arena, inside the one arena; cond and map
// arguments have no slots, nor the while body's, which reads the carried values in place.
TEST(BufferPlan, RegionValuesLiveInTheirRegionsArena) {
  auto module = parseFile(std::string(KILN_SOURCE_DIR) + "/examples/while_sqrt.kiln");
  ASSERT_TRUE(module.ok()) << module.error().str();
  const Function& f = *(*module)->entry();
  auto blockPlan = codegen::planFunction(f);
  BufferPlan plan = BufferPlan::build(f, *blockPlan);
  checkPlan(f, *blockPlan, plan, "while_sqrt");
  const BlockBufferPlan& root = plan.root();
  ASSERT_EQ(root.regions.size(), 1u);  // the map's body
  const BlockBufferPlan& mapBody = *root.regions[0];
  ASSERT_EQ(mapBody.regions.size(), 2u);  // the while's cond and body
  const Op& map = *f.body().ops().front();
  EXPECT_FALSE(plan.has(map.region(0)->argument(0)));
  const Op* loop = nullptr;
  for (const auto& op : map.region(0)->ops())
    if (op->kind() == OpKind::While) loop = op.get();
  ASSERT_TRUE(loop);
  EXPECT_FALSE(plan.has(loop->region(0)->argument(0)));
  EXPECT_TRUE(whileBodyReadsCarriedInPlace(*loop));
  EXPECT_FALSE(plan.has(loop->region(1)->argument(0)));
  EXPECT_FALSE(plan.has(loop->region(1)->argument(1)));
  // Every value of the map body lies inside the map's region slot.
  const BufferSlot* slot = nullptr;
  for (const BufferSlot& s : root.slots)
    if (!s.value) slot = &s;
  ASSERT_TRUE(slot);
  for (const BufferSlot& s : mapBody.slots) {
    if (!s.value) continue;
    EXPECT_GE(plan.offset(s.value), slot->offset);
    EXPECT_LE(plan.offset(s.value) + s.bytes, slot->offset + slot->bytes);
  }
}

}  // namespace
}  // namespace kiln
