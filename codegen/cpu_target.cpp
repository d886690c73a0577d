// The host CPU target: kernel ABI, math, TargetMachine, O3 pipeline and assembly output.
#include "codegen/cpu_target.h"

#include <cmath>
#include <functional>

#include "codegen/host_isa.h"
#include "codegen/late_inline.h"
#include "codegen/loop_hints.h"
#include "codegen/row_block.h"
#include "codegen/streaming_stores.h"
#include "codegen/llvm_pipeline.h"
#include "codegen/vector_math.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/PassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <mutex>
#include <vector>

#include "codegen/cpu_jit.h"

namespace kiln::codegen {

namespace {

llvm::Intrinsic::ID intrinsicId(MathFn fn) {
  switch (fn) {
    case MathFn::Exp: return llvm::Intrinsic::exp;
    case MathFn::Log: return llvm::Intrinsic::log;
    case MathFn::Sqrt: return llvm::Intrinsic::sqrt;
    case MathFn::Sin: return llvm::Intrinsic::sin;
    case MathFn::Cos: return llvm::Intrinsic::cos;
    case MathFn::Pow: return llvm::Intrinsic::pow;
    case MathFn::Floor: return llvm::Intrinsic::floor;
    case MathFn::Ceil: return llvm::Intrinsic::ceil;
    case MathFn::Fabs: return llvm::Intrinsic::fabs;
    default: return llvm::Intrinsic::not_intrinsic;
  }
}

// libm names for what LLVM 19 has no intrinsic for (llvm.tanh and llvm.asin/acos/atan arrive in
// LLVM 20).
std::string libmName(MathFn fn, bool isFloat) {
  const char* base = nullptr;
  switch (fn) {
    case MathFn::Tanh: base = "tanh"; break;
    case MathFn::Erf: base = "erf"; break;
    case MathFn::Log1p: base = "log1p"; break;
    case MathFn::Asin: base = "asin"; break;
    case MathFn::Acos: base = "acos"; break;
    case MathFn::Atan: base = "atan"; break;
    default: internalError(__FILE__, __LINE__, "no libm name for this math function");
  }
  return std::string(base) + (isFloat ? "f" : "");
}

bool hostHasScalef();  // below, with the other host queries
bool hostHasAvx512();

// A call of the libm function `name`, all of whose arguments and its result have args[0]'s type.
llvm::Value* callLibm(llvm::IRBuilder<>& b, const std::string& name, llvm::ArrayRef<llvm::Value*> args) {
  llvm::Type* type = args[0]->getType();
  llvm::Module* module = b.GetInsertBlock()->getModule();
  std::vector<llvm::Type*> params(args.size(), type);
  auto* fnType = llvm::FunctionType::get(type, params, false);
  llvm::FunctionCallee callee = module->getOrInsertFunction(name, fnType);
  if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    // As clang with -fno-math-errno: a pure function, so LLVM may hoist, CSE and vectorise around it.
    f->setDoesNotAccessMemory();
    f->setDoesNotThrow();
    f->setWillReturn();
  }
  llvm::CallInst* call = b.CreateCall(callee, args);
  call->setDoesNotAccessMemory();
  return call;
}

// A polynomial (coefficients lowest degree first) by fused multiply-adds, as Horner's rule in x^2
// over the pairs c[2i] + c[2i+1] x: one instruction more than Horner's rule in x, but the pairs
// are independent, so the chain of dependent instructions is about half as long. Elementwise
// kernels are bound by that chain, not by the instruction count: the out-of-order window holds
// only a few iterations of a transcendental's ~25 instructions.
llvm::Value* polynomial(llvm::IRBuilder<>& b, llvm::ArrayRef<double> coefficients, llvm::Value* x,
                        llvm::Value* xSquared) {
  llvm::Type* type = x->getType();
  auto c = [type](double v) -> llvm::Value* { return llvm::ConstantFP::get(type, v); };
  auto fma = [&](llvm::Value* p, llvm::Value* q, llvm::Value* r) {
    return b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {type}, {p, q, r});
  };
  std::vector<llvm::Value*> pairs;
  for (size_t k = 0; k < coefficients.size(); k += 2)
    pairs.push_back(k + 1 < coefficients.size() ? fma(c(coefficients[k + 1]), x, c(coefficients[k])) : c(coefficients[k]));
  llvm::Value* sum = pairs.back();
  for (size_t k = pairs.size() - 1; k-- > 0;) sum = fma(sum, xSquared, pairs[k]);
  return sum;
}

// roundeven(x * k) for |x * k| < 2^22 (2^51 in f64), by the rounding shift: fma(x, k, 1.5 * 2^23)
// rounds the exact product to an integer n held in the sum's low mantissa bits (`shifted`, whose
// bits are 0x4B400000 + n; in f64 the shift is 1.5 * 2^52), and subtracting the shift again gives
// n as a float. No float-to-int conversion, whose NaN result LLVM makes poison: a NaN passes
// through both. Fast-math flags are cleared for the two, since reassociating would fold the shift
// away.
struct RoundedProduct {
  llvm::Value* n;        // the integer, as a float
  llvm::Value* shifted;  // n + the shift
};
constexpr double kRoundingShift = 12582912.0;  // 1.5 * 2^23
constexpr double kRoundingShiftF64 = 6755399441055744.0;  // 1.5 * 2^52
constexpr uint32_t kRoundingShiftBits = 0x4B400000;
RoundedProduct roundedProduct(llvm::IRBuilder<>& b, llvm::Value* x, double k) {
  llvm::IRBuilder<>::FastMathFlagGuard exact(b);
  b.clearFastMathFlags();
  llvm::Type* type = x->getType();
  llvm::Value* shift = llvm::ConstantFP::get(type, type->getScalarType()->isDoubleTy() ? kRoundingShiftF64 : kRoundingShift);
  llvm::Value* shifted = b.CreateIntrinsic(llvm::Intrinsic::fma, {type}, {x, llvm::ConstantFP::get(type, k), shift});
  return {b.CreateFSub(shifted, shift), shifted};
}

// fraction * 2^n for n an integer in [-150, 128], rounded once: where the result overflows it is
// inf, where it is subnormal it is rounded once.
using ScaleFn = std::function<llvm::Value*(llvm::IRBuilder<>& b, llvm::Value* fraction, const RoundedProduct& n)>;

// As two normal factors, from the shifted sum's bits with no conversion: E = n + 254 (those bits
// less 0x4B400000 - 254) and h = E / 2 give 2^(h - 127) and 2^(E - h - 127), both biased
// exponents in [52, 191] for n in [-150, 128], whose product is 2^n: the first multiply is
// exact, the second rounds. The factors' bits are h << 23 and (E << 23) - (h << 23).
llvm::Value* scaleInTwoSteps(llvm::IRBuilder<>& b, llvm::Value* fraction, const RoundedProduct& n) {
  llvm::Type* type = fraction->getType();
  llvm::Type* intType = type->getWithNewType(b.getInt32Ty());
  auto i32 = [intType](uint32_t v) { return llvm::ConstantInt::get(intType, v); };
  llvm::Value* biased = b.CreateSub(b.CreateBitCast(n.shifted, intType), i32(kRoundingShiftBits - 254));
  llvm::Value* first = b.CreateShl(b.CreateLShr(biased, 1), 23);
  llvm::Value* second = b.CreateSub(b.CreateShl(biased, 23), first);
  return b.CreateFMul(b.CreateFMul(fraction, b.CreateBitCast(first, type)), b.CreateBitCast(second, type));
}

