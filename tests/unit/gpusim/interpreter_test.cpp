// The PTX interpreter on hand-written kernels with known results: divergence and reconvergence,
// per-lane loop trip counts, every shuffle mode with segments and partial masks, contended atomics,
// barriers and shared memory, calls, float and integer semantics. The checkers are tested in
// checkers_test.cpp.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "interpreter_fixture.h"

namespace gpusim {
namespace {

// out[tid] = tid odd ? tid * 3 : tid + 100, then a warp-wide butterfly sum after the paths meet:
// the shuffle must see all 32 lanes again.
TEST_F(Interpreter, DivergentBranchesReconvergeBeforeAShuffle) {
  auto m = load(R"(
.visible .entry k(.param .u64 out, .param .u64 sums)
{
  .reg .pred %p<2>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [sums];
  mov.u32 %r1, %tid.x;
  and.b32 %r2, %r1, 1;
  setp.eq.s32 %p1, %r2, 0;
  @%p1 bra EVEN;
  mul.lo.s32 %r3, %r1, 3;
  bra.uni JOIN;
EVEN:
  add.s32 %r3, %r1, 100;
JOIN:
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd1, %rd3;
  st.global.u32 [%rd4], %r3;
  shfl.sync.bfly.b32 %r4, %r3, 16, 31, -1;
  add.s32 %r5, %r3, %r4;
  shfl.sync.bfly.b32 %r4, %r5, 8, 31, -1;
  add.s32 %r5, %r5, %r4;
  shfl.sync.bfly.b32 %r4, %r5, 4, 31, -1;
  add.s32 %r5, %r5, %r4;
  shfl.sync.bfly.b32 %r4, %r5, 2, 31, -1;
  add.s32 %r5, %r5, %r4;
  shfl.sync.bfly.b32 %r4, %r5, 1, 31, -1;
  add.s32 %r5, %r5, %r4;
  add.s64 %rd5, %rd2, %rd3;
  st.global.u32 [%rd5], %r5;
  ret;
}
)");
  ASSERT_TRUE(m);
  uint64_t out = output(32 * 4), sums = output(32 * 4);
  auto r = run(*m, "k", {1}, {32}, {out, sums});
  ASSERT_EQ(r.fault, Fault::None) << r.report;
  auto o = download<int32_t>(out, 32);
  auto s = download<int32_t>(sums, 32);
  int32_t total = 0;
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(o[i], i % 2 ? i * 3 : i + 100) << i;
    total += o[i];
  }
  for (int i = 0; i < 32; ++i) EXPECT_EQ(s[i], total) << i;
  EXPECT_EQ(r.stats.globalStoreRequests, 2u);
  EXPECT_EQ(r.stats.globalStoreSectors, 2u * 4);  // 32 lanes x 4 bytes: 4 sectors each
}

// out[i] = 0 + 1 + ... + (i - 1): every lane loops its own number of times.
TEST_F(Interpreter, LoopsWithPerLaneTripCounts) {
  auto m = load(R"(
.visible .entry k(.param .u64 out)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, 0;
  mov.u32 %r3, 0;
  setp.eq.s32 %p1, %r1, 0;
  @%p1 bra DONE;
LOOP:
  add.s32 %r3, %r3, %r2;
  add.s32 %r2, %r2, 1;
  setp.lt.u32 %p1, %r2, %r1;
  @%p1 bra LOOP;
DONE:
  activemask.b32 %r4;
  mul.wide.u32 %rd2, %r1, 8;
  add.s64 %rd3, %rd1, %rd2;
  st.global.v2.u32 [%rd3], {%r3, %r4};
  ret;
}
)");
  ASSERT_TRUE(m);
  uint64_t out = output(40 * 8);
  auto r = run(*m, "k", {1}, {40}, {out});
  ASSERT_EQ(r.fault, Fault::None) << r.report;
  auto o = download<uint32_t>(out, 80);
  for (uint32_t i = 0; i < 40; ++i) {
    EXPECT_EQ(o[2 * i], i * (i - (i > 0)) / 2 + 0 * i) << i;  // sum of 0..i-1 = i(i-1)/2
    EXPECT_EQ(o[2 * i + 1], i < 32 ? 0xFFFFFFFFu : 0xFFu) << "all lanes meet again after the loop, lane " << i;
  }
}

