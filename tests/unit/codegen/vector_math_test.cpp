// Vectorised math on the CPU (codegen/vector_math.h): every transcendental function kiln's CPU
// kernels compute, in f32, over the whole float range (a sweep of bit patterns through every
// exponent, both signs, subnormals, +-0, +-inf and NaN), against a double-precision reference
// rounded to float. The error bound is glibc's documented 4 ulp for libmvec (kiln's own formulas
// around it, such as sigmoid's and f32 tanh's, add a few); the measured worst case is printed for
// the notes.
#include <gtest/gtest.h>
#include <llvm/TargetParser/Host.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "codegen/cpu_compiler.h"
#include "codegen/cpu_target.h"
#include "codegen/vector_math.h"
#include "kiln_internal.h"

namespace kiln {
namespace {

// Distance in units in the last place between two floats (ordered bit images).
int64_t ulps(float a, float b) {
  auto ordered = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, 4);
    return i < 0 ? int64_t{INT32_MIN} - i : int64_t{i};
  };
  return std::llabs(ordered(a) - ordered(b));
}

// `count` floats whose bit patterns step evenly through all 2^32, plus the special values.
std::vector<float> sweep(int64_t count) {
  std::vector<float> xs;
  uint64_t step = (uint64_t{1} << 32) / static_cast<uint64_t>(count);
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += step) {
    uint32_t b = static_cast<uint32_t>(bits);
    float f;
    std::memcpy(&f, &b, 4);
    xs.push_back(f);
  }
  for (float f : {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                  std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::max(),
                  std::numeric_limits<float>::lowest(), 88.7f, -103.9f, 1e-30f})
    xs.push_back(f);
  while (xs.size() % 64) xs.push_back(0.25f);  // whole vectors, and a remainder-free loop
  return xs;
}

struct Function {
  const char* op;
  std::function<double(double)> reference;
  int64_t maxUlps;
};