// AVX-512's vscalefps (with AVX-512VL for 4 and 8 lanes): fraction * 2^n in one instruction,
// rounded once, subnormals and overflow included; a vector variant's (late_inline.h) alone.
llvm::Value* scaleByScalef(llvm::IRBuilder<>& b, llvm::Value* fraction, const RoundedProduct& rounded) {
  llvm::Value* n = rounded.n;
  unsigned lanes = llvm::cast<llvm::FixedVectorType>(fraction->getType())->getNumElements();
  llvm::Value* all = lanes == 16 ? b.getInt16(0xffff) : b.getInt8(0xff);
  llvm::Value* passThrough = llvm::PoisonValue::get(fraction->getType());
  if (lanes == 16)
    return b.CreateIntrinsic(llvm::Intrinsic::x86_avx512_mask_scalef_ps_512, {},
                             {fraction, n, passThrough, all, b.getInt32(4)});  // 4: the current rounding mode
  return b.CreateIntrinsic(lanes == 8 ? llvm::Intrinsic::x86_avx512_mask_scalef_ps_256 : llvm::Intrinsic::x86_avx512_mask_scalef_ps_128,
                           {}, {fraction, n, passThrough, all});
}

// Subnormal intermediates cost a microcode assist of ~150 cycles per instruction that makes or
// reads one (x86 without FTZ/DAZ, kiln's IEEE default), and a polynomial's powers of a tiny
// argument are subnormal long before its result is: tanh over f32 values near 1e-20 ran 20x
// slower than over ordinary ones, exp under a softmax's -1e9 mask 8x. Where every power past the
// first is below half an ulp of the constant term (|v| < 2^-30 in f32, 2^-60 in f64), the
// polynomial's result is its constant term, which it also is at v = 0: evaluating it at 0 there
// gives the same bits with no subnormal step. `small` is decided on a value off the chain of
// dependent instructions (the function's argument); the select costs one instruction on it. It
// must come before the multiply that would make the subnormal: after it, only AVX-512's masked
// multiply keeps the lanes from computing it (AVX2 blends afterwards).
llvm::Value* zeroWhereTiny(llvm::IRBuilder<>& b, llvm::Value* small, llvm::Value* v) {
  return b.CreateSelect(small, llvm::Constant::getNullValue(v->getType()), v);
}
llvm::Value* isTiny(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* type = x->getType();
  double bound = type->getScalarType()->isDoubleTy() ? 0x1p-60 : 0x1p-30;
  return b.CreateFCmpOLT(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x), llvm::ConstantFP::get(type, bound));
}

// 2^t for f32 t = x * (kHigh + kLow) as 2^n 2^f: n = roundeven(x kHigh), f = t - n computed with
// the constant split in two (so f keeps its low bits), 2^f by a degree-6 polynomial on [-1/2, 1/2]
// fitted for kiln (least squares on the relative error: 1 ulp), then scaled by 2^n (n anywhere
// in [-150, 128]). f is taken as 0 where x is tiny (zeroWhereTiny: |f| < 1.5 |x| when n = 0), and
// the fraction as 0 where `zero` (a result that rounds to 0: 0 times the scale is exact, where the
// fraction times 2^-150 underflows).
llvm::Value* exp2Split(llvm::IRBuilder<>& b, llvm::Value* x, double kHigh, double kLow, const ScaleFn& scale,
                       llvm::Value* zero) {
  llvm::Type* type = x->getType();
  auto c = [type](double v) { return llvm::ConstantFP::get(type, v); };
  RoundedProduct n = roundedProduct(b, x, kHigh);
  llvm::Value* f = b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {type},
                                     {x, c(kLow), b.CreateIntrinsic(llvm::Intrinsic::fma, {type}, {x, c(kHigh), b.CreateFNeg(n.n)})});
  f = zeroWhereTiny(b, isTiny(b, x), f);
  static constexpr double kExp2[] = {1.0, 0.6931471824645996, 0.24022646248340607, 0.05550328642129898,
                                     0.009618489071726799, 0.0013399932067841291, 0.0001534580806037411};
  return scale(b, zeroWhereTiny(b, zero, polynomial(b, kExp2, f, b.CreateFMul(f, f))), n);
}

// The float nearest `k`, and the float nearest what it leaves: k = high + low to twice f32's bits.
std::pair<double, double> splitConstant(double k) {
  double high = static_cast<float>(k);
  return {high, static_cast<float>(k - high)};
}

// min(x, hi) then max(., lo), each as `bound < v ? bound : v` (and `>`), which passes a NaN v
// through: the form x86's minps/maxps compute in one instruction each. Neither exp nor tanh
// converts a float to an integer (roundedProduct), so the NaN goes on through every step.
llvm::Value* clampKeepingNaN(llvm::IRBuilder<>& b, llvm::Value* x, double lo, double hi) {
  llvm::Type* type = x->getType();
  llvm::Value* low = llvm::ConstantFP::get(type, lo);
  llvm::Value* high = llvm::ConstantFP::get(type, hi);
  llvm::Value* capped = b.CreateSelect(b.CreateFCmpOLT(high, x), high, x);
  return b.CreateSelect(b.CreateFCmpOGT(low, capped), low, capped);
}

// f32 exp in a few vector instructions and no call: e^x = 2^(x log2 e) by exp2Split over the whole
// range. x is clamped to [-104, 89], beyond which e^x is 0 or inf in f32 (the clamped value gives
// them too); a NaN passes every step (the polynomial's NaN times the scale factors, whatever its
// bits made of them). Without the earlier select that guarded a float-to-int conversion, the
// softmax of [2048,2048] f32 on a 2-core Zen 3, eight alternations: median 2.22 -> 2.03 ms.
// tests/unit/codegen/vector_math_test.cpp measures it over the whole float range.
// Where x <= -104 the result is 0 (e^-104 is below half the least subnormal), and the fraction is
// zeroed (exp2Split) so that a masked softmax's -1e9 or -inf lanes underflow nowhere.
llvm::Value* expInline(llvm::IRBuilder<>& b, llvm::Value* x, const ScaleFn& scale = scaleInTwoSteps) {
  auto [high, low] = splitConstant(1.4426950408889634);  // log2(e)
  llvm::Value* zero = b.CreateFCmpOLE(x, llvm::ConstantFP::get(x->getType(), -104.0));
  return exp2Split(b, clampKeepingNaN(b, x, -104.0, 89.0), high, low, scale, zero);
}