// Every shfl mode on a 16-lane segment (width 16), and idx with a partial member mask.
TEST_F(Interpreter, ShuffleModesWithSegmentsAndPartialMasks) {
  auto m = load(R"(
.visible .entry k(.param .u64 out)
{
  .reg .pred %p<6>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mul.lo.s32 %r2, %r1, 10;
  shfl.sync.up.b32 %r3|%p1, %r2, 3, 4096, -1;
  shfl.sync.down.b32 %r4|%p2, %r2, 3, 4127, -1;
  shfl.sync.bfly.b32 %r5|%p3, %r2, 5, 4127, -1;
  shfl.sync.idx.b32 %r6|%p4, %r2, 2, 4127, -1;
  selp.u32 %r7, 1, 0, %p1;
  selp.u32 %r8, 2, 0, %p2;
  or.b32 %r7, %r7, %r8;
  selp.u32 %r8, 4, 0, %p3;
  or.b32 %r7, %r7, %r8;
  selp.u32 %r8, 8, 0, %p4;
  or.b32 %r7, %r7, %r8;
  mul.wide.u32 %rd2, %r1, 32;
  add.s64 %rd3, %rd1, %rd2;
  st.global.v4.u32 [%rd3], {%r3, %r4, %r5, %r6};
  st.global.u32 [%rd3+16], %r7;
  setp.lt.u32 %p5, %r1, 8;
  @!%p5 bra END;
  shfl.sync.idx.b32 %r9, %r2, 7, 31, 255;
  st.global.u32 [%rd3+20], %r9;
END:
  ret;
}
)");
  ASSERT_TRUE(m);
  uint64_t out = output(32 * 32);
  auto r = run(*m, "k", {1}, {32}, {out});
  ASSERT_EQ(r.fault, Fault::None) << r.report;
  auto o = download<uint32_t>(out, 32 * 8);
  for (int lane = 0; lane < 32; ++lane) {
    const uint32_t* row = &o[lane * 8];
    int seg = lane & ~15, inSeg = lane & 15;
    // up: from lane - 3 within the segment, else own value with p false
    bool upOk = inSeg >= 3;
    EXPECT_EQ(row[0], uint32_t((upOk ? lane - 3 : lane) * 10)) << "up, lane " << lane;
    bool downOk = inSeg + 3 <= 15;
    EXPECT_EQ(row[1], uint32_t((downOk ? lane + 3 : lane) * 10)) << "down, lane " << lane;
    EXPECT_EQ(row[2], uint32_t((lane ^ 5) * 10)) << "bfly, lane " << lane;
    EXPECT_EQ(row[3], uint32_t((seg + 2) * 10)) << "idx, lane " << lane;
    EXPECT_EQ(row[4], (upOk ? 1u : 0u) | (downOk ? 2u : 0u) | 4u | 8u) << "predicates, lane " << lane;
    if (lane < 8) {
      EXPECT_EQ(row[5], 70u) << "idx among the first 8 lanes, lane " << lane;
    }
  }
}

// 4 blocks x 256 threads add 1 to one counter and CAS-loop a float maximum: contended atomics.
TEST_F(Interpreter, ContendedAtomics) {
  auto m = load(R"(
.visible .entry k(.param .u64 counter, .param .u64 fmax)
{
  .reg .pred %p<2>;
  .reg .b32 %r<10>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [counter];
  ld.param.u64 %rd2, [fmax];
  atom.global.add.u32 %r1, [%rd1], 1;
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %ctaid.x;
  mad.lo.s32 %r4, %r3, 256, %r2;
  cvt.rn.f32.u32 %f1, %r4;
  mov.b32 %r5, %f1;
  ld.global.u32 %r6, [%rd2];
RETRY:
  mov.b32 %f2, %r6;
  max.f32 %f3, %f2, %f1;
  mov.b32 %r7, %f3;
  atom.global.cas.b32 %r8, [%rd2], %r6, %r7;
  setp.ne.s32 %p1, %r8, %r6;
  mov.u32 %r6, %r8;
  @%p1 bra RETRY;
  ret;
}
)");
  ASSERT_TRUE(m);
  uint64_t counter = upload(std::vector<uint32_t>{0});
  uint64_t fmax = upload(std::vector<float>{-1.0f});
  auto r = run(*m, "k", {4}, {256}, {counter, fmax});
  ASSERT_EQ(r.fault, Fault::None) << r.report;
  EXPECT_EQ(download<uint32_t>(counter, 1)[0], 1024u);
  EXPECT_EQ(download<float>(fmax, 1)[0], 1023.0f);
}

