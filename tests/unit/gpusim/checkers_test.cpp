// One deliberately broken kernel per check the simulator makes, each asserting the fault and that
// the report names what a developer needs: the kernel, the PTX line, block and thread, the address
// and the allocation it missed (memcheck, initcheck, racecheck is in interpreter_test.cpp,
// synccheck, barrier divergence, the instruction budget, trap).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "interpreter_fixture.h"

namespace gpusim {
namespace {

// Thread i stores to out[i], unguarded: launched with more threads than elements. (Line numbers in
// reports count the fixture's 4-line header and the raw string's leading newline.)
constexpr const char* kUnguardedStore = R"(
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r1;
  ret;
}
)";

class Checkers : public Interpreter {};

TEST_F(Checkers, OutOfBoundsStoreNamesTheAllocationAndThread) {
  auto m = load(kUnguardedStore);
  ASSERT_TRUE(m);
  uint64_t out = output(40 * 4);
  auto r = run(*m, "k", {1}, {64}, {out});
  ASSERT_EQ(r.fault, Fault::IllegalAddress);
  EXPECT_NE(r.report.find("memcheck: invalid global write of 4 bytes"), std::string::npos) << r.report;
  EXPECT_NE(r.report.find("0 bytes past the end of test output"), std::string::npos) << r.report;
  EXPECT_NE(r.report.find("kernel k, PTX line 14 (st)"), std::string::npos) << r.report;
  EXPECT_NE(r.report.find("thread (40,0,0), warp 1 lane 8"), std::string::npos) << r.report;
}

TEST_F(Checkers, UseAfterFree) {
  auto m = load(kUnguardedStore);
  ASSERT_TRUE(m);
  uint64_t out = output(32 * 4);
  ASSERT_TRUE(memory.free(out));
  auto r = run(*m, "k", {1}, {32}, {out});
  ASSERT_EQ(r.fault, Fault::IllegalAddress);
  EXPECT_NE(r.report.find("inside freed memory"), std::string::npos) << r.report;
}

TEST_F(Checkers, InitcheckReportsReadsOfMemoryNeverWritten) {
  auto m = load(R"(
.visible .entry k(.param .u64 in, .param .u64 out)
{
  .reg .f32 %f<2>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [out];
  ld.global.nc.f32 %f1, [%rd1+4];
  st.global.f32 [%rd2], %f1;
  ret;
}
)");
  ASSERT_TRUE(m);
  uint64_t in = output(16), out = output(4);
  auto r = run(*m, "k", {1}, {1}, {in, out});
  ASSERT_EQ(r.fault, Fault::CheckFailed);
  EXPECT_NE(r.report.find("initcheck: read of 4 bytes of uninitialised global memory"), std::string::npos) << r.report;
  EXPECT_NE(r.report.find("4 bytes into test output"), std::string::npos) << r.report;
}

TEST_F(Checkers, MisalignedVectorLoad) {
  auto m = load(R"(
.visible .entry k(.param .u64 in, .param .u64 out)
{
  .reg .f32 %f<5>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [out];
  ld.global.nc.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1+8];
  st.global.f32 [%rd2], %f1;
  ret;
}
)");
  ASSERT_TRUE(m);
  uint64_t in = upload(std::vector<float>(8, 1.0f)), out = output(4);
  auto r = run(*m, "k", {1}, {1}, {in, out});
  ASSERT_EQ(r.fault, Fault::MisalignedAddress);
  EXPECT_NE(r.report.find("memcheck: misaligned global read of 16 bytes"), std::string::npos) << r.report;
  EXPECT_NE(r.report.find("needs 16-byte alignment"), std::string::npos) << r.report;
}

TEST_F(Checkers, GenericAddressOfSharedMemoryUsedAsGlobal) {
  auto m = load(R"(
.visible .entry k()
{
  .shared .align 4 .b8 tile[128];
  .reg .b32 %r<2>;
  .reg .b64 %rd<3>;
  mov.u64 %rd1, tile;
  cvta.shared.u64 %rd2, %rd1;
  mov.u32 %r1, 7;
  st.global.u32 [%rd2], %r1;
  ret;
}
)");
  ASSERT_TRUE(m);
  auto r = run(*m, "k", {1}, {1}, {});
  ASSERT_EQ(r.fault, Fault::IllegalAddress);
  EXPECT_NE(r.report.find("shared-memory window, not global memory"), std::string::npos) << r.report;
}

TEST_F(Checkers, BarrierUnderDivergenceIsReported) {
  auto m = load(R"(
.visible .entry k()
{
  .reg .pred %p<2>;
  .reg .b32 %r<2>;
  mov.u32 %r1, %tid.x;
  setp.lt.u32 %p1, %r1, 16;
  @%p1 bra SKIP;
  bar.sync 0;
SKIP:
  ret;
}
)");
  ASSERT_TRUE(m);
  auto r = run(*m, "k", {1}, {64}, {});
  ASSERT_EQ(r.fault, Fault::IllegalInstruction);
  EXPECT_NE(r.report.find("barrier divergence"), std::string::npos) << r.report;
  EXPECT_NE(r.report.find("PTX line 13 (bar.sync)"), std::string::npos) << r.report;
}

TEST_F(Checkers, SynccheckReportsAShuffleMissingMembers) {
  auto m = load(R"(
.visible .entry k()
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  mov.u32 %r1, %tid.x;
  setp.lt.u32 %p1, %r1, 16;
  @%p1 bra DONE;
  shfl.sync.bfly.b32 %r2, %r1, 1, 31, -1;
DONE:
  ret;
}
)");
  ASSERT_TRUE(m);
  auto r = run(*m, "k", {1}, {32}, {});
  ASSERT_EQ(r.fault, Fault::CheckFailed);
  EXPECT_NE(r.report.find("synccheck: shfl.sync with member mask 0xffffffff executed by lanes 0xffff0000"),
            std::string::npos)
      << r.report;
}

TEST_F(Checkers, EndlessLoopRunsOutOfBudget) {
  auto m = load(R"(
.visible .entry k()
{
LOOP:
  bra.uni LOOP;
}
)");
  ASSERT_TRUE(m);
  auto r = run(*m, "k", {1}, {32}, {}, 0, 10000);
  ASSERT_EQ(r.fault, Fault::Timeout);
  EXPECT_NE(r.report.find("an endless loop?"), std::string::npos) << r.report;
}

TEST_F(Checkers, TrapEndsTheLaunch) {
  auto m = load(R"(
.visible .entry k()
{
  trap;
}
)");
  ASSERT_TRUE(m);
  auto r = run(*m, "k", {2}, {32}, {});
  ASSERT_EQ(r.fault, Fault::Trap);
  EXPECT_NE(r.report.find("trap instruction executed"), std::string::npos) << r.report;
}

}  // namespace
}  // namespace gpusim