// tanh in a few vector instructions and no call, f32 or f64: tanh x = q / (q + 2) with q = e^(2x)
// - 1, for either sign (q is in (-1, 0] for x <= 0, q + 2 in (1, 2]: no cancellation). x is
// clamped to [-10, 10] in f32, [-20, 20] in f64, past which tanh rounds to +-1 (from 9.01 and
// 19.06); a NaN passes the clamp and every step. q by a reduction in natural units: 2x = n ln 2 + r
// with r in [-ln2/2, ln2/2], kept as h = r/2 (so 2x is never formed), and e^r - 1 = r P(r): in f32
// P of degree 5 fitted for kiln (least squares on the relative error), in f64 the Taylor series to
// degree 12, whose first term left out is under 0.1 ulp there; in h, the same polynomial with its
// coefficients scaled by powers of two (the same bits). Then q = 2^n (e^r - 1) + (2^n - 1); h = x
// exactly while |2x| < ln2/2, so small |x| keep every bit. At most 3 ulp in either type
// (tests/unit/codegen/vector_math_test.cpp measures both over their whole range). n is rounded by
// the rounding shift (roundedProduct): the sum's low mantissa bits are then n, so 2^n is those bits
// shifted into the exponent field, with no float-to-int conversion (whose NaN result LLVM makes
// poison) and so no NaN guard. q + 2 is formed beside q, as 2^n (e^r - 1) + (2^n + 1), not after
// it: these loops are bound by their chain of dependent instructions. One formula for every x:
// the earlier form computed a small-|x| polynomial and 1 - 2 / (e^(2|x|) + 1) for every lane and
// selected one, ~20% slower. f64 tanh was libmvec's before: 1.5-1.7 ms over 2M f64 where jax.jit
// takes 1.0 (2-core Sapphire Rapids).
llvm::Value* tanhInline(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* type = x->getType();
  const bool f64 = type->getScalarType()->isDoubleTy();
  auto c = [type](double v) { return llvm::ConstantFP::get(type, v); };
  auto fma = [&](llvm::Value* p, llvm::Value* q, llvm::Value* r) { return b.CreateIntrinsic(llvm::Intrinsic::fma, {type}, {p, q, r}); };
  llvm::Value* clamped = f64 ? clampKeepingNaN(b, x, -20.0, 20.0) : clampKeepingNaN(b, x, -10.0, 10.0);
  auto [n, shifted] = roundedProduct(b, clamped, 2 * 1.4426950408889634);  // 2x log2(e)
  // h = x - n ln2/2 as n (-high) + x, then n (-low) + h, with ln 2 / 2 = high + low split so that
  // n high is exact (|n| <= 58) and both parts are positive: for n = +0 each product is -0, and
  // -0 + x keeps a -0 x's sign (tanh(-0) = -0). (Negating n instead lets the backend fold the
  // negation into the sum above.) In f32 high is a float below ln2/2, in f64 its first 40 bits.
  constexpr double kHalfLn2 = 0.6931471805599453 / 2;
  double high;
  if (f64) {
    high = std::ldexp(std::floor(std::ldexp(kHalfLn2, 41)), -41);
  } else {
    float h32 = static_cast<float>(kHalfLn2);
    high = h32 > kHalfLn2 ? std::nextafter(h32, 0.0f) : h32;
  }
  constexpr long double kHalfLn2Long = 0.693147180559945309417232121458176568L / 2;
  double low = f64 ? static_cast<double>(kHalfLn2Long - high) : kHalfLn2 - high;
  llvm::Value* h = fma(n, c(-low), fma(n, c(-high), clamped));
  // P(r)'s coefficients p_k as 2^(k+1) p_k: h P'(h) = (r/2) (2 P(r)) = r P(r).
  static constexpr double kExpm1F32[] = {1.0 * 2, 0.4999999701976776 * 4, 0.16666506230831146 * 8,
                                         0.041667137295007706 * 16, 0.008369074203073978 * 32,
                                         0.0013888871762901545 * 64};
  static const std::vector<double> kExpm1F64 = [] {
    std::vector<double> p;  // 2^(k+1) / (k+1)!
    double factorial = 1;
    for (int k = 0; k <= 12; ++k) p.push_back(std::ldexp(1.0, k + 1) / (factorial *= k + 1));
    return p;
  }();
  llvm::ArrayRef<double> expm1 = f64 ? llvm::ArrayRef<double>(kExpm1F64) : llvm::ArrayRef<double>(kExpm1F32);
  // h P'(h), not h + h^2 Q(h): h^2 Q is +0 for h = -0, and +0 + -0 would lose the sign again.
  // h^2 from max(|h|, 2^-40) (f32; 2^-80 in f64): h^2 is subnormal for |h| near 1e-20, and
  // below the bound every term with h^2 is under half an ulp of P's constant term, so P has the
  // same bits. Two instructions (zeroWhereTiny's form of the guard took three: tanh over
  // f32[4096,1024] 0.68 -> 0.77 ms; this one 0.72).
  llvm::Value* hAbs = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, h);
  llvm::Value* hFloor = c(f64 ? 0x1p-80 : 0x1p-40);
  llvm::Value* hBounded = b.CreateSelect(b.CreateFCmpOGT(hAbs, hFloor), hAbs, hFloor);
  llvm::Value* fraction = b.CreateFMul(h, polynomial(b, expm1, h, b.CreateFMul(hBounded, hBounded)));
  // The shifted sum's bits are the shift's + n; its top bits leave with the shift into the
  // exponent field.
  const unsigned bits = f64 ? 64 : 32;
  const int mantissa = f64 ? 52 : 23, bias = f64 ? 1023 : 127;
  llvm::Type* intType = type->getWithNewType(b.getIntNTy(bits));
  llvm::Value* exponent = b.CreateShl(b.CreateAdd(b.CreateBitCast(shifted, intType), llvm::ConstantInt::get(intType, bias)), mantissa);
  llvm::Value* scale = b.CreateBitCast(exponent, type);
  // 2^n - 1 as -(1 - 2^n): the same value (rounding to nearest is symmetric), but -0 for n = 0, so
  // a -0 fraction stays -0.
  llvm::Value* q = fma(scale, fraction, b.CreateFNeg(b.CreateFSub(c(1.0), scale)));
  llvm::Value* qPlus2 = fma(scale, fraction, b.CreateFAdd(scale, c(1.0)));
  return b.CreateFDiv(q, qPlus2);
}

// f32 log in vector instructions and no call. libmvec's logf takes a slow path for every vector
// with a zero, a negative or a subnormal lane (a scalar call per lane): over f32[4096,1024] with
// half its values 0 (a masked probability's log) 7.2 ms, with half negative 16 ms, against 0.8
// over positive values; jax.jit 1.7-2.5 ms whatever the values. Here every lane takes the same
// steps, as fdlibm's logf: x = 2^n m with m in [sqrt(1/2), sqrt(2)) (from the bits, subnormals
// scaled by 2^23 first), f = m - 1 (exact), s = f / (2 + f), z = s^2, and log(1 + f) = f - (h -
// s (h + R)) with h = f^2 / 2 and R = z P(z), P the series of 2 atanh(s) / s - 2 over z to z^3
// (the first term left out is under 1e-10 of the result for |s| <= 0.172); then n ln2 with ln 2
// split so that n times its high part is exact. 0 gives -inf, a negative NaN, +inf itself, and a
// NaN passes through. At most 1 ulp in a simulation of these f32 steps over 6M values (libmvec's
// measured 4).
llvm::Value* logInline(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* type = x->getType();
  llvm::Type* intType = type->getWithNewType(b.getInt32Ty());
  auto c = [type](double v) { return llvm::ConstantFP::get(type, v); };
  auto i32 = [intType](int32_t v) { return llvm::ConstantInt::get(intType, static_cast<uint64_t>(v), true); };
  auto fma = [&](llvm::Value* p, llvm::Value* q, llvm::Value* r) { return b.CreateIntrinsic(llvm::Intrinsic::fma, {type}, {p, q, r}); };
  llvm::Value* subnormal = b.CreateFCmpOLT(x, c(0x1p-126));  // zeros and negatives too: selected away below
  llvm::Value* scaled = b.CreateSelect(subnormal, b.CreateFMul(x, c(0x1p23)), x);
  llvm::Value* bits = b.CreateBitCast(scaled, intType);
  // e = the exponent that puts m in [sqrt(1/2), sqrt(2)): (bits - bits(sqrt(1/2))) >> 23.
  llvm::Value* e = b.CreateAShr(b.CreateSub(bits, i32(0x3F3504F3)), 23);
  llvm::Value* m = b.CreateBitCast(b.CreateSub(bits, b.CreateShl(e, 23)), type);
  llvm::Value* n = b.CreateSIToFP(b.CreateAdd(e, b.CreateSelect(subnormal, i32(-23), i32(0))), type);
  llvm::Value* f = b.CreateFSub(m, c(1.0));
  llvm::Value* s = b.CreateFDiv(f, b.CreateFAdd(f, c(2.0)));
  llvm::Value* z = b.CreateFMul(s, s);
  llvm::Value* p = fma(fma(fma(c(2.0 / 9), z, c(2.0 / 7)), z, c(2.0 / 5)), z, c(2.0 / 3));
  llvm::Value* r = b.CreateFMul(z, p);
  llvm::Value* h = b.CreateFMul(b.CreateFMul(f, c(0.5)), f);
  llvm::Value* logM = b.CreateFSub(f, b.CreateFSub(h, b.CreateFMul(s, b.CreateFAdd(h, r))));
  constexpr double kLn2High = 0.693145751953125;  // 16 bits: n ln2High is exact for |n| <= 149
  llvm::Value* y = fma(n, c(kLn2High), fma(n, c(0.6931471805599453 - kLn2High), logM));
  y = b.CreateSelect(b.CreateFCmpOLT(x, c(0.0)), c(std::nan("")), y);
  y = b.CreateSelect(b.CreateFCmpOEQ(x, c(0.0)), c(-INFINITY), y);
  y = b.CreateSelect(b.CreateFCmpOEQ(x, c(INFINITY)), x, y);
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, y);
}