// Each block reverses 256 values through shared memory: threads read what other warps wrote, so
// only the barrier makes it right (and racecheck stays quiet).
TEST_F(Interpreter, BarrierOrdersSharedMemoryAcrossWarps) {
  auto m = load(R"(
.visible .entry k(.param .u64 in, .param .u64 out)
{
  .shared .align 4 .b8 tile[1024];
  .reg .b32 %r<8>;
  .reg .b64 %rd<10>;
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  mad.lo.s32 %r3, %r2, 256, %r1;
  mul.wide.u32 %rd3, %r3, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.u32 %r4, [%rd4];
  mov.u32 %r5, tile;
  shl.b32 %r6, %r1, 2;
  add.s32 %r6, %r5, %r6;
  st.shared.u32 [%r6], %r4;
  bar.sync 0;
  sub.s32 %r7, 255, %r1;
  shl.b32 %r7, %r7, 2;
  add.s32 %r7, %r5, %r7;
  ld.shared.u32 %r4, [%r7];
  add.s64 %rd5, %rd2, %rd3;
  st.global.u32 [%rd5], %r4;
  ret;
}
)");
  ASSERT_TRUE(m);
  std::vector<int32_t> in(512);
  for (int i = 0; i < 512; ++i) in[i] = i * 7 + 1;
  uint64_t a = upload(in), out = output(512 * 4);
  auto r = run(*m, "k", {2}, {256}, {a, out});
  ASSERT_EQ(r.fault, Fault::None) << r.report;
  auto o = download<int32_t>(out, 512);
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 256; ++t) EXPECT_EQ(o[b * 256 + t], in[b * 256 + 255 - t]) << b << " " << t;
  EXPECT_EQ(r.stats.sharedRequests, 2u * 8 * 2);  // 8 warps, a store and a load each, 2 blocks
  EXPECT_EQ(r.stats.sharedWavefronts, r.stats.sharedRequests) << "consecutive words: no bank conflicts";
}

// Without the barrier, the same kernel races: warps run one after another here, so the first
// hazard found is warp 4 overwriting a word warp 3 read (write-after-read); on hardware either order.
TEST_F(Interpreter, RacecheckReportsAMissingBarrier) {
  auto m = load(R"(
.visible .entry k(.param .u64 out)
{
  .shared .align 4 .b8 tile[1024];
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  mov.u32 %r1, %tid.x;
  mov.u32 %r5, tile;
  shl.b32 %r6, %r1, 2;
  add.s32 %r6, %r5, %r6;
  st.shared.u32 [%r6], %r1;
  sub.s32 %r7, 255, %r1;
  shl.b32 %r7, %r7, 2;
  add.s32 %r7, %r5, %r7;
  ld.shared.u32 %r4, [%r7];
  ret;
}
)");
  ASSERT_TRUE(m);
  auto r = run(*m, "k", {1}, {256}, {0});
  ASSERT_EQ(r.fault, Fault::CheckFailed);
  EXPECT_NE(r.report.find("racecheck: write-after-read hazard on shared memory at offset 512"), std::string::npos)
      << r.report;
  EXPECT_NE(r.report.find("PTX line"), std::string::npos) << r.report;
}

