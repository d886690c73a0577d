// NVPTX target and compiler on hand-written kernel bodies: ABI, libdevice math, numerics flags,
// arch choice, determinism and error messages. Kernels from real IR are in nvptx_ops_test.cpp.
#include <gtest/gtest.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/Support/FileSystem.h>

#include <cstdlib>
#include <optional>

#include "codegen/gpu_arch.h"
#include "codegen/nvptx_compiler.h"
#include "codegen/nvptx_target.h"
#include "nvptx_test_util.h"

namespace kiln::codegen {
namespace {

using testing::expectAssembles;

// out[i] = op(in[i]) / in[i] for one math function in f32 or f64: a divide and a libdevice call.
void emitMathKernel(llvm::Module& m, NvptxTarget& target, MathFn fn, bool f64, const std::string& name) {
  target.emitKernel(m, name, {16, 16}, 1000, 1, {}, [&](llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& buffers,
                                                 llvm::Value*, llvm::Value* index, llvm::Value*, llvm::Value*, int) {
    llvm::Type* t = f64 ? b.getDoubleTy() : b.getFloatTy();
    llvm::Value* x = b.CreateLoad(t, b.CreateGEP(t, buffers[0], index));
    std::vector<llvm::Value*> args{x};
    if (fn == MathFn::Pow) args.push_back(x);
    llvm::Value* y = b.CreateFDiv(target.emitMath(b, fn, args), x);
    b.CreateStore(y, b.CreateGEP(t, buffers[1], index));
  });
}

Expected<std::string> mathPtx(MathFn fn, bool f64, CompileOptions options = {}) {
  llvm::LLVMContext ctx;
  llvm::Module m("test", ctx);
  NvptxTarget target(options.fastMath);
  emitMathKernel(m, target, fn, f64, "k0_math");
  return compileToPtx(m, options);
}

// Instructions with .ftz other than ex2.approx.ftz, which libdevice's expf uses in IEEE mode too
// (it scales the argument so that denormal results come out right).
int flushingInstructions(const std::string& ptx) {
  int count = 0;
  for (size_t at = ptx.find(".ftz"); at != std::string::npos; at = ptx.find(".ftz", at + 1))
    if (at < 10 || ptx.compare(at - 10, 10, "ex2.approx") != 0) ++count;
  return count;
}

const MathFn kAllMath[] = {MathFn::Exp,  MathFn::Log,  MathFn::Log1p, MathFn::Sqrt,  MathFn::Tanh,
                           MathFn::Erf,  MathFn::Sin,  MathFn::Cos,   MathFn::Asin,  MathFn::Acos,
                           MathFn::Atan, MathFn::Pow,  MathFn::Floor, MathFn::Ceil,  MathFn::Fabs};

TEST(NvptxTarget, KernelIsAnEntryWithTheGridStrideLoop) {
  auto ptx = mathPtx(MathFn::Exp, false);
  ASSERT_TRUE(ptx.ok()) << ptx.error().message();
  EXPECT_NE(ptx->find(".visible .entry k0_math("), std::string::npos) << *ptx;
  EXPECT_NE(ptx->find(".target sm_80"), std::string::npos);
  EXPECT_NE(ptx->find(".version 7.0"), std::string::npos);
  EXPECT_NE(ptx->find("%nctaid.x"), std::string::npos);  // the stride
  EXPECT_NE(ptx->find("ld.global.nc.f32"), std::string::npos) << "inputs should be read-only noalias";
  EXPECT_EQ(ptx->find("__nv_"), std::string::npos) << "libdevice calls should be linked and inlined";
  EXPECT_EQ(ptx->find(".func"), std::string::npos) << "only kernels should remain";
  EXPECT_NE(ptx->find("div.rn.f32"), std::string::npos) << "IEEE division by default";
  EXPECT_EQ(flushingInstructions(*ptx), 0) << "no flush-to-zero by default:\n" << *ptx;
}

TEST(NvptxTarget, EveryMathFunctionAssemblesInF32AndF64) {
  KILN_REQUIRE_PTXAS();
  for (bool f64 : {false, true}) {
    for (MathFn fn : kAllMath) {
      std::string what = "math function " + std::to_string(static_cast<int>(fn)) + (f64 ? " f64" : " f32");
      auto ptx = mathPtx(fn, f64);
      ASSERT_TRUE(ptx.ok()) << what << ": " << ptx.error().message();
      EXPECT_EQ(ptx->find("__nv_"), std::string::npos) << what;
      EXPECT_EQ(ptx->find("call.uni (retval0), \n\t__nv_"), std::string::npos) << what;
      expectAssembles(*ptx, "sm_80", what);
    }
  }
}

TEST(NvptxTarget, FastMathUsesApproximateDivisionAndFlushesDenormals) {
  CompileOptions fast;
  fast.fastMath = true;
  auto ptx = mathPtx(MathFn::Sqrt, false, fast);
  ASSERT_TRUE(ptx.ok()) << ptx.error().message();
  EXPECT_NE(ptx->find("div.approx.ftz.f32"), std::string::npos) << *ptx;
  EXPECT_NE(ptx->find("sqrt.approx.ftz.f32"), std::string::npos) << *ptx;
  EXPECT_EQ(ptx->find("div.rn.f32"), std::string::npos);

  auto ieee = mathPtx(MathFn::Sqrt, false);
  ASSERT_TRUE(ieee.ok()) << ieee.error().message();
  EXPECT_NE(ieee->find("sqrt.rn.f32"), std::string::npos) << *ieee;
  EXPECT_NE(ieee->find("div.rn.f32"), std::string::npos) << *ieee;
}

TEST(NvptxTarget, FastMathSelectsLibdevicesFtzPaths) {
  CompileOptions fast;
  fast.fastMath = true;
  auto ptx = mathPtx(MathFn::Exp, false, fast);
  ASSERT_TRUE(ptx.ok()) << ptx.error().message();
  EXPECT_NE(ptx->find("ex2.approx.ftz.f32"), std::string::npos) << *ptx;
}

TEST(NvptxTarget, SamePtxEveryTime) {
  for (MathFn fn : {MathFn::Tanh, MathFn::Pow}) {
    auto first = mathPtx(fn, false), second = mathPtx(fn, false);
    ASSERT_TRUE(first.ok() && second.ok());
    EXPECT_EQ(*first, *second);
  }
}

TEST(NvptxTarget, ArchesPinTheirPtxVersion) {
  KILN_REQUIRE_PTXAS();
  struct Case {
    const char* arch;
    const char* version;
  } cases[] = {{"sm_75", ".version 6.3"}, {"sm_80", ".version 7.0"}, {"sm_86", ".version 7.1"},
               {"sm_89", ".version 7.8"}, {"sm_90", ".version 7.8"}, {"sm_90a", ".version 8.0"}};
  for (const Case& c : cases) {
    CompileOptions options;
    options.gpuArch = c.arch;
    auto ptx = mathPtx(MathFn::Erf, true, options);
    ASSERT_TRUE(ptx.ok()) << c.arch << ": " << ptx.error().message();
    EXPECT_NE(ptx->find(c.version), std::string::npos) << c.arch;
    EXPECT_NE(ptx->find(std::string(".target ") + c.arch + "\n"), std::string::npos) << c.arch;
    Status s = assembleWithPtxas(*ptx, c.arch);
    EXPECT_TRUE(s.ok()) << c.arch << ": " << (s.ok() ? "" : s.error().message());
  }
}

TEST(NvptxTarget, UnknownArchesAreClearErrors) {
  auto tooNew = parseGpuArch("sm_100");
  ASSERT_FALSE(tooNew.ok());
  EXPECT_NE(tooNew.error().message().find("newer than LLVM 19 can target"), std::string::npos);
  EXPECT_NE(tooNew.error().message().find("supported: sm_75, sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a"),
            std::string::npos)
      << tooNew.error().message();
  EXPECT_NE(tooNew.error().message().find("use --gpu-arch sm_90"), std::string::npos);
  auto tooOld = parseGpuArch("sm_70");
  ASSERT_FALSE(tooOld.ok());
  EXPECT_NE(tooOld.error().message().find("older than CUDA 13 supports"), std::string::npos);
  auto garbage = parseGpuArch("volta");
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.error().message().find("unknown GPU architecture 'volta': expected sm_XX"), std::string::npos);
  EXPECT_FALSE(parseGpuArch("sm_80a").ok());  // LLVM 19 has no arch-specific sm_80