// f32 erf in vector instructions and no call, by a table of eight polynomials looked up per lane
// with a register permute. With a = min(|x|, 4 - 2^-22) (erf rounds to 1 in f32 from 3.92),
// interval k = round(2a - 1/2) in 0..7 covers a in [k/2, k/2 + 1/2]:
// - k = 0: a P(a^2), P of degree 5 fitted to erf(x)/x (to 1.3e-11 relative);
// - k >= 1: Q_k(a - c_k) about the centre c_k = k/2 + 1/4, Q_k of degree 7 fitted to erf (to
//   2e-8 absolute, a third of an ulp below 1), its constant term erf(c_k) rounded to f32, so the
//   last multiply-add adds the small rest to it (a - c_k is exact: Sterbenz).
// Both forms are one Horner chain in v = (a - c_k) m with m = a for k = 0 (c_0 = 0: v = a^2) and 1
// above, times m; then x's sign. The index is the low bits of the rounding shift's sum (no
// float-to-int conversion, whose NaN LLVM makes poison); each of the 9 lookups (the centre and 8
// coefficients) is one vpermps on AVX2 and AVX-512 (lookupEight), the scalar form too, so every lane
// of a loop gets the same bits. A NaN passes the clamp and every step. At most 2 ulp in a
// simulation of these steps; tests/unit/codegen/vector_math_test.cpp measures it over the whole
// float range. All fits are kiln's own (least squares with Lawson's reweighting). The form before
// computed two polynomials for every lane (degree 7 in a^2 below 1, degree 14 above) and selected
// one: 22 multiply-adds a vector, and with AVX2's 16 registers ~25 constant loads; over 4M f32 on
// AVX2 1.22-1.36 ms where XLA's AVX2 code takes 0.92.
constexpr float kErfCentres[8] = {0.0f, 0.75f, 1.25f, 1.75f, 2.25f, 2.75f, 3.25f, 3.75f};
constexpr float kErfCoefficients[8][8] = {  // [power of v][interval]
    {1.1283792f, 0.71115565f, 0.92290014f, 0.9866717f, 0.9985373f, 0.9998994f, 0.9999957f, 0.9999999f},
    {-0.37612638f, 0.64293104f, 0.23652112f, 0.052774996f, 0.007142319f, 0.0005862772f, 2.9189025e-05f, 8.814322e-07f},
    {0.11283773f, -0.4822036f, -0.29565504f, -0.0923604f, -0.016075386f, -0.0016148684f, -9.802063e-05f, -1.7691272e-06f},
    {-0.02686305f, 0.026788604f, 0.16753583f, 0.09015733f, 0.021724537f, 0.0027603852f, 0.00019581094f, 7.969915e-06f},
    {0.0051999465f, 0.15090305f, -0.0059917113f, -0.047929805f, -0.018869627f, -0.003148679f, -0.00015407355f, -7.818759e-05f},
    {-0.00076864654f, -0.05322388f, -0.047184914f, 0.006620066f, 0.01065942f, 0.0027561581f, 0.00031367477f, 1.8341269e-05f},
    {0.0f, -0.028961662f, 0.019108964f, 0.0072080246f, -0.0050701844f, -0.0028119243f, -0.0016598012f, 0.00065490615f},
    {0.0f, 0.017936222f, 0.003732284f, -0.005945072f, -0.0007167222f, 0.0006368181f, 0.00017324972f, 1.7060162e-05f},
};

// table[index & 7] for each lane of `index` (i32, or a vector of 4, 8 or 16 i32): vpermps, which
// reads an index's low three bits (AVX-512's 16-entry form the table twice over, so its fourth bit
// does not matter); 1 and 4 lanes widened to 8 and back, 16 without AVX-512 as two halves. Without
// AVX2 (an FMA host that lacks it), a tree of selects on the three bits.
llvm::Value* lookupEight(llvm::IRBuilder<>& b, const float (&table)[8], llvm::Value* index) {
  llvm::Type* f32 = b.getFloatTy();
  auto* vectorType = llvm::dyn_cast<llvm::FixedVectorType>(index->getType());
  const unsigned lanes = vectorType ? vectorType->getNumElements() : 1;
  llvm::Type* resultType = vectorType ? static_cast<llvm::Type*>(llvm::FixedVectorType::get(f32, lanes)) : f32;
  static const bool avx2 = hostHas("avx2");
  if (!avx2) {
    std::vector<llvm::Value*> level;
    for (float v : table) level.push_back(llvm::ConstantFP::get(resultType, v));
    for (unsigned bit = 0; level.size() > 1; ++bit) {
      llvm::Value* set = b.CreateICmpNE(b.CreateAnd(index, llvm::ConstantInt::get(index->getType(), 1u << bit)),
                                        llvm::ConstantInt::get(index->getType(), 0));
      std::vector<llvm::Value*> next;
      for (size_t k = 0; k < level.size(); k += 2) next.push_back(b.CreateSelect(set, level[k + 1], level[k]));
      level = std::move(next);
    }
    return level[0];
  }
  std::vector<llvm::Constant*> entries;
  for (float v : table) entries.push_back(llvm::ConstantFP::get(f32, v));
  if (lanes == 16 && hostHasAvx512()) {
    std::vector<llvm::Constant*> twice = entries;
    twice.insert(twice.end(), entries.begin(), entries.end());
    return b.CreateIntrinsic(llvm::Intrinsic::x86_avx512_permvar_sf_512, {}, {llvm::ConstantVector::get(twice), index});
  }
  llvm::Constant* eight = llvm::ConstantVector::get(entries);
  auto permute = [&](llvm::Value* indices) {
    return b.CreateIntrinsic(llvm::Intrinsic::x86_avx2_permps, {}, {eight, indices});
  };
  if (lanes == 8) return permute(index);
  if (lanes == 16) {
    llvm::Value* low = permute(b.CreateShuffleVector(index, {0, 1, 2, 3, 4, 5, 6, 7}));
    llvm::Value* high = permute(b.CreateShuffleVector(index, {8, 9, 10, 11, 12, 13, 14, 15}));
    return b.CreateShuffleVector(low, high, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15});
  }
  llvm::Value* zeros = llvm::Constant::getNullValue(llvm::FixedVectorType::get(b.getInt32Ty(), 8));
  if (lanes == 1) return b.CreateExtractElement(permute(b.CreateInsertElement(zeros, index, uint64_t{0})), uint64_t{0});
  llvm::Value* wide = b.CreateShuffleVector(index, llvm::Constant::getNullValue(index->getType()), {0, 1, 2, 3, 4, 4, 4, 4});
  return b.CreateShuffleVector(permute(wide), {0, 1, 2, 3});
}