const Function kFunctions[] = {
    {"exp", [](double x) { return std::exp(x); }, 4},
    {"log", [](double x) { return std::log(x); }, 4},
    {"tanh", [](double x) { return std::tanh(x); }, 4},
    {"erf", [](double x) { return std::erf(x); }, 4},
    {"sin", [](double x) { return std::sin(x); }, 4},
    {"cos", [](double x) { return std::cos(x); }, 4},
    {"log1p", [](double x) { return std::log1p(x); }, 4},
    {"asin", [](double x) { return std::asin(x); }, 4},
    {"acos", [](double x) { return std::acos(x); }, 4},
    {"atan", [](double x) { return std::atan(x); }, 4},
    // kiln computes sigmoid from exp: exp's error plus a division and an addition.
    {"sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }, 6},
};

class VectorMath : public ::testing::TestWithParam<Function> {};

TEST_P(VectorMath, WithinItsUlpBoundOverTheWholeRange) {
  const Function& fn = GetParam();
  std::vector<float> xs = sweep(int64_t{1} << 20);
  int64_t n = static_cast<int64_t>(xs.size());
  std::string text = "func @main(%x: f32[" + std::to_string(n) + "]) -> f32[" + std::to_string(n) + "] {\n  %y = " +
                     fn.op + " %x\n  return %y\n}\n";
  auto m = parseModule(text, "math.kiln");
  ASSERT_TRUE(m.ok()) << m.error().str();
  auto exe = Executable::compile(*(*m)->entry(), {});
  ASSERT_TRUE(exe.ok()) << exe.error().str();
  Tensor x(TensorType{DType::F32, {n}});
  std::memcpy(x.data(), xs.data(), xs.size() * 4);
  auto got = (*exe)->run({x});
  ASSERT_TRUE(got.ok()) << got.error().str();
  const auto* y = static_cast<const float*>((*got)[0].data());
  int64_t worst = 0;
  float worstAt = 0;
  for (int64_t i = 0; i < n; ++i) {
    float want = static_cast<float>(fn.reference(xs[i]));
    if (std::isnan(want) || std::isnan(y[i])) {
      EXPECT_TRUE(std::isnan(want) && std::isnan(y[i])) << fn.op << "(" << xs[i] << ") = " << y[i] << ", want " << want;
      continue;
    }
    int64_t d = ulps(y[i], want);
    if (d > worst) worst = d, worstAt = xs[i];
    // ulps() counts +0 and -0 as one value; an odd function must keep the zero's sign.
    if (want == 0 && std::signbit(want) != std::signbit(y[i])) ADD_FAILURE() << fn.op << "(" << xs[i] << ") = " << y[i] << ", want " << want;
  }
  std::cout << fn.op << ": at most " << worst << " ulp (at " << worstAt << ") over " << n << " values"
            << (codegen::vectorMathAvailable() ? ", vectorised through libmvec" : ", scalar libm") << "\n";
  EXPECT_LE(worst, fn.maxUlps) << fn.op << " at " << worstAt;
}

INSTANTIATE_TEST_SUITE_P(Cpu, VectorMath, ::testing::ValuesIn(kFunctions),
                         [](const auto& info) { return std::string(info.param.op); });

// pow over positive bases of every exponent and a spread of exponents (negative ones included).
TEST(VectorMath, PowWithinItsUlpBound) {
  std::vector<float> bases, exps;
  for (float b : sweep(int64_t{1} << 16))
    if (b > 0 && std::isfinite(b))
      for (float e : {-3.5f, -1.0f, -0.5f, 0.5f, 1.5f, 2.0f, 3.0f, 7.25f}) bases.push_back(b), exps.push_back(e);
  while (bases.size() % 64) bases.push_back(2.0f), exps.push_back(2.0f);
  int64_t n = static_cast<int64_t>(bases.size());
  std::string t = "f32[" + std::to_string(n) + "]";
  auto m = parseModule("func @main(%b: " + t + ", %e: " + t + ") -> " + t + " {\n  %y = pow %b, %e\n  return %y\n}\n", "pow.kiln");
  ASSERT_TRUE(m.ok()) << m.error().str();
  auto exe = Executable::compile(*(*m)->entry(), {});
  ASSERT_TRUE(exe.ok()) << exe.error().str();
  Tensor b(TensorType{DType::F32, {n}}), e(TensorType{DType::F32, {n}});
  std::memcpy(b.data(), bases.data(), bases.size() * 4);
  std::memcpy(e.data(), exps.data(), exps.size() * 4);
  auto got = (*exe)->run({b, e});
  ASSERT_TRUE(got.ok()) << got.error().str();
  const auto* y = static_cast<const float*>((*got)[0].data());
  int64_t worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    float want = static_cast<float>(std::pow(static_cast<double>(bases[i]), static_cast<double>(exps[i])));
    worst = std::max(worst, ulps(y[i], want));
  }
  std::cout << "pow: at most " << worst << " ulp over " << n << " pairs\n";
  EXPECT_LE(worst, 4);
}

// The kernels really call libmvec's vector variants where it is loaded.
TEST(VectorMath, KernelsCallTheVectorVariants) {
  if (!codegen::vectorMathAvailable()) GTEST_SKIP() << "no libmvec on this machine: kernels call scalar libm";
  auto assembly = [](const std::string& line) {
    auto m = parseModule("func @main(%x: f32[4096]) -> f32[4096] {\n  %y = " + line + "\n  return %y\n}\n", "v.kiln");
    EXPECT_TRUE(m.ok());
    auto compiled = codegen::compileForCpu(*(*m)->entry(), {});
    EXPECT_TRUE(compiled.ok()) << compiled.error().str();
    auto text = codegen::emitCpuAssembly(*compiled->module, *compiled->tm);
    EXPECT_TRUE(text.ok()) << text.error().str();
    return text.ok() ? *text : std::string();
  };
  EXPECT_NE(assembly("log %x").find("v_logf"), std::string::npos) << "no call to libmvec's vector logf";
  EXPECT_NE(assembly("sin %x").find("v_sinf"), std::string::npos) << "no call to libmvec's vector sinf";
}

