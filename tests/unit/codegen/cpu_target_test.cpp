// The host CPU target on its own: a hand-written element body through emitKernel, O3, the JIT
// and the thread pool; vectorisation of elementwise loops; libm math; assembly output.
#include <gtest/gtest.h>

#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/LLVMContext.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>

#include "codegen/cpu_jit.h"
#include "codegen/cpu_target.h"
#include "codegen/loop_hints.h"
#include "runtime/thread_pool.h"

namespace kiln::codegen {
namespace {

// Builds, optimises and JITs one kernel `out[i] = body(in[i])` over f32 buffers.
struct UnaryKernel {
  std::string optimizedIr;
  std::string assembly;
  std::unique_ptr<CpuJit> jit;
  CpuKernelFn fn = nullptr;
};

UnaryKernel buildUnary(const std::function<llvm::Value*(llvm::IRBuilder<>&, CpuTarget&, llvm::Value*)>& op) {
  UnaryKernel k;
  CompileOptions options;
  auto tm = createHostTargetMachine(options);
  EXPECT_TRUE(tm.ok());
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto module = std::make_unique<llvm::Module>("t", *ctx);
  configureModule(*module, **tm);
  CpuTarget target;
  target.emitKernel(*module, "k0_test", {16, 16}, 1000, 1, {},
                    [&](llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& buffers, llvm::Value*, llvm::Value* i,
                        llvm::Value*, llvm::Value*, int) {
                      llvm::Value* x = b.CreateLoad(b.getFloatTy(), b.CreateInBoundsGEP(b.getFloatTy(), buffers[0], i));
                      b.CreateStore(op(b, target, x), b.CreateInBoundsGEP(b.getFloatTy(), buffers[1], i));
                    });
  Status s = optimizeModule(*module, **tm);
  EXPECT_TRUE(s.ok()) << s.error().str();
  k.optimizedIr = printModule(*module);
  auto assembly = emitCpuAssembly(*module);
  EXPECT_TRUE(assembly.ok());
  if (assembly) k.assembly = *assembly;
  auto jit = CpuJit::create(options);
  EXPECT_TRUE(jit.ok()) << jit.error().str();
  k.jit = std::move(*jit);
  EXPECT_TRUE(k.jit->addModule(llvm::orc::ThreadSafeModule(std::move(module), std::move(ctx))).ok());
  auto fn = k.jit->lookup("k0_test");
  EXPECT_TRUE(fn.ok()) << fn.error().str();
  k.fn = *fn;
  return k;
}

TEST(CpuTarget, ElementwiseLoopIsVectorisedAndRunsOverRanges) {
  UnaryKernel k = buildUnary([](llvm::IRBuilder<>& b, CpuTarget&, llvm::Value* x) {
    return b.CreateFAdd(b.CreateFMul(x, x), llvm::ConstantFP::get(x->getType(), 1.0));
  });
  // noalias buffers let the loop vectorizer work: the optimised IR has vector arithmetic.
  EXPECT_NE(k.optimizedIr.find("fmul <"), std::string::npos) << k.optimizedIr;
  EXPECT_NE(k.assembly.find("k0_test"), std::string::npos);
  std::vector<float> in(1000), out(1000, -7.0f);
  for (int i = 0; i < 1000; ++i) in[i] = static_cast<float>(i) * 0.5f;
  void* buffers[] = {in.data(), out.data()};
  int32_t status = 0;
  k.fn(buffers, &status, 10, 999);  // a range, as one thread gets it
  EXPECT_EQ(status, 0);
  EXPECT_EQ(out[9], -7.0f);
  EXPECT_EQ(out[999], -7.0f);
  for (int i = 10; i < 999; ++i) ASSERT_EQ(out[i], in[i] * in[i] + 1.0f) << i;
  k.fn(buffers, &status, 5, 5);  // an empty range touches nothing
  EXPECT_EQ(out[5], -7.0f);
}

// Four vectors an iteration, or two, only where that leaves no more elements to the scalar
// remainder than one vector an iteration does, and only for loops of 16 vectors or more.
TEST(CpuTarget, InterleaveCountKeepsTheRemainder) {
  EXPECT_EQ(codegen::interleaveCount(1024, 8), 4);
  EXPECT_EQ(codegen::interleaveCount(1024 + 7, 8), 4);  // 7 left either way
  EXPECT_EQ(codegen::interleaveCount(144, 8), 2);       // 18 vectors: 4 would leave 16 elements
  EXPECT_EQ(codegen::interleaveCount(144, 16), 0);      // 9 vectors
  EXPECT_EQ(codegen::interleaveCount(197, 8), 4);       // 24 vectors and 5 elements
  EXPECT_EQ(codegen::interleaveCount(16 * 8, 8), 4);
  EXPECT_EQ(codegen::interleaveCount(15 * 8 + 7, 8), 0);  // under 16 whole vectors: LLVM's choice
  EXPECT_EQ(codegen::interleaveCount(96, 8), 0);
  EXPECT_EQ(codegen::interleaveCount(0, 8), 0);
  EXPECT_EQ(codegen::interleaveCount(64, 0), 0);
}

TEST(CpuTarget, MathMatchesLibm) {
  struct Case {
    MathFn fn;
    float (*ref)(float);
  };
  const Case cases[] = {{MathFn::Exp, std::exp},     {MathFn::Log, std::log},   {MathFn::Log1p, std::log1p},
                        {MathFn::Sqrt, std::sqrt},   {MathFn::Tanh, std::tanh}, {MathFn::Erf, std::erf},
                        {MathFn::Sin, std::sin},     {MathFn::Cos, std::cos},   {MathFn::Floor, std::floor},
                        {MathFn::Ceil, std::ceil},   {MathFn::Fabs, std::fabs}, {MathFn::Asin, std::asin},
                        {MathFn::Acos, std::acos},   {MathFn::Atan, std::atan}};
  for (const Case& c : cases) {
    UnaryKernel k = buildUnary([&](llvm::IRBuilder<>& b, CpuTarget& t, llvm::Value* x) { return t.emitMath(b, c.fn, {x}); });
    std::vector<float> in = {0.5f, 1.0f, 2.5f, -0.25f, 0.0f, 10.0f, NAN, INFINITY};
    std::vector<float> out(in.size());
    void* buffers[] = {in.data(), out.data()};
    int32_t status = 0;
    k.fn(buffers, &status, 0, static_cast<int64_t>(in.size()));
    for (size_t i = 0; i < in.size(); ++i) {
      float want = c.ref(in[i]);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(out[i])) << static_cast<int>(c.fn) << " at " << in[i];
      } else if (std::isinf(want)) {
        EXPECT_EQ(out[i], want) << static_cast<int>(c.fn) << " at " << in[i];
      } else {
        // libm is correctly rounded or within an ulp; LLVM may call the same function.
        EXPECT_NEAR(out[i], want, std::fabs(want) * 4e-7f) << static_cast<int>(c.fn) << " at " << in[i];
      }
    }
  }
}