llvm::Value* erfByTable(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* type = x->getType();
  auto c = [type](double v) { return llvm::ConstantFP::get(type, v); };
  auto fma = [&](llvm::Value* p, llvm::Value* q, llvm::Value* r) { return b.CreateIntrinsic(llvm::Intrinsic::fma, {type}, {p, q, r}); };
  llvm::Value* magnitude = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  const double last = std::nextafter(4.0f, 0.0f);  // a below 4 keeps k at 7
  llvm::Value* a = b.CreateSelect(b.CreateFCmpOLT(c(last), magnitude), c(last), magnitude);
  llvm::Value* shifted;
  {
    llvm::IRBuilder<>::FastMathFlagGuard exact(b);  // reassociating would fold the shift away
    b.clearFastMathFlags();
    shifted = b.CreateFAdd(fma(a, c(2.0), c(-0.5)), c(kRoundingShift));  // k + the shift; 2a - 1/2 is exact
  }
  llvm::Value* index = b.CreateBitCast(shifted, type->getWithNewType(b.getInt32Ty()));
  llvm::Value* t = b.CreateFSub(a, lookupEight(b, kErfCentres, index));
  llvm::Value* m = b.CreateSelect(b.CreateFCmpOLE(a, c(0.5)), a, c(1.0));  // k = 0 exactly where a <= 1/2
  // v = a^2 where k = 0: t taken as 0 where a is tiny, before the multiply (a select after it left
  // the multiply making a subnormal, unless AVX-512 masked it away).
  llvm::Value* v = b.CreateFMul(zeroWhereTiny(b, isTiny(b, a), t), m);
  llvm::Value* sum = lookupEight(b, kErfCoefficients[7], index);
  for (int power = 6; power >= 0; --power) sum = fma(sum, v, lookupEight(b, kErfCoefficients[power], index));
  return b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, b.CreateFMul(sum, m), x);
}

}  // namespace

llvm::Value* CpuTarget::emitMath(llvm::IRBuilder<>& b, MathFn fn, llvm::ArrayRef<llvm::Value*> args) {
  llvm::Type* type = args[0]->getType();
  // kiln's own formulas reduce their arguments with fused multiply-adds: on a CPU without FMA
  // (before Haswell; KILN_CPU_ISA=sse4.2) each would be a call to libm's fma, so there the
  // functions are libm's, through libmvec.
  static const bool ownFormulas = hostHas("fma");
  const bool inline32 = type->isFloatTy() && (fn == MathFn::Exp || fn == MathFn::Erf || fn == MathFn::Log);
  if (ownFormulas && (inline32 || fn == MathFn::Tanh)) ++inlineMath_;
  if (ownFormulas && fn == MathFn::Exp && type->isFloatTy()) {
    // With AVX-512, the loop vectoriser's widths scale by vscalefps (one instruction for the
    // eight of scaleInTwoSteps; the same bits): through vector variants, inlined after it.
    if (!hostHasScalef()) return expInline(b, args[0]);
    return callWithVectorVariants(
        b, "kiln_expf", args[0], [](llvm::IRBuilder<>& s, llvm::Value* x) { return expInline(s, x); },
        [](llvm::IRBuilder<>& v, llvm::Value* x) { return expInline(v, x, scaleByScalef); });
  }
  if (ownFormulas && fn == MathFn::Tanh) return tanhInline(b, args[0]);
  if (ownFormulas && fn == MathFn::Log && type->isFloatTy()) return logInline(b, args[0]);
  if (ownFormulas && fn == MathFn::Erf && type->isFloatTy())  // the scalar form looks up as the vectors do
    return callWithVectorVariants(b, "kiln_erff", args[0], erfByTable, erfByTable);
  if (llvm::Intrinsic::ID id = intrinsicId(fn); id != llvm::Intrinsic::not_intrinsic)
    return b.CreateIntrinsic(id, {type}, args);
  return callLibm(b, libmName(fn, type->isFloatTy()), args);
}

llvm::Value* CpuTarget::shuffleXor(llvm::IRBuilder<>&, llvm::Value*, int) {
  internalError(__FILE__, __LINE__, "the CPU target runs one lane per row: nothing to shuffle");
}

llvm::GlobalVariable* CpuTarget::sharedArray(llvm::IRBuilder<>&, llvm::Type*, uint64_t, const std::string&) {
  internalError(__FILE__, __LINE__, "the CPU target has no shared memory");
}

void CpuTarget::syncBlock(llvm::IRBuilder<>&) {
  internalError(__FILE__, __LINE__, "the CPU target has no thread blocks");
}