  CompileOptions options;
  options.gpuArch = "sm_120";
  auto ptx = mathPtx(MathFn::Exp, false, options);
  ASSERT_FALSE(ptx.ok());
  EXPECT_NE(ptx.error().message().find("sm_120"), std::string::npos);
}

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(NvptxTarget, MissingLibdeviceIsAClearError) {
  llvm::SmallString<128> empty;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("kiln-empty-cuda", empty));
  {
    ScopedEnv env("KILN_CUDA_HOME", empty.str().str());
    auto ptx = mathPtx(MathFn::Exp, false);
    ASSERT_FALSE(ptx.ok());
    EXPECT_NE(ptx.error().message().find("libdevice not found at " + empty.str().str() +
                                         "/nvvm/libdevice/libdevice.10.bc"),
              std::string::npos)
        << ptx.error().message();
    EXPECT_NE(ptx.error().message().find("KILN_CUDA_HOME"), std::string::npos);
    // Kernels without libdevice math do not need it.
    EXPECT_TRUE(mathPtx(MathFn::Sqrt, false).ok());
  }
  llvm::sys::fs::remove_directories(empty);
}

TEST(NvptxTarget, PtxasReportsItsDiagnostics) {
  KILN_REQUIRE_PTXAS();
  Status s = assembleWithPtxas(".version 7.0\n.target sm_80\n.address_size 64\nbogus;\n", "sm_80");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("ptxas -arch=sm_80 rejected the PTX"), std::string::npos) << s.error().message();
  EXPECT_NE(s.error().message().find("bogus"), std::string::npos) << s.error().message();
}

}  // namespace
}  // namespace kiln::codegen
