// planFunction: one kernel group per op, names unique across nested regions, inputs as the
// operands defined outside the group (outer-scope values included), nested region plans.
#include <gtest/gtest.h>

#include "codegen/kernel_plan.h"
#include "frontend/parser.h"

namespace kiln::codegen {
namespace {

std::unique_ptr<Module> parse(const std::string& source) {
  auto m = parseModule(source, "plan.kiln");
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().str());
  return m.ok() ? std::move(*m) : nullptr;
}

std::vector<std::string> names(const std::vector<const Value*>& values) {
  std::vector<std::string> out;
  for (const Value* v : values) out.push_back(v->name());
  return out;
}

TEST(KernelPlan, OneKernelPerOpInProgramOrder) {
  auto m = parse(R"(
func @main(%x: f32[4,3], %b: f32[3]) -> f32[4,3] {
  %h = add %x, %b
  %s = mul %h, %h
  %c = constant 2.0 : f32[]
  %r = mul %s, %c
  return %r
})");
  auto plan = planFunction(*m->entry());
  ASSERT_EQ(plan->groups.size(), 4u);
  ASSERT_EQ(plan->steps.size(), 4u);
  EXPECT_EQ(plan->block, &m->entry()->body());
  std::vector<std::string> expected = {"k0_add", "k1_mul", "k2_constant", "k3_mul"};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(plan->steps[i].kind, Step::Kind::Kernel);
    EXPECT_EQ(plan->steps[i].group, static_cast<int>(i));
    EXPECT_EQ(plan->groups[i].name, expected[i]);
    EXPECT_EQ(plan->groups[i].ops.size(), 1u);
  }
  EXPECT_EQ(names(plan->groups[0].inputs), (std::vector<std::string>{"x", "b"}));
  EXPECT_EQ(names(plan->groups[0].outputs), (std::vector<std::string>{"h"}));
  EXPECT_EQ(names(plan->groups[1].inputs), (std::vector<std::string>{"h"}));  // deduplicated
  EXPECT_TRUE(plan->groups[2].inputs.empty());
  EXPECT_EQ(names(plan->groups[3].inputs), (std::vector<std::string>{"s", "c"}));
  EXPECT_EQ(plan->groups[3].numOutputElements(), 12);
  EXPECT_EQ(plan->allGroups().size(), 4u);
}

TEST(KernelPlan, RegionsGetNestedPlansAndNamesStayUnique) {
  auto m = parse(R"(
func @main(%xs: f32[8,16], %k: f32[]) -> (f32[8,16], f32[]) {
  %e = exp %k
  %ys = map %xs (%x: f32[16]) {
    %a = abs %x
    %zero = constant 0 : i32[]
    %n, %r = while %zero, %a (%i: i32[], %v: f32[16]) cond {
      %c = lt %i, %zero
      yield %c
    } body {
      %one = constant 1 : i32[]
      %i1 = add %i, %one
      %v1 = mul %v, %e
      yield %i1, %v1
    }
    yield %r
  }
  %t = neg %e
  return %ys, %t
})");
  auto plan = planFunction(*m->entry());
  ASSERT_EQ(plan->steps.size(), 3u);
  EXPECT_EQ(plan->steps[0].kind, Step::Kind::Kernel);
  ASSERT_EQ(plan->steps[1].kind, Step::Kind::Region);
  EXPECT_EQ(plan->steps[2].kind, Step::Kind::Kernel);
  ASSERT_EQ(plan->groups.size(), 2u);
  EXPECT_EQ(plan->groups[0].name, "k0_exp");

  const RegionStep& map = plan->steps[1].region;
  EXPECT_EQ(map.op->kind(), OpKind::Map);
  ASSERT_EQ(map.regions.size(), 1u);
  const BlockPlan& body = *map.regions[0];
  EXPECT_EQ(body.block, map.op->region(0));
  ASSERT_EQ(body.steps.size(), 3u);  // abs, constant, while
  EXPECT_EQ(body.groups[0].name, "k1_abs");
  EXPECT_EQ(names(body.groups[0].inputs), (std::vector<std::string>{"x"}));  // the region's parameter
  EXPECT_EQ(body.groups[1].name, "k2_constant");

  const RegionStep& loop = body.steps[2].region;
  EXPECT_EQ(loop.op->kind(), OpKind::While);
  ASSERT_EQ(loop.regions.size(), 2u);
  const BlockPlan& cond = *loop.regions[0];
  const BlockPlan& whileBody = *loop.regions[1];
  ASSERT_EQ(cond.groups.size(), 1u);
  EXPECT_EQ(cond.groups[0].name, "k3_lt");
  EXPECT_EQ(names(cond.groups[0].inputs), (std::vector<std::string>{"i", "zero"}));  // zero: outer scope
  ASSERT_EQ(whileBody.groups.size(), 3u);
  EXPECT_EQ(whileBody.groups[0].name, "k4_constant");
  EXPECT_EQ(whileBody.groups[1].name, "k5_add");
  EXPECT_EQ(whileBody.groups[2].name, "k6_mul");
  EXPECT_EQ(names(whileBody.groups[2].inputs), (std::vector<std::string>{"v", "e"}));  // e: two scopes out

  EXPECT_EQ(plan->groups[1].name, "k7_neg");

  // allGroups: depth first, which is also the numbering order.
  std::vector<std::string> all;
  for (const KernelGroup* g : plan->allGroups()) all.push_back(g->name);
  EXPECT_EQ(all, (std::vector<std::string>{"k0_exp", "k1_abs", "k2_constant", "k3_lt", "k4_constant", "k5_add",
                                           "k6_mul", "k7_neg"}));
}

TEST(KernelPlan, FunctionWithoutOps) {
  auto m = parse("func @main(%x: f32[2]) -> f32[2] {\n  return %x\n}\n");
  auto plan = planFunction(*m->entry());
  EXPECT_TRUE(plan->steps.empty());
  EXPECT_TRUE(plan->allGroups().empty());
}

// A map's body reads slice i of its operand at i x (slice bytes): f32[4,5] slices of 80 bytes stay
// 16-byte aligned, their f32[5] rows of 20 bytes only 4 (vector loads there would be misaligned:
// the GPU simulator found kernels that assumed 16).
TEST(KernelPlan, MapSlicesAreOnlyAsAlignedAsTheirSize) {
  auto m = parse(R"(
func @main(%xs: f32[3,4,5], %hs: f16[6,2]) -> (f32[3,4,5], f16[6,2]) {
  %ys = map %xs (%x: f32[4,5]) {
    %zs = map %x (%r: f32[5]) {
      %a = abs %r
      yield %a
    }
    yield %zs
  }
  %gs = map %hs (%h: f16[2]) {
    %n = neg %h
    yield %n
  }
  return %ys, %gs
}
)");
  ASSERT_TRUE(m);
  const Function& f = *m->entry();
  const Op* outer = f.params()[0]->uses()[0].user;
  const Value* x = outer->region(0)->argument(0);
  const Value* r = x->uses()[0].user->region(0)->argument(0);
  const Value* h = f.params()[1]->uses()[0].user->region(0)->argument(0);
  EXPECT_EQ(bufferAlignment(f.params()[0]), 16u);
  EXPECT_EQ(bufferAlignment(x), 16u);
  EXPECT_EQ(bufferAlignment(r), 4u);
  EXPECT_EQ(bufferAlignment(h), 4u);
}

}  // namespace
}  // namespace kiln::codegen