namespace {

// On hosts with AVX-512, kernels vectorise 16 floats wide. LLVM's tuning for some of them (Zen 4
// among them) prefers 256-bit vectors, which suits code that mixes vector and scalar work; kiln's
// kernels are long streaming loops, where the wider vectors halve the instructions issued: on the
// 2-core Zen 4 sandbox, alternating runs, the elementwise chain with tanh 2.6-3.5 -> 2.3-2.5 ms,
// softmax 5.0-7.6 -> 3.7-4.1 ms, layer norm 1.35-1.42 -> 1.18-1.24 ms ([4096,1024] and
// [2048,2048] f32).
bool hostHasAvx512() {
  static const bool avx512 = hostHas("avx512f");
  return avx512;
}

// vscalefps at 512 bits (AVX-512F) and at 128 and 256 (AVX-512VL): every width the loop
// vectoriser may pick.
bool hostHasScalef() {
  static const bool scalef = hostHas("avx512f") && hostHas("avx512vl");
  return scalef;
}

void preferWideVectors(llvm::Function& f) {
  if (hostHasAvx512()) f.addFnAttr("prefer-vector-width", "512");
}

// [begin, end) row by row: for each row the chunk touches, an inner loop over its columns, so the
// loop vectoriser sees a plain counted loop whose column is the induction variable (a broadcast
// input's index), and never a vector that crosses a row. With `breaks` (ItemPart::columnBreaks),
// one such loop per run of columns between them, each with its own copy of the body. Ends
// branching to `exit`.
void emitRowLoops(llvm::IRBuilder<>& b, llvm::Value* begin, llvm::Value* end, int64_t rowLength,
                  const std::vector<int64_t>& breaks, const TargetHooks& target, llvm::BasicBlock* exit,
                  const std::function<void(llvm::Value* item, llvm::Value* column)>& body) {
  llvm::LLVMContext& ctx = b.getContext();
  llvm::Function* f = b.GetInsertBlock()->getParent();
  llvm::BasicBlock* entry = b.GetInsertBlock();
  auto* rowHeader = llvm::BasicBlock::Create(ctx, "row", f);
  auto* rowLatch = llvm::BasicBlock::Create(ctx, "row.next");  // placed by columnLoop
  llvm::Value* length = b.getInt64(static_cast<uint64_t>(rowLength));
  b.CreateCondBr(b.CreateICmpSLT(begin, end), rowHeader, exit);

  b.SetInsertPoint(rowHeader);
  llvm::PHINode* at = b.CreatePHI(b.getInt64Ty(), 2, "at");
  at->addIncoming(begin, entry);
  llvm::Value* rowStart = b.CreateMul(b.CreateUDiv(at, length), length, "row.start", true, true);
  llvm::Value* rowEnd = b.CreateAdd(rowStart, length, "row.end", true, true);
  llvm::Value* stop = b.CreateSelect(b.CreateICmpSLT(end, rowEnd), end, rowEnd, "stop");
  llvm::Value* firstColumn = b.CreateSub(at, rowStart, "column.first", true, true);
  llvm::Value* lastColumn = b.CreateSub(stop, rowStart, "column.end", true, true);
  // Columns [from, to) of the row (`span` of them at most), then on to `done`.
  auto columnLoop = [&](llvm::Value* from, llvm::Value* to, int64_t span, bool mayBeEmpty, llvm::BasicBlock* done) {
    llvm::BasicBlock* before = b.GetInsertBlock();
    auto* columns = llvm::BasicBlock::Create(ctx, "column", f);
    if (!done->getParent()) done->insertInto(f);  // the row's latch, right after its last column loop
    if (mayBeEmpty) b.CreateCondBr(b.CreateICmpSLT(from, to), columns, done);
    else b.CreateBr(columns);
    b.SetInsertPoint(columns);
    llvm::PHINode* column = b.CreatePHI(b.getInt64Ty(), 2, "column");
    column->addIncoming(from, before);
    int64_t mathBefore = target.inlineMathEmitted();
    body(b.CreateAdd(rowStart, column, "i", true, true), column);
    llvm::Value* nextColumn = b.CreateAdd(column, b.getInt64(1), "column.next", true, true);
    column->addIncoming(nextColumn, b.GetInsertBlock());
    setLoopHints(b.CreateCondBr(b.CreateICmpSLT(nextColumn, to), columns, done), 0, target.loopInterleave(span, mathBefore));
  };
  if (breaks.empty()) {
    columnLoop(firstColumn, lastColumn, rowLength, /*mayBeEmpty=*/false, rowLatch);
  } else {
    // Run k: the chunk's columns within [bounds[k], bounds[k + 1]); the runs' bounds are
    // constants, so inside one LLVM knows which side of each break every column is on.
    std::vector<int64_t> bounds{0};
    bounds.insert(bounds.end(), breaks.begin(), breaks.end());
    bounds.push_back(rowLength);
    for (size_t k = 0; k + 1 < bounds.size(); ++k) {
      llvm::Value* low = b.getInt64(static_cast<uint64_t>(bounds[k]));
      llvm::Value* high = b.getInt64(static_cast<uint64_t>(bounds[k + 1]));
      llvm::Value* from = b.CreateSelect(b.CreateICmpSGT(firstColumn, low), firstColumn, low, "run.first");
      llvm::Value* to = b.CreateSelect(b.CreateICmpSLT(lastColumn, high), lastColumn, high, "run.end");
      llvm::BasicBlock* done = k + 2 == bounds.size() ? rowLatch : llvm::BasicBlock::Create(ctx, "column.run", f);
      columnLoop(from, to, bounds[k + 1] - bounds[k], /*mayBeEmpty=*/true, done);
      b.SetInsertPoint(done);
    }
  }
  b.SetInsertPoint(rowLatch);
  at->addIncoming(stop, rowLatch);
  b.CreateCondBr(b.CreateICmpSLT(stop, end), rowHeader, exit);
}

// A counted loop `for (v = from; v < to; ++v) body(v)` (from < to is not assumed), continuing in
// a new block after it. The body may open blocks of its own; the loop goes on from wherever it ended.
void emitCountedLoop(llvm::IRBuilder<>& b, llvm::Value* from, llvm::Value* to, const char* name,
                     const std::function<void(llvm::Value* v)>& body) {
  llvm::LLVMContext& ctx = b.getContext();
  llvm::Function* f = b.GetInsertBlock()->getParent();
  llvm::BasicBlock* entry = b.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx, name, f);
  auto* after = llvm::BasicBlock::Create(ctx, std::string(name) + ".end", f);
  b.CreateCondBr(b.CreateICmpSLT(from, to), header, after);
  b.SetInsertPoint(header);
  llvm::PHINode* v = b.CreatePHI(b.getInt64Ty(), 2, name);
  v->addIncoming(from, entry);
  body(v);
  llvm::Value* next = b.CreateAdd(v, b.getInt64(1), std::string(name) + ".next", true, true);
  v->addIncoming(next, b.GetInsertBlock());
  b.CreateCondBr(b.CreateICmpSLT(next, to), header, after);
  b.SetInsertPoint(after);
}

// [begin, end) of a part that reads an input transposed (ItemPart::transposed): its whole rows in
// bands of kBandRows, each band column by column and, within a column, row by row. The input's
// row for that column is read contiguously, and the band's output rows (kBandRows cache lines at a
// time) stay in cache until they are full; row by row, every element of an output row would read
// another input row, a cache line and often a page apart. Partial rows at either end go row by row.
// Ends branching to `exit`.
constexpr int64_t kBandRows = 32;
// Rows this short go row by row instead: one row is a few bytes of output, and the input rows,
// one per column, are read side by side.
constexpr int64_t kShortRow = 4;
void emitBandLoops(llvm::IRBuilder<>& b, llvm::Value* begin, llvm::Value* end, int64_t rowLength,
                   const TargetHooks& target, llvm::BasicBlock* exit,
                   const std::function<void(llvm::Value* item, llvm::Value* column)>& body) {
  llvm::LLVMContext& ctx = b.getContext();
  llvm::Function* f = b.GetInsertBlock()->getParent();
  llvm::Value* length = b.getInt64(static_cast<uint64_t>(rowLength));
  // Whole rows [firstRow, lastRow): the first row starting at or after begin, the last ending by
  // end. A chunk that misses the part has end < begin, even end < 0: none then.
  llvm::Value* firstRow = b.CreateUDiv(b.CreateAdd(begin, b.getInt64(static_cast<uint64_t>(rowLength - 1))), length);
  llvm::Value* lastRow = b.CreateSDiv(end, length);
  llvm::Value* wholeRows = b.CreateAnd(b.CreateICmpSLT(begin, end), b.CreateICmpSLT(firstRow, lastRow));
  llvm::Value* headEnd = b.CreateSelect(wholeRows, b.CreateMul(firstRow, length), end);
  llvm::Value* tailBegin = b.CreateSelect(wholeRows, b.CreateMul(lastRow, length), end);
  auto* bands = llvm::BasicBlock::Create(ctx, "bands", f);
  auto* tail = llvm::BasicBlock::Create(ctx, "tail", f);
  emitRowLoops(b, begin, headEnd, rowLength, {}, target, bands, body);
  b.SetInsertPoint(bands);
  llvm::Value* bandCount = b.CreateUDiv(b.CreateAdd(b.CreateSub(lastRow, firstRow), b.getInt64(kBandRows - 1)),
                                        b.getInt64(kBandRows));
  if (rowLength <= kShortRow) {
    // Rows of a few columns (an image's channels moved last): each row's columns in a loop of a
    // constant few trips, which LLVM unrolls, so the vectoriser widens the loop over rows: a
    // contiguous load per column, one interleaving store.
    emitCountedLoop(b, firstRow, b.CreateSelect(wholeRows, lastRow, firstRow), "short.row", [&](llvm::Value* row) {
      emitCountedLoop(b, b.getInt64(0), length, "short.column", [&](llvm::Value* column) {
        body(b.CreateAdd(b.CreateMul(row, length), column, "i", true, true), column);
      });
    });
    b.CreateBr(tail);
    b.SetInsertPoint(tail);
    emitRowLoops(b, tailBegin, end, rowLength, {}, target, exit, body);
    return;
  }
  emitCountedLoop(b, b.getInt64(0), b.CreateSelect(wholeRows, bandCount, b.getInt64(0)), "band", [&](llvm::Value* band) {
    llvm::Value* top = b.CreateAdd(firstRow, b.CreateMul(band, b.getInt64(kBandRows)));
    llvm::Value* bottom = b.CreateAdd(top, b.getInt64(kBandRows));
    bottom = b.CreateSelect(b.CreateICmpSLT(bottom, lastRow), bottom, lastRow);
    emitCountedLoop(b, b.getInt64(0), length, "band.column", [&](llvm::Value* column) {
      emitCountedLoop(b, top, bottom, "band.row", [&](llvm::Value* row) {
        body(b.CreateAdd(b.CreateMul(row, length), column, "i", true, true), column);
      });
    });
  });
  b.CreateBr(tail);
  b.SetInsertPoint(tail);
  emitRowLoops(b, tailBegin, end, rowLength, {}, target, exit, body);
}