TEST(ThreadPool, EveryItemExactlyOnce) {
  ThreadPool pool(4);
  for (int64_t n : {0, 1, 7, 1000, 100003}) {
    for (int64_t grain : {1, 16, 1 << 20}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.parallelFor(n, grain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << n << " " << grain << " " << i;
    }
  }
}

// libgomp's threads do not survive fork(): a child that ran a parallel region of two threads
// would wait for them forever. The pool runs the child's calls on the calling thread instead.
TEST(ThreadPool, AForkedChildRunsItsCallsInline) {
  ThreadPool pool(2);
  std::atomic<int64_t> parentSum = 0;
  pool.parallelFor(1000, 1, [&](int64_t b, int64_t e) { parentSum += e - b; });  // starts the OpenMP threads
  ASSERT_EQ(parentSum.load(), 1000);
  pid_t child = fork();
  ASSERT_GE(child, 0) << "fork failed";
  if (child == 0) {
    alarm(20);  // a hang ends the child with SIGALRM instead of the test run
    ThreadPool fresh(2);
    std::atomic<int64_t> sum = 0;
    pool.parallelFor(1000, 1, [&](int64_t b, int64_t e) { sum += e - b; });
    fresh.parallelFor(1000, 1, [&](int64_t b, int64_t e) { sum += e - b; });
    _exit(sum.load() == 2000 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child hung or crashed (signal "
                                 << (WIFSIGNALED(status) ? WTERMSIG(status) : 0) << ")";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child's calls missed items";
  // The parent's pool still works on its threads.
  pool.parallelFor(1000, 1, [&](int64_t b, int64_t e) { parentSum += e - b; });
  EXPECT_EQ(parentSum.load(), 2000);
}

TEST(ThreadPool, NestedCallsRunInline) {
  ThreadPool pool(3);
  std::atomic<int64_t> sum = 0;
  pool.parallelFor(8, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      pool.parallelFor(100, 1, [&](int64_t b2, int64_t e2) { sum += e2 - b2; });
  });
  EXPECT_EQ(sum.load(), 800);
}

}  // namespace
}  // namespace kiln::codegen