// Bank conflicts: 32 lanes reading a column of a 32x32 float tile hit one bank 32 times.
TEST_F(Interpreter, CountsSharedMemoryBankConflicts) {
  auto m = load(R"(
.visible .entry k()
{
  .shared .align 4 .b8 tile[4096];
  .reg .b32 %r<8>;
  mov.u32 %r1, %tid.x;
  shl.b32 %r2, %r1, 7;
  mov.u32 %r3, tile;
  add.s32 %r2, %r2, %r3;
  st.shared.u32 [%r2], %r1;
  bar.warp.sync -1;
  ld.shared.u32 %r4, [%r2];
  ret;
}
)");
  ASSERT_TRUE(m);
  auto r = run(*m, "k", {1}, {32}, {});
  ASSERT_EQ(r.fault, Fault::None) << r.report;
  EXPECT_EQ(r.stats.sharedRequests, 2u);
  EXPECT_EQ(r.stats.sharedWavefronts, 64u);
  EXPECT_DOUBLE_EQ(r.stats.sharedWavefrontsPerRequest(), 32.0);
}

// A .func with parameters and a return value, called by a divergent subset of lanes.
TEST_F(Interpreter, CallsPassParametersAndReturnValues) {
  auto m = load(R"(
.func (.param .b32 ret) triple_plus(.param .b32 a, .param .b32 b)
{
  .reg .b32 %r<4>;
  ld.param.b32 %r1, [a];
  ld.param.b32 %r2, [b];
  mad.lo.s32 %r3, %r1, 3, %r2;
  st.param.b32 [ret], %r3;
  ret;
}
.visible .entry k(.param .u64 out)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, -1;
  setp.lt.u32 %p1, %r1, 20;
  @!%p1 bra SKIP;
  {
    .param .b32 param0;
    st.param.b32 [param0], %r1;
    .param .b32 param1;
    st.param.b32 [param1], 5;
    .param .b32 retval0;
    call (retval0), triple_plus, (param0, param1);
    ld.param.b32 %r2, [retval0];
  }
SKIP:
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r2;
  ret;
}
)");
  ASSERT_TRUE(m);
  uint64_t out = output(32 * 4);
  auto r = run(*m, "k", {1}, {32}, {out});
  ASSERT_EQ(r.fault, Fault::None) << r.report;
  auto o = download<int32_t>(out, 32);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(o[i], i < 20 ? 3 * i + 5 : -1) << i;
}

// Float and integer semantics that are easy to get wrong (notes/gpusim.md section 4): fused fma,
// NaN-losing min, .NaN max, saturating and NaN-zeroing float-to-int conversion, round-half-even,
// shift amounts past the width, f16 rounding, directed rounding.
TEST_F(Interpreter, FloatAndIntegerSemantics) {
  auto m = load(R"(
.visible .entry k(.param .u64 in, .param .u64 out)
{
  .reg .f32 %f<16>;
  .reg .b32 %r<16>;
  .reg .b16 %rs<2>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [out];
  ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];
  fma.rn.f32 %f5, %f1, %f2, %f3;
  mul.rn.f32 %f6, %f1, %f2;
  add.rn.f32 %f6, %f6, %f3;
  min.f32 %f7, %f4, %f1;
  max.NaN.f32 %f8, %f4, %f1;
  cvt.rzi.s32.f32 %r1, %f4;
  mov.f32 %f9, 0f4F800000;
  cvt.rzi.s32.f32 %r2, %f9;
  mov.f32 %f13, 0fC0200000;
  cvt.rni.s32.f32 %r3, %f13;
  mov.u32 %r4, 1;
  shl.b32 %r5, %r4, 40;
  mov.u32 %r6, -8;
  shr.s32 %r7, %r6, 40;
  cvt.rn.f16.f32 %rs1, %f1;
  cvt.f32.f16 %f10, %rs1;
  mov.f32 %f14, 0f33800000;
  add.rz.f32 %f11, %f1, %f14;
  add.rp.f32 %f12, %f1, %f14;
  st.global.v4.f32 [%rd2], {%f5, %f6, %f7, %f8};
  st.global.v4.u32 [%rd2+16], {%r1, %r2, %r3, %r5};
  st.global.v4.f32 [%rd2+32], {%f10, %f11, %f12, %f12};
  st.global.u32 [%rd2+48], %r7;
  ret;
}
)");
  ASSERT_TRUE(m);
  const float a = 1.0f + 0x1p-12f;
  uint64_t in = upload<float>({a, a, -1.0f, std::numeric_limits<float>::quiet_NaN()});
  uint64_t out = output(64);
  auto r = run(*m, "k", {1}, {1}, {in, out});
  ASSERT_EQ(r.fault, Fault::None) << r.report;
  auto f = download<float>(out, 16);
  auto i = download<int32_t>(out, 16);
  EXPECT_EQ(f[0], 0x1p-11f + 0x1p-24f);  // fused: the product's low bits survive
  EXPECT_EQ(f[1], 0x1p-11f);             // mul.rn then add.rn: rounded twice
  EXPECT_EQ(f[2], a);                    // min with a NaN gives the other operand
  EXPECT_TRUE(std::isnan(f[3]));         // max.NaN propagates it
  EXPECT_EQ(i[4], 0);                    // NaN -> 0
  EXPECT_EQ(i[5], std::numeric_limits<int32_t>::max());  // 2^32 saturates
  EXPECT_EQ(i[6], -2);                   // -2.5 rounds half to even
  EXPECT_EQ(i[7], 0);                    // shl by 40: 0
  EXPECT_EQ(f[8], 1.0f);                 // 1 + 2^-12 to f16 and back
  EXPECT_EQ(f[9], a);                    // a + 2^-24 toward zero
  EXPECT_EQ(f[10], a + 0x1p-23f);        // and toward +inf
  EXPECT_EQ(i[12], -1);                  // shr.s32 by 40: the sign fill
}

