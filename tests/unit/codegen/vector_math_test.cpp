// Vectorised math on the CPU (codegen/vector_math.h): every transcendental function kiln's CPU
// kernels compute, in f32 and in f64, over the whole range of the type (a sweep of bit patterns
// through every exponent, both signs, subnormals, +-0, +-inf and NaN, and a linear sweep of
// [-25, 25]), against a long double reference rounded to the type. The error bound is glibc's
// documented 4 ulp for libmvec (kiln's own formulas around it, such as sigmoid's, add a few; its
// inline exp, tanh and erf meet the same bound); the measured worst case is printed for the notes.
#include <gtest/gtest.h>

#include <llvm/TargetParser/Host.h>

#include "codegen/host_isa.h"

#include <bit>
#include <cfenv>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif
#include <cmath>
#include <cstring>
#include <functional>
#include <iomanip>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "codegen/cpu_compiler.h"
#include "codegen/cpu_target.h"
#include "codegen/vector_math.h"
#include "kiln_internal.h"
#include "runtime/thread_pool.h"
#include "tests/unit/codegen/cpu_assembly.h"

namespace kiln {
namespace {

// Distance in units in the last place between two floats, or two doubles (ordered bit images;
// saturated where the distance is beyond int64).
template <class T>
int64_t ulps(T a, T b) {
  using Bits = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  auto ordered = [](T f) {
    Bits i;
    std::memcpy(&i, &f, sizeof(T));
    return i < 0 ? static_cast<__int128>(std::numeric_limits<Bits>::min()) - i : static_cast<__int128>(i);
  };
  __int128 d = ordered(a) - ordered(b);
  if (d < 0) d = -d;
  return d > INT64_MAX ? INT64_MAX : static_cast<int64_t>(d);
}

// `count` values whose bit patterns step evenly through all 2^32 (or 2^64), then a linear sweep of
// [-25, 25] (where most functions change fastest, and which the bit patterns of a double visit
// rarely), then the special values.
template <class T>
std::vector<T> sweep(int64_t count) {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  std::vector<T> xs;
  const Bits step = static_cast<Bits>(std::numeric_limits<Bits>::max() / static_cast<Bits>(count)) + 1;
  for (int64_t i = 0; i < count; ++i) {
    Bits bits = static_cast<Bits>(static_cast<Bits>(i) * step);
    T f;
    std::memcpy(&f, &bits, sizeof(T));
    xs.push_back(f);
  }
  for (int64_t i = 0; i < count / 8; ++i) xs.push_back(static_cast<T>(-25.0 + 50.0 * static_cast<double>(i) / static_cast<double>(count / 8)));
  using L = std::numeric_limits<T>;
  for (T f : {T(0), T(-0.0), T(1), T(-1), T(0.5), L::infinity(), -L::infinity(), L::quiet_NaN(), L::denorm_min(),
              L::max(), L::lowest(), T(88.7), T(-103.9), T(1e-30), T(709.7), T(-745.1), T(19.06), T(-9.01)})
    xs.push_back(f);
  while (xs.size() % 64) xs.push_back(T(0.25));  // whole vectors, and a remainder-free loop
  return xs;
}

struct Function {
  const char* op;
  std::function<long double(long double)> reference;
  int64_t maxUlps;
};

const Function kFunctions[] = {
    {"exp", [](long double x) { return std::exp(x); }, 4},
    {"log", [](long double x) { return std::log(x); }, 4},
    {"tanh", [](long double x) { return std::tanh(x); }, 4},
    {"erf", [](long double x) { return std::erf(x); }, 4},
    {"sin", [](long double x) { return std::sin(x); }, 4},
    {"cos", [](long double x) { return std::cos(x); }, 4},
    {"log1p", [](long double x) { return std::log1p(x); }, 4},
    {"asin", [](long double x) { return std::asin(x); }, 4},
    {"acos", [](long double x) { return std::acos(x); }, 4},
    {"atan", [](long double x) { return std::atan(x); }, 4},
    // kiln computes sigmoid from exp: exp's error plus a division and an addition.
    {"sigmoid", [](long double x) { return 1 / (1 + std::exp(-x)); }, 6},
};

// The function over the whole range of T, against the long double reference rounded to T.
template <class T>
void expectWithinItsUlpBound(const Function& fn) {
  const char* dtype = sizeof(T) == 4 ? "f32" : "f64";
  std::vector<T> xs = sweep<T>(int64_t{1} << 20);
  int64_t n = static_cast<int64_t>(xs.size());
  std::string type = std::string(dtype) + "[" + std::to_string(n) + "]";
  auto m = parseModule("func @main(%x: " + type + ") -> " + type + " {\n  %y = " + fn.op + " %x\n  return %y\n}\n", "math.kiln");
  ASSERT_TRUE(m.ok()) << m.error().str();
  auto exe = Executable::compile(*(*m)->entry(), {});
  ASSERT_TRUE(exe.ok()) << exe.error().str();
  Tensor x(TensorType{sizeof(T) == 4 ? DType::F32 : DType::F64, {n}});
  std::memcpy(x.data(), xs.data(), xs.size() * sizeof(T));
  auto got = (*exe)->run({x});
  ASSERT_TRUE(got.ok()) << got.error().str();
  const auto* y = static_cast<const T*>((*got)[0].data());
  int64_t worst = 0;
  T worstAt = 0;
  for (int64_t i = 0; i < n; ++i) {
    T want = static_cast<T>(fn.reference(xs[i]));
    if (std::isnan(want) || std::isnan(y[i])) {
      EXPECT_TRUE(std::isnan(want) && std::isnan(y[i])) << fn.op << "(" << xs[i] << ") = " << y[i] << ", want " << want;
      continue;
    }
    int64_t d = ulps(y[i], want);
    if (d > worst) worst = d, worstAt = xs[i];
    // ulps() counts +0 and -0 as one value; an odd function must keep the zero's sign.
    if (want == 0 && std::signbit(want) != std::signbit(y[i])) ADD_FAILURE() << fn.op << "(" << xs[i] << ") = " << y[i] << ", want " << want;
  }
  std::cout << dtype << " " << fn.op << ": at most " << worst << " ulp (at " << std::setprecision(17) << worstAt << ") over "
            << n << " values" << (codegen::vectorMathAvailable() ? " (libmvec loaded)" : " (scalar libm)") << "\n";
  EXPECT_LE(worst, fn.maxUlps) << fn.op << " at " << worstAt;
}

class VectorMath : public ::testing::TestWithParam<Function> {};

TEST_P(VectorMath, WithinItsUlpBoundOverTheWholeRange) { expectWithinItsUlpBound<float>(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Cpu, VectorMath, ::testing::ValuesIn(kFunctions),
                         [](const auto& info) { return std::string(info.param.op); });

// The same functions in f64: libmvec's double variants, and kiln's own inline tanh.
class VectorMathF64 : public ::testing::TestWithParam<Function> {};

TEST_P(VectorMathF64, WithinItsUlpBoundOverTheWholeRange) { expectWithinItsUlpBound<double>(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Cpu, VectorMathF64, ::testing::ValuesIn(kFunctions),
                         [](const auto& info) { return std::string(info.param.op); });

// pow over positive bases of every exponent and a spread of exponents (negative ones included).
TEST(VectorMath, PowWithinItsUlpBound) {
  std::vector<float> bases, exps;
  for (float b : sweep<float>(int64_t{1} << 16))
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
  EXPECT_NE(assembly("cos %x").find("v_cosf"), std::string::npos) << "no call to libmvec's vector cosf";
  EXPECT_NE(assembly("sin %x").find("v_sinf"), std::string::npos) << "no call to libmvec's vector sinf";
}

// f32 exp, tanh and erf and f64 tanh are kiln's own and inline (codegen/cpu_target.cpp,
// expInline, tanhInline and erfByTable): no call at all, and vectorised.
TEST(VectorMath, KilnsOwnFormulasAreInline) {
  if (!codegen::hostHas("fma")) GTEST_SKIP() << "no FMA on this host (or under KILN_CPU_ISA): the functions are libm's";
  // f32 log too: libmvec's took a scalar call per lane of any vector holding a zero, a negative or
  // a subnormal (a masked probability's log 9x slower than an ordinary one).
  const std::pair<const char*, const char*> cases[] = {{"f32", "exp %x"},  {"f32", "tanh %x"}, {"f32", "sigmoid %x"},
                                                       {"f32", "erf %x"},  {"f32", "gelu %x {approximate = \"none\"}"},
                                                       {"f32", "log %x"},  {"f64", "tanh %x"},
                                                       {"f64", "gelu %x {approximate = \"tanh\"}"}};
  for (auto [dtype, op] : cases) {
    SCOPED_TRACE(std::string(dtype) + " " + op);
    std::string type = std::string(dtype) + "[4096]";
    auto m = parseModule("func @main(%x: " + type + ") -> " + type + " {\n  %y = " + op + "\n  return %y\n}\n", "v.kiln");
    ASSERT_TRUE(m.ok());
    auto compiled = codegen::compileForCpu(*(*m)->entry(), {});
    ASSERT_TRUE(compiled.ok()) << compiled.error().str();
    auto text = codegen::emitCpuAssembly(*compiled->module, *compiled->tm);
    ASSERT_TRUE(text.ok()) << text.error().str();
    EXPECT_EQ(text->find("call"), std::string::npos) << "calls a function";
    const char* packedMultiply = std::string(dtype) == "f32" ? "mulps" : "mulpd";
    EXPECT_NE(text->find(packedMultiply), std::string::npos) << "not vectorised (no packed multiply)";
  }
}

// The assembly of `%y = <op> %x` over f32[4096] (compileForCpu's module), after the late inlining.
std::string unaryAssembly(const char* op) {
  return cpuAssemblyOf(fmt::format("func @main(%x: f32[4096]) -> f32[4096] {{\n  %y = {} %x\n  return %y\n}}\n", op));
}

// `%y = <op> %x` over f32[4093] (a vector loop and its scalar remainder) at x = first + step * (i
// % period), through the runtime's path (kernel units, the compile cache off): y's values.
std::vector<float> unaryOverRemainder(const char* op, float first, float step, int period, std::vector<float>& xs) {
  constexpr int kCount = 4093;
  auto m = parseModule(fmt::format("func @main(%x: f32[{0}]) -> f32[{0}] {{\n  %y = {1} %x\n  return %y\n}}\n", kCount, op), "v.kiln");
  EXPECT_TRUE(m.ok());
  if (!m.ok()) return {};
  setenv("KILN_CACHE_DIR", "off", 1);
  auto exe = Executable::compile(*(*m)->entry(), {});
  unsetenv("KILN_CACHE_DIR");
  EXPECT_TRUE(exe.ok()) << exe.error().str();
  if (!exe.ok()) return {};
  Tensor x(TensorType{DType::F32, {kCount}});
  xs.resize(kCount);
  for (int i = 0; i < kCount; ++i) xs[i] = static_cast<float*>(x.data())[i] = first + step * static_cast<float>(i % period);
  auto got = (*exe)->run({x});
  EXPECT_TRUE(got.ok()) << got.error().str();
  if (!got.ok()) return {};
  const auto* y = static_cast<const float*>((*got)[0].data());
  return std::vector<float>(y, y + kCount);
}

// With AVX-512 (F and VL), f32 exp's vectorised loop scales by 2^n with vscalefps: the call to
// kiln_expf the emitter writes is widened through its vector variants and inlined after the
// vectoriser (codegen/late_inline.h), through the runtime's per-kernel units too, and computes
// the same bits as the scalar formula (the sweep above; here the loop's result against the
// remainder's).
TEST(VectorMath, F32ExpScalesWithVscalefWhereTheHostHasIt) {
  const llvm::StringMap<bool>& features = codegen::hostCpuFeatures();  // under KILN_CPU_ISA
  if (!features.lookup("avx512f") || !features.lookup("avx512vl"))
    GTEST_SKIP() << "this host has no AVX-512F/VL: f32 exp scales in two integer steps instead";
  std::string text = unaryAssembly("exp");
  EXPECT_NE(text.find("vscalefps"), std::string::npos);
  EXPECT_EQ(text.find("call"), std::string::npos) << "a call survived the late inlining";
  EXPECT_EQ(text.find("kiln_expf"), std::string::npos) << "the functions were not removed";
  // Every element, across the vector loop and its scalar remainder, equal to the interpreter's
  // within 1 ulp, from subnormal results to overflow.
  std::vector<float> xs;
  std::vector<float> y = unaryOverRemainder("exp", -110.0f, 0.05f, 1 << 30, xs);
  ASSERT_EQ(y.size(), xs.size());
  for (size_t i = 0; i < y.size(); ++i) EXPECT_LE(ulps(y[i], static_cast<float>(std::exp(double(xs[i])))), 1) << "exp(" << xs[i] << ")";
}

// f32 erf looks its eight polynomials up per lane with vpermps (codegen/cpu_target.cpp,
// erfByTable), the scalar form included, through the same late-inlined vector variants as exp: no
// call survives, and a value gives the same bits in the vector loop as in its scalar remainder.
TEST(VectorMath, F32ErfLooksItsPolynomialsUpByPermute) {
  const llvm::StringMap<bool>& features = codegen::hostCpuFeatures();  // under KILN_CPU_ISA
  if (!features.lookup("fma")) GTEST_SKIP() << "no FMA on this host (or under KILN_CPU_ISA): erf is libm's";
  if (!features.lookup("avx2")) GTEST_SKIP() << "no AVX2 on this host: the lookups are selects, not vpermps";
  std::string text = unaryAssembly("erf");
  EXPECT_NE(text.find("vpermps"), std::string::npos);
  EXPECT_EQ(text.find("call"), std::string::npos) << "a call survived the late inlining";
  EXPECT_EQ(text.find("kiln_erff"), std::string::npos) << "the functions were not removed";
  // Every interval of both signs; the remainder's values repeat the loop's.
  std::vector<float> xs;
  std::vector<float> y = unaryOverRemainder("erf", -4.2f, 0.0084f, 1000, xs);
  ASSERT_EQ(y.size(), xs.size());
  for (size_t i = 0; i < y.size(); ++i) {
    EXPECT_EQ(std::bit_cast<uint32_t>(y[i]), std::bit_cast<uint32_t>(y[i % 1000])) << "erf(" << xs[i] << ") at " << i;
    EXPECT_LE(ulps(y[i], static_cast<float>(std::erf(double(xs[i])))), 2) << "erf(" << xs[i] << ")";
  }
}

// Whether `%y = <op> %x` over `xs` raises the underflow flag, run on this thread (a pool of one:
// the flags are per thread), and its values.
template <class T>
bool underflowsOver(const char* op, const std::vector<T>& xs, std::vector<T>& ys) {
  const char* dtype = sizeof(T) == 4 ? "f32" : "f64";
  std::string type = fmt::format("{}[{}]", dtype, xs.size());
  auto m = parseModule(fmt::format("func @main(%x: {0}) -> {0} {{\n  %y = {1} %x\n  return %y\n}}\n", type, op), "tiny.kiln");
  EXPECT_TRUE(m.ok());
  if (!m.ok()) return false;
  auto exe = Executable::compile(*(*m)->entry(), {});
  EXPECT_TRUE(exe.ok()) << exe.error().str();
  if (!exe.ok()) return false;
  Tensor x(TensorType{sizeof(T) == 4 ? DType::F32 : DType::F64, {static_cast<int64_t>(xs.size())}});
  std::memcpy(x.data(), xs.data(), xs.size() * sizeof(T));
  ThreadPool thisThread(1);
  ExecuteOptions options;
  options.threads = &thisThread;
  std::feclearexcept(FE_ALL_EXCEPT);
  auto got = (*exe)->run({x}, options);
  bool underflowed = std::fetestexcept(FE_UNDERFLOW) != 0;
  EXPECT_TRUE(got.ok()) << got.error().str();
  if (got.ok()) ys.assign(static_cast<const T*>((*got)[0].data()), static_cast<const T*>((*got)[0].data()) + xs.size());
  return underflowed;
}

// A subnormal intermediate costs a microcode assist per instruction (x86 without FTZ/DAZ, kiln's
// IEEE default), and a polynomial's powers of a tiny argument are subnormal long before its
// result is: tanh over f32 values near 1e-20 ran 20x slower than over ordinary ones, exp under a
// softmax's -1e9 mask 8x. kiln's own formulas (exp, tanh, erf and log in f32, tanh in f64) take
// such arguments without one: no step underflows where the result is a normal number, 0 or
// infinite. (A subnormal argument or result is IEEE's cost and still pays it.)
TEST(VectorMath, OwnFormulasMakeNoSubnormalStepsOnTinyOrMaskedArguments) {
  if (!codegen::hostCpuFeatures().lookup("fma")) GTEST_SKIP() << "no FMA on this host (or under KILN_CPU_ISA): the functions are libm's";
  std::vector<float> tiny;
  for (int i = 0; i < 4096; ++i) tiny.push_back((i % 2 ? -1.0f : 1.0f) * std::pow(10.0f, -30.0f + 20.0f * float(i) / 4096));
  std::vector<float> masked = {-1e9f, -std::numeric_limits<float>::infinity(), -104.0f, -200.0f, -1e30f};
  for (const char* op : {"exp", "tanh", "erf", "sigmoid", "silu", "gelu"}) {
    std::vector<float> xs = tiny, ys;
    xs.insert(xs.end(), masked.begin(), masked.end());
    EXPECT_FALSE(underflowsOver(op, xs, ys)) << op << " underflowed in a step";
    ASSERT_EQ(ys.size(), xs.size());
    for (size_t i = 0; i < tiny.size(); ++i) EXPECT_TRUE(std::isnormal(ys[i])) << op << "(" << xs[i] << ") = " << ys[i];
  }
  // log of tiny positives is normal; of zeros and negatives -inf and NaN, of +inf itself.
  std::vector<float> logs, ys;
  for (float t : tiny) logs.push_back(std::fabs(t));
  for (float special : {0.0f, -0.0f, -1.0f, -1e-30f, std::numeric_limits<float>::infinity()}) logs.push_back(special);
  EXPECT_FALSE(underflowsOver("log", logs, ys)) << "log underflowed in a step";
  ASSERT_EQ(ys.size(), logs.size());
  for (size_t i = 0; i < tiny.size(); ++i) EXPECT_LE(ulps(ys[i], std::log(logs[i])), 1) << "log(" << logs[i] << ")";
  const size_t at = tiny.size();
  EXPECT_EQ(ys[at], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(ys[at + 1], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(ys[at + 2]) && std::isnan(ys[at + 3]));
  EXPECT_EQ(ys[at + 4], std::numeric_limits<float>::infinity());
  std::vector<double> tiny64, ys64;
  for (int i = 0; i < 4096; ++i) tiny64.push_back((i % 2 ? -1.0 : 1.0) * std::pow(10.0, -300.0 + 200.0 * double(i) / 4096));
  EXPECT_FALSE(underflowsOver("tanh", tiny64, ys64)) << "f64 tanh underflowed in a step";
  // The exact values where the guards take over: exp(-104) and below are 0, tanh and erf of a
  // tiny x are x and x times 2/sqrt(pi) to the ulp.
  underflowsOver("exp", masked, ys);
  for (float y : ys) EXPECT_EQ(std::bit_cast<uint32_t>(y), 0u);
  underflowsOver("tanh", tiny, ys);
  for (size_t i = 0; i < tiny.size(); ++i) EXPECT_EQ(ys[i], tiny[i]) << "tanh(" << tiny[i] << ")";
  underflowsOver("erf", tiny, ys);
  for (size_t i = 0; i < tiny.size(); ++i) EXPECT_LE(ulps(ys[i], static_cast<float>(std::erf(double(tiny[i])))), 1) << "erf(" << tiny[i] << ")";
}

// --fast-math flushes subnormals to zero in kiln's CPU kernels (MXCSR's FTZ and DAZ for the
// chunk a kernel runs), as on the GPU; IEEE otherwise. The calling thread's own mode is restored.
TEST(VectorMath, FastMathFlushesSubnormalsInTheKernelsAlone) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the flush is MXCSR's, on x86 hosts; elsewhere --fast-math keeps subnormals on the CPU";
#else
  auto m = parseModule(
      "func @main(%x: f32[64]) -> (f32[64], f32[64]) {\n  %a = mul %x, %x\n  %b = add %x, %x\n  return %a, %b\n}\n",
      "ftz.kiln");
  ASSERT_TRUE(m.ok()) << m.error().str();
  Tensor x(TensorType{DType::F32, {64}});
  auto* xs = static_cast<float*>(x.data());
  for (int i = 0; i < 64; ++i) xs[i] = i < 32 ? 1e-20f : 1e-40f;  // x * x subnormal; x itself subnormal
  for (bool fast : {false, true}) {
    SCOPED_TRACE(fast ? "--fast-math" : "IEEE");
    codegen::CompileOptions options;
    options.fastMath = fast;
    auto exe = Executable::compile(*(*m)->entry(), options);
    ASSERT_TRUE(exe.ok()) << exe.error().str();
    ThreadPool thisThread(1);
    ExecuteOptions run;
    run.threads = &thisThread;
    const unsigned before = _mm_getcsr();
    auto got = (*exe)->run({x}, run);
    EXPECT_EQ(_mm_getcsr() & (_MM_FLUSH_ZERO_MASK | 0x0040u), before & (_MM_FLUSH_ZERO_MASK | 0x0040u));
    ASSERT_TRUE(got.ok()) << got.error().str();
    const auto* a = static_cast<const float*>((*got)[0].data());
    const auto* b = static_cast<const float*>((*got)[1].data());
    EXPECT_EQ(a[0], fast ? 0.0f : xs[0] * xs[0]);   // a subnormal result: flushed (FTZ)
    EXPECT_EQ(b[40], fast ? 0.0f : xs[40] + xs[40]);  // a subnormal operand: read as 0 (DAZ)
    EXPECT_EQ(b[0], 2e-20f);                          // normal numbers as ever
  }
#endif
}

}  // namespace
}  // namespace kiln
