// The CPU backend running from its buffer plan: results handed over in every shape they come in
// (returned twice, a returned parameter, a loop's or a map's result, an empty tensor), values
// sharing arena bytes, and concurrent runs each with their own arena.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <vector>

#include "kiln_internal.h"
#include "runtime/random_inputs.h"

namespace kiln {
namespace {

std::unique_ptr<Executable> compile(const Function& f) {
  codegen::CompileOptions options;
  options.disabledPasses = {"all"};  // one kernel per op: the most values for the plan to place
  auto exe = Executable::compile(f, options);
  EXPECT_TRUE(exe.ok()) << exe.error().str();
  return exe.ok() ? std::move(*exe) : nullptr;
}

// Kernels may round transcendental functions differently from the interpreter: a few ulps.
bool close(const Tensor& got, const Tensor& want) {
  if (got.type() != want.type()) return false;
  if (!isFloat(want.dtype())) return got == want;
  for (int64_t i = 0; i < want.numElements(); ++i)
    if (std::fabs(got.getDouble(i) - want.getDouble(i)) > 1e-5 * (1 + std::fabs(want.getDouble(i)))) return false;
  return true;
}

void expectSameAsInterpreter(const Function& f, const Executable& exe, uint64_t seed) {
  std::vector<Tensor> inputs = randomInputs(f, seed);
  auto want = interpret(f, inputs);
  ASSERT_TRUE(want.ok()) << want.error().str();
  auto got = exe.run(inputs);
  ASSERT_TRUE(got.ok()) << got.error().str();
  ASSERT_EQ(got->size(), want->size());
  for (size_t i = 0; i < want->size(); ++i) EXPECT_TRUE(close((*got)[i], (*want)[i])) << "result " << i;
}

TEST(ArenaRun, ResultsReturnedTwiceOrAsParametersAreCopies) {
  auto m = parseModule(R"(
func @main(%x: f32[64], %e: f32[0]) -> (f32[64], f32[64], f32[64], f32[64], f32[0], f32[0]) {
  %a = neg %x
  %b = abs %a
  %c = add %b, %x
  %z = neg %e
  return %a, %c, %a, %x, %z, %e
})", "results.kiln");
  ASSERT_TRUE(m.ok()) << m.error().str();
  auto exe = compile(*(*m)->entry());
  ASSERT_TRUE(exe);
  EXPECT_EQ(exe->bufferPlan().resultValues().size(), 3u);  // %a, %c, %z
  expectSameAsInterpreter(*(*m)->entry(), *exe, 1);
}

TEST(ArenaRun, LoopAndMapResultsAndTheirBodiesRunFromTheArena) {
  auto m = parseModule(R"(
func @main(%xs: f32[6,32], %s: f32[32]) -> (f32[6,32], f32[32], i32[]) {
  %t = exp %s
  %ys = map %xs (%x: f32[32]) {
    %a = mul %x, %t
    %b = sin %a
    %c = add %b, %a
    yield %c
  }
  %zero = constant 0 : i32[]
  %four = constant 4 : i32[]
  %n, %v = while %zero, %t (%i: i32[], %w: f32[32]) cond {
    %k = lt %i, %four
    yield %k
  } body {
    %one = constant 1 : i32[]
    %i1 = add %i, %one
    %w1 = sqrt %w
    %w2 = add %w1, %s
    yield %i1, %w2
  }
  return %ys, %v, %n
})", "regions.kiln");
  ASSERT_TRUE(m.ok()) << m.error().str();
  auto exe = compile(*(*m)->entry());
  ASSERT_TRUE(exe);
  EXPECT_EQ(exe->bufferPlan().root().regions.size(), 3u);  // map body, while cond and body
  for (uint64_t seed : {0, 1, 2}) expectSameAsInterpreter(*(*m)->entry(), *exe, seed);
}

// A body reads the carried values in place unless it yields an argument in another position:
// swapping two values, rotating three, yielding one in its own position and one twice.
TEST(ArenaRun, WhileBodiesReadTheCarriedValuesInPlaceOrFromCopies) {
  auto m = parseModule(R"(
func @swap(%a: f32[32], %b: f32[32]) -> (f32[32], f32[32], f32[32]) {
  %zero = constant 0 : i32[]
  %five = constant 5 : i32[]
  %n, %x, %y, %z = while %zero, %a, %b, %a (%i: i32[], %p: f32[32], %q: f32[32], %s: f32[32]) cond {
    %k = lt %i, %five
    yield %k
  } body {
    %one = constant 1 : i32[]
    %i1 = add %i, %one
    %s1 = add %s, %p
    yield %i1, %q, %p, %s1
  }
  return %x, %y, %z
}
func @kept(%a: f32[32], %b: f32[32]) -> (f32[32], f32[32], f32[32]) {
  %zero = constant 0 : i32[]
  %five = constant 5 : i32[]
  %n, %x, %y, %z = while %zero, %a, %b, %a (%i: i32[], %p: f32[32], %q: f32[32], %r: f32[32]) cond {
    %k = lt %i, %five
    yield %k
  } body {
    %one = constant 1 : i32[]
    %i1 = add %i, %one
    %p1 = add %p, %q
    yield %i1, %p1, %q, %p1
  }
  return %x, %y, %z
})", "while_in_place.kiln");
  ASSERT_TRUE(m.ok()) << m.error().str();
  for (const char* name : {"swap", "kept"}) {
    SCOPED_TRACE(name);
    const Function& f = *(*m)->lookup(name);
    auto exe = compile(f);
    ASSERT_TRUE(exe);
    const Op* loop = nullptr;
    for (const auto& op : exe->function().body().ops())
      if (op->kind() == OpKind::While) loop = op.get();
    ASSERT_TRUE(loop);
    EXPECT_EQ(whileBodyReadsCarriedInPlace(*loop), std::string(name) == "kept");
    // Copies have slots of their own in the body's arena; values read in place do not.
    EXPECT_EQ(exe->bufferPlan().has(loop->region(1)->argument(1)), std::string(name) == "swap");
    for (uint64_t seed : {0, 1}) expectSameAsInterpreter(f, *exe, seed);
  }
}

TEST(ArenaRun, ConcurrentRunsEachHaveTheirOwnArena) {
  auto m = parseModule(R"(
func @main(%x: f32[4096]) -> f32[4096] {
  %a = exp %x
  %b = neg %a
  %c = mul %b, %x
  %d = add %c, %a
  %e = tanh %d
  return %e
})", "concurrent.kiln");
  ASSERT_TRUE(m.ok()) << m.error().str();
  const Function& f = *(*m)->entry();
  auto exe = compile(f);
  ASSERT_TRUE(exe);
  EXPECT_LT(exe->bufferPlan().arenaBytes(), exe->bufferPlan().unsharedBytes());
  expectSameAsInterpreter(f, *exe, 0);
  // What one run alone gives, bit for bit, against what runs on four threads at once give.
  std::vector<std::vector<Tensor>> inputs, want;
  for (uint64_t seed = 0; seed < 4; ++seed) {
    inputs.push_back(randomInputs(f, seed));
    want.push_back(*exe->run(inputs.back()));
  }
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        auto got = exe->run(inputs[t]);
        if (!got.ok() || !((*got)[0] == want[t][0])) ++mismatches[t];
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

}  // namespace
}  // namespace kiln