// [begin, end) of a part whose transpose moves a short innermost input axis (ItemPart::movedExtent,
// `extent` elements, neighbours along it `stride` output elements apart), in the input's order.
// The items come in units of `extent` output rows that one run of input rows feeds, cut into
// blocks of columns (movedAxisBlock) so that a thread's chunk holds whole ones: item p is column
// c of output row t of unit u, p = (u * extent + t) * block + c. A unit goes column by column,
// each column's `extent` elements in a loop of constant trips, which LLVM unrolls: the vectoriser
// then widens the loop over columns into interleaved loads of the input rows and one contiguous
// store per output row. Items before the first whole unit and after the last go one at a time.
// Ends branching to `exit`.
int64_t movedAxisBlock(int64_t rowLength) {
  constexpr int64_t kMost = 4096, kLeast = 256;
  if (rowLength <= kMost) return rowLength;
  for (int64_t block = kMost; block >= kLeast; --block)
    if (rowLength % block == 0) return block;
  return rowLength;
}
void emitMovedAxisLoops(llvm::IRBuilder<>& b, llvm::Value* begin, llvm::Value* end, int64_t rowLength, int64_t extent,
                        int64_t stride, llvm::BasicBlock* exit,
                        const std::function<void(llvm::Value* item, llvm::Value* column)>& body) {
  auto i64 = [&b](int64_t v) { return b.getInt64(static_cast<uint64_t>(v)); };
  const int64_t block = movedAxisBlock(rowLength), unit = extent * block;
  const int64_t blocksPerRow = rowLength / block, rows = stride / rowLength;
  // Unit u's first output element (its row t = 0, its block's first column) and first column.
  auto unitStart = [&](llvm::Value* u) {
    llvm::Value* blockInRow = b.CreateURem(u, i64(blocksPerRow));
    llvm::Value* rowsBefore = b.CreateUDiv(u, i64(blocksPerRow));
    llvm::Value* row = b.CreateURem(rowsBefore, i64(rows));
    llvm::Value* outer = b.CreateUDiv(rowsBefore, i64(rows));
    llvm::Value* column = b.CreateMul(blockInRow, i64(block));
    llvm::Value* first = b.CreateAdd(b.CreateMul(outer, i64(extent * stride)), b.CreateAdd(b.CreateMul(row, i64(rowLength)), column));
    return std::pair{first, column};
  };
  auto one = [&](llvm::Value* p) {
    auto [first, column] = unitStart(b.CreateUDiv(p, i64(unit)));
    llvm::Value* within = b.CreateURem(p, i64(unit));
    llvm::Value* t = b.CreateUDiv(within, i64(block));
    llvm::Value* c = b.CreateURem(within, i64(block));
    body(b.CreateAdd(b.CreateAdd(first, b.CreateMul(t, i64(stride))), c), b.CreateAdd(column, c));
  };
  llvm::Value* nonEmpty = b.CreateICmpSLT(begin, end);
  llvm::Value* firstUnit = b.CreateUDiv(b.CreateAdd(begin, i64(unit - 1)), i64(unit));
  llvm::Value* lastUnit = b.CreateSelect(nonEmpty, b.CreateSDiv(end, i64(unit)), firstUnit);
  llvm::Value* whole = b.CreateAnd(nonEmpty, b.CreateICmpSLT(firstUnit, lastUnit));
  llvm::Value* headEnd = b.CreateSelect(whole, b.CreateMul(firstUnit, i64(unit)), end);
  llvm::Value* tailBegin = b.CreateSelect(whole, b.CreateMul(lastUnit, i64(unit)), end);
  emitCountedLoop(b, begin, headEnd, "moved.head", one);
  emitCountedLoop(b, firstUnit, b.CreateSelect(whole, lastUnit, firstUnit), "moved.unit", [&](llvm::Value* u) {
    auto [first, firstColumn] = unitStart(u);
    emitCountedLoop(b, i64(0), i64(block), "moved.column", [&](llvm::Value* c) {
      llvm::Value* column = b.CreateAdd(firstColumn, c, "column", true, true);
      emitCountedLoop(b, i64(0), i64(extent), "moved.row", [&](llvm::Value* t) {
        body(b.CreateAdd(b.CreateAdd(first, b.CreateMul(t, i64(stride))), c, "i", true, true), column);
      });
    });
  });
  emitCountedLoop(b, tailBegin, end, "moved.tail", one);
  b.CreateBr(exit);
}

// for (i = begin; i < end; ++i) body(i), then to `exit`.
void emitFlatLoop(llvm::IRBuilder<>& b, llvm::Value* begin, llvm::Value* end, llvm::BasicBlock* exit,
                  const std::function<void(llvm::Value* item)>& body) {
  emitCountedLoop(b, begin, end, "i", body);
  b.CreateBr(exit);
}

}  // namespace

bool CpuTarget::streamsOutput(int64_t outputBytes, int64_t readBytes, int64_t writtenBytes) const {
  return codegen::streamsOutput(outputBytes, readBytes, writtenBytes);
}

int CpuTarget::loopInterleave(int64_t trips, int64_t mathBefore) const {
  return inlineMath_ > mathBefore ? interleaveCount(trips, floatSumLanes()) : 0;
}

int64_t CpuTarget::rowsPerItem(const KernelGroup& group) const { return rowBlockRows(group, floatSumLanes()); }

int CpuTarget::floatSumLanes() const {
  static const int lanes = hostHasAvx512() ? 16 : hostHas("avx") ? 8 : 4;  // 512-, 256- or 128-bit vectors
  return lanes;
}