// f32 exp, tanh and erf are kiln's own and inline (codegen/cpu_target.cpp, expInline, tanhInline
// and erfInline): no call at all, and vectorised.
TEST(VectorMath, F32ExpTanhAndErfAreInline) {
  for (const char* op : {"exp %x", "tanh %x", "sigmoid %x", "erf %x", "gelu %x {approximate = \"none\"}"}) {
    SCOPED_TRACE(op);
    auto m = parseModule(std::string("func @main(%x: f32[4096]) -> f32[4096] {\n  %y = ") + op + "\n  return %y\n}\n", "v.kiln");
    ASSERT_TRUE(m.ok());
    auto compiled = codegen::compileForCpu(*(*m)->entry(), {});
    ASSERT_TRUE(compiled.ok()) << compiled.error().str();
    auto text = codegen::emitCpuAssembly(*compiled->module, *compiled->tm);
    ASSERT_TRUE(text.ok()) << text.error().str();
    EXPECT_EQ(text->find("call"), std::string::npos) << "calls a function";
    EXPECT_NE(text->find("mulps"), std::string::npos) << "not vectorised (no packed multiply)";
  }
}

// With AVX-512 (F and VL), f32 exp's vectorised loop scales by 2^n with vscalefps: the call to
// kiln_expf the emitter writes is widened through its vector variants and inlined after the
// vectoriser (codegen/late_inline.h), through the runtime's per-kernel units too, and computes
// the same bits as the scalar formula (the sweep above; here the loop's result against the
// remainder's).
TEST(VectorMath, F32ExpScalesWithVscalefWhereTheHostHasIt) {
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  if (!features.lookup("avx512f") || !features.lookup("avx512vl"))
    GTEST_SKIP() << "this host has no AVX-512F/VL: f32 exp scales in two integer steps instead";
  auto m = parseModule("func @main(%x: f32[4096]) -> f32[4096] {\n  %y = exp %x\n  return %y\n}\n", "v.kiln");
  ASSERT_TRUE(m.ok());
  auto compiled = codegen::compileForCpu(*(*m)->entry(), {});
  ASSERT_TRUE(compiled.ok()) << compiled.error().str();
  auto text = codegen::emitCpuAssembly(*compiled->module, *compiled->tm);
  ASSERT_TRUE(text.ok()) << text.error().str();
  EXPECT_NE(text->find("vscalefps"), std::string::npos);
  EXPECT_EQ(text->find("call"), std::string::npos) << "a call survived the late inlining";
  EXPECT_EQ(text->find("kiln_expf"), std::string::npos) << "the functions were not removed";
  // The runtime's path (kernel units, the compile cache off): every element, across the vector
  // loop and its scalar remainder (4093 elements), equal to the interpreter's within 1 ulp.
  auto odd = parseModule("func @main(%x: f32[4093]) -> f32[4093] {\n  %y = exp %x\n  return %y\n}\n", "v.kiln");
  ASSERT_TRUE(odd.ok());
  setenv("KILN_CACHE_DIR", "off", 1);
  auto exe = Executable::compile(*(*odd)->entry(), {});
  unsetenv("KILN_CACHE_DIR");
  ASSERT_TRUE(exe.ok()) << exe.error().str();
  Tensor x(TensorType{DType::F32, {4093}});
  auto* xs = static_cast<float*>(x.data());
  for (int i = 0; i < 4093; ++i) xs[i] = -110.0f + 0.05f * static_cast<float>(i);  // subnormal results to overflow
  auto got = (*exe)->run({x});
  ASSERT_TRUE(got.ok()) << got.error().str();
  const auto* y = static_cast<const float*>((*got)[0].data());
  for (int i = 0; i < 4093; ++i) EXPECT_LE(ulps(y[i], static_cast<float>(std::exp(double(xs[i])))), 1) << "exp(" << xs[i] << ")";
}

}  // namespace
}  // namespace kiln