// A NaN rounded to a 16-bit float is the GPU's canonical NaN, 0x7FFF, whatever its payload: an
// H200 gave 0x7FFF for ONNX's Cast float->bfloat16 of a NaN, where x86 rounding keeps 0x7FC0.
TEST_F(Interpreter, NaNRoundedToSixteenBitsIsTheCanonicalNaN) {
  auto m = load(R"(
.visible .entry k(.param .u64 in, .param .u64 out)
{
  .reg .f32 %f<2>;
  .reg .b16 %rs<3>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [out];
  ld.global.f32 %f1, [%rd1];
  cvt.rn.bf16.f32 %rs1, %f1;
  cvt.rn.f16.f32 %rs2, %f1;
  st.global.v2.u16 [%rd2], {%rs1, %rs2};
  ret;
}
)");
  ASSERT_TRUE(m);
  uint64_t in = upload<float>({-std::numeric_limits<float>::quiet_NaN()});
  uint64_t out = output(4);
  auto r = run(*m, "k", {1}, {1}, {in, out});
  ASSERT_EQ(r.fault, Fault::None) << r.report;
  auto o = download<uint16_t>(out, 2);
  EXPECT_EQ(o[0], 0x7FFF);  // bf16
  EXPECT_EQ(o[1], 0x7FFF);  // f16
}

// A register wider than the instruction type gets a signed result sign-extended: LLVM narrows
// int8 values with cvt.s8.s32 into 16-bit registers and compares them with min.s16 (ONNX's int8
// Clip found this).
TEST_F(Interpreter, NarrowSignedResultsAreSignExtendedInWiderRegisters) {
  auto m = load(R"(
.visible .entry k(.param .u64 out)
{
  .reg .b16 %rs<4>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, 255;
  bfe.s32 %r2, %r1, 0, 8;
  cvt.s8.s32 %rs1, %r2;
  mov.u16 %rs2, 0;
  min.s16 %rs3, %rs2, %rs1;
  cvt.u8.u32 %rs2, %r1;
  st.global.u16 [%rd1], %rs3;
  st.global.u16 [%rd1+2], %rs2;
  ret;
}
)");
  ASSERT_TRUE(m);
  uint64_t out = output(4);
  auto r = run(*m, "k", {1}, {1}, {out});
  ASSERT_EQ(r.fault, Fault::None) << r.report;
  auto o = download<int16_t>(out, 2);
  EXPECT_EQ(o[0], -1);   // min(0, -1)
  EXPECT_EQ(o[1], 255);  // unsigned: zero-extended
}

}  // namespace
}  // namespace gpusim