llvm::Function* CpuTarget::emitKernel(llvm::Module& module, const std::string& name,
                                       const std::vector<uint64_t>& bufferAlignments, int64_t numItems, int lanes,
                                       const std::vector<ItemPart>& parts, const WorkItemBodyFn& body) {
  const int numBuffers = static_cast<int>(bufferAlignments.size());
  KILN_INTERNAL_CHECK(lanes == 1, "the CPU target runs one lane per work item");
  llvm::LLVMContext& ctx = module.getContext();
  auto* ptrTy = llvm::PointerType::get(ctx, 0);
  auto* i64 = llvm::Type::getInt64Ty(ctx);
  auto* voidTy = llvm::Type::getVoidTy(ctx);

  // The loop lives in an always-inline helper whose buffer parameters are `noalias`: every buffer
  // is a distinct allocation (or a read-only slice), and when the inliner folds the helper into
  // the entry point it turns `noalias` into alias-scope metadata on the loads and stores. That is
  // what lets the loop vectorizer prove the output does not overlap the inputs.
  std::vector<llvm::Type*> loopParams(numBuffers + 1, ptrTy);
  loopParams.push_back(i64);
  loopParams.push_back(i64);
  auto* loop = llvm::Function::Create(llvm::FunctionType::get(voidTy, loopParams, false),
                                      llvm::GlobalValue::InternalLinkage, name + ".loop", module);
  loop->addFnAttr(llvm::Attribute::AlwaysInline);
  loop->addFnAttr(llvm::Attribute::NoUnwind);
  preferWideVectors(*loop);
  for (int i = 0; i <= numBuffers; ++i) {
    loop->addParamAttr(i, llvm::Attribute::NoAlias);
    loop->addParamAttr(i, llvm::Attribute::NoCapture);
  }
  {
    llvm::IRBuilder<> b(ctx);
    if (fastMath_) b.setFastMathFlags(llvm::FastMathFlags::getFast());
    auto* entry = llvm::BasicBlock::Create(ctx, "entry", loop);
    auto* exit = llvm::BasicBlock::Create(ctx, "exit", loop);
    llvm::Value* begin = loop->getArg(numBuffers + 1);
    llvm::Value* end = loop->getArg(numBuffers + 2);
    std::vector<llvm::Value*> buffers;
    for (int i = 0; i < numBuffers; ++i) buffers.push_back(loop->getArg(i));
    llvm::Value* status = loop->getArg(numBuffers);
    b.SetInsertPoint(entry);
    if (parts.empty()) {
      emitFlatLoop(b, begin, end, exit, [&](llvm::Value* item) { body(b, buffers, status, item, b.getInt64(0), nullptr, -1); });
    } else {
      // Each part: the chunk's share of it, [max(begin, start), min(end, start + items)), in the
      // part's own item numbers; a part the chunk misses has an empty range.
      int64_t start = 0;
      for (size_t p = 0; p < parts.size(); ++p) {
        llvm::BasicBlock* after = p + 1 == parts.size() ? exit : llvm::BasicBlock::Create(ctx, "part.next", loop);
        llvm::Value* first = b.getInt64(static_cast<uint64_t>(start));
        llvm::Value* stop = b.getInt64(static_cast<uint64_t>(start + parts[p].items));
        llvm::Value* lo = b.CreateSub(b.CreateSelect(b.CreateICmpSGT(begin, first), begin, first), first, "part.begin");
        llvm::Value* hi = b.CreateSub(b.CreateSelect(b.CreateICmpSLT(end, stop), end, stop), first, "part.end");
        int part = static_cast<int>(p);
        auto partBody = [&](llvm::Value* item, llvm::Value* column) {
          body(b, buffers, status, item, b.getInt64(0), column, part);
        };
        if (parts[p].rowLength > 1 && parts[p].movedExtent > 1)
          emitMovedAxisLoops(b, lo, hi, parts[p].rowLength, parts[p].movedExtent, parts[p].movedStride, after, partBody);
        else if (parts[p].rowLength > 1 && parts[p].transposed)
          emitBandLoops(b, lo, hi, parts[p].rowLength, *this, after, partBody);
        else if (parts[p].rowLength > 1)
          emitRowLoops(b, lo, hi, parts[p].rowLength, parts[p].columnBreaks, *this, after, partBody);
        else
          emitFlatLoop(b, lo, hi, after, [&](llvm::Value* item) { body(b, buffers, status, item, b.getInt64(0), nullptr, part); });
        b.SetInsertPoint(after);
        start += parts[p].items;
      }
    }
    b.SetInsertPoint(exit);
    b.CreateRetVoid();
  }

  // The entry point: unpack the buffer array and call the loop.
  auto* kernel = llvm::Function::Create(llvm::FunctionType::get(voidTy, {ptrTy, ptrTy, i64, i64}, false),
                                        llvm::GlobalValue::ExternalLinkage, name, module);
  kernel->addFnAttr(llvm::Attribute::NoUnwind);
  preferWideVectors(*kernel);
  kernel->getArg(0)->setName("buffers");
  kernel->getArg(1)->setName("status");
  kernel->getArg(2)->setName("begin");
  kernel->getArg(3)->setName("end");
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", kernel));
  std::vector<llvm::Value*> args;
  for (int i = 0; i < numBuffers; ++i) {
    llvm::Value* slot = b.CreateConstInBoundsGEP1_64(ptrTy, kernel->getArg(0), i);
    args.push_back(b.CreateLoad(ptrTy, slot, "buf" + std::to_string(i)));
  }
  args.push_back(kernel->getArg(1));
  args.push_back(kernel->getArg(2));
  args.push_back(kernel->getArg(3));
  static const bool x86 = llvm::Triple(llvm::sys::getProcessTriple()).isX86();  // the CPU target is the host
  if (!fastMath_ || !x86) {
    b.CreateCall(loop, args);
    b.CreateRetVoid();
    return kernel;
  }
  // --fast-math flushes subnormals to zero, as on the GPU (.ftz): MXCSR's FTZ (results) and DAZ
  // (operands) bits for the chunk this call runs, restored after it, so the thread's own code and
  // the libraries kiln calls (oneDNN) keep IEEE subnormals. Every instruction that would make or
  // read a subnormal otherwise costs a microcode assist: a loop whose values decay through the
  // subnormals (tanh(x a) 1000 times over f32[4096]) 80 -> 2 ms.
  for (llvm::Function* f : {kernel, loop}) f->addFnAttr("denormal-fp-math", "preserve-sign,preserve-sign");
  constexpr uint32_t kFlushToZero = 0x8000, kDenormalsAreZero = 0x0040;
  llvm::Value* saved = b.CreateAlloca(b.getInt32Ty(), nullptr, "mxcsr.saved");
  llvm::Value* flushing = b.CreateAlloca(b.getInt32Ty(), nullptr, "mxcsr.flushing");
  b.CreateIntrinsic(llvm::Intrinsic::x86_sse_stmxcsr, {}, {saved});
  b.CreateStore(b.CreateOr(b.CreateLoad(b.getInt32Ty(), saved), kFlushToZero | kDenormalsAreZero), flushing);
  b.CreateIntrinsic(llvm::Intrinsic::x86_sse_ldmxcsr, {}, {flushing});
  b.CreateCall(loop, args);
  b.CreateIntrinsic(llvm::Intrinsic::x86_sse_ldmxcsr, {}, {saved});
  b.CreateRetVoid();
  return kernel;
}

void initializeHostTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

Expected<std::unique_ptr<llvm::TargetMachine>> createHostTargetMachine(const CompileOptions& options) {
  if (!hostIsaCap().ok()) return hostIsaCap().error();
  llvm::orc::JITTargetMachineBuilder jtmb = hostMachineBuilder(options);
  auto tm = jtmb.createTargetMachine();
  if (!tm) return Error("cannot create a target machine for the host: " + llvm::toString(tm.takeError()));
  return std::move(*tm);
}

void configureModule(llvm::Module& module, const llvm::TargetMachine& tm) {
  module.setTargetTriple(tm.getTargetTriple().str());
  module.setDataLayout(tm.createDataLayout());
}

Status optimizeModule(llvm::Module& module, llvm::TargetMachine& tm) {
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(module, &os))
    return Error("internal error: the generated LLVM IR is invalid (a kiln bug): " + problems);

  // The TM gives the pipeline the host's TargetTransformInfo: vector widths and costs.
  runO3(module, tm,
        PipelineSettings{.loopVectorize = true,
                         .slpVectorize = true,
                         .targetCallbacks = false,
                         .libraryInfo = &cpuLibraryInfo(llvm::Triple(module.getTargetTriple()))});
  if (llvm::verifyModule(module, &os))
    return Error("internal error: LLVM's optimiser produced invalid IR: " + problems);
  return {};
}

std::string printModule(const llvm::Module& module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os, nullptr);
  return text;
}

Expected<std::string> emitCpuAssembly(llvm::Module& module, llvm::TargetMachine& tm) {
  // Codegen's IR passes rewrite the module they run on: work on a copy.
  std::unique_ptr<llvm::Module> copy = llvm::CloneModule(module);
  copy->setDataLayout(tm.createDataLayout());
  llvm::SmallString<0> text;
  llvm::raw_svector_ostream os(text);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile))
    return Error("the host target cannot emit assembly");
  pm.run(*copy);
  return std::string(text.str());
}

Expected<std::string> emitCpuObject(llvm::Module& module, llvm::TargetMachine& tm) {
  llvm::SmallString<0> bytes;
  llvm::raw_svector_ostream os(bytes);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile))
    return Error("the host target cannot emit object files");
  pm.run(module);
  return std::string(bytes.str());
}

Expected<std::string> emitCpuAssembly(llvm::Module& module) {
  auto tm = createHostTargetMachine(CompileOptions{});
  if (!tm) return tm.error();
  return emitCpuAssembly(module, **tm);
}

}  // namespace kiln::codegen
