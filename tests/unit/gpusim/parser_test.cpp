// The PTX parser: what it accepts (the forms kiln's LLVM emits: initialised globals with `$` in
// their names, libdevice-style .func calls, nested blocks, vectors, literals) and how it rejects what
// the simulator cannot run, always with the line ("line N: error: ...", the JIT log's format).
#include <gtest/gtest.h>

#include <string>

#include "gpusim/ptx/parser.h"
#include "interpreter_fixture.h"

namespace gpusim {
namespace {

class Parser : public Interpreter {};

TEST_F(Parser, ReadsInitialisedGlobalsAndTakesTheirAddress) {
  auto m = load(R"(
.global .align 16 .b8 k0_constant_$_literal4[8] = {0, 0, 128, 63, 0, 0, 0, 64};
.visible .entry k(.param .u64 out)
{
  .reg .f32 %f<3>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [out];
  mov.u64 %rd2, k0_constant_$_literal4;
  ld.global.nc.v2.f32 {%f1, %f2}, [%rd2];
  add.rn.f32 %f1, %f1, %f2;
  st.global.f32 [%rd1], %f1;
  ret;
}
)");
  ASSERT_TRUE(m);
  uint64_t out = output(4);
  auto r = run(*m, "k", {1}, {1}, {out});
  ASSERT_EQ(r.fault, Fault::None) << r.report;
  EXPECT_EQ(download<float>(out, 1)[0], 3.0f);
}

TEST_F(Parser, ErrorsNameTheLine) {
  EXPECT_NE(loadError(".visible .entry k()\n{\n  .reg .b32 %r<2>;\n  frobnicate.b32 %r1, %r1;\n  ret;\n}\n")
                .find("line 8: error: instruction 'frobnicate.b32' is not supported by the simulator"),
            std::string::npos);
  EXPECT_NE(loadError(".visible .entry k()\n{\n  .reg .b32 %r<2>;\n  add.u32 %r1, %r9, 1;\n  ret;\n}\n")
                .find("line 8: error: undefined register '%r9'"),
            std::string::npos);
  EXPECT_NE(loadError(".visible .entry k()\n{\n  bra.uni NOWHERE;\n}\n").find("line 7: error: undefined label 'NOWHERE'"),
            std::string::npos);
  EXPECT_NE(loadError(".visible .entry k()\n{\n  .reg .b32 %r<2>;\n  add.ftz.u32 %r1, %r1, 1;\n  ret;\n}\n")
                .find("modifier '.ftz' is not supported in 'add.ftz.u32'"),
            std::string::npos);
  EXPECT_NE(loadError(".visible .entry k()\n{\n  .reg .b32 %r<2>;\n  add.u32 %r1, %r1;\n  ret;\n}\n")
                .find("expected 3 operands, found 2"),
            std::string::npos);
  EXPECT_NE(loadError(".visible .entry k(\n").find("error:"), std::string::npos);
}

TEST_F(Parser, CallsCheckTheirSignature) {
  std::string log = loadError(R"(
.func (.param .b32 r) f(.param .b32 a)
{
  ret;
}
.visible .entry k()
{
  .param .b32 p;
  call.uni f, (p);
  ret;
}
)");
  EXPECT_NE(log.find("'f' takes 1 argument(s) and returns 1, the call passes 1 and receives 0"), std::string::npos) << log;
}

TEST_F(Parser, BranchesReconvergeAtThePostDominator) {
  ptx::Module m;
  std::string log;
  ASSERT_TRUE(ptx::parseModule(std::string(kHeader) + R"(
.visible .entry k()
{
  .reg .pred %p<3>;
  .reg .b32 %r<3>;
  mov.u32 %r1, %tid.x;
  setp.lt.u32 %p1, %r1, 8;
  @%p1 bra A;
  setp.lt.u32 %p2, %r1, 16;
  @%p2 bra B;
  add.u32 %r2, %r1, 1;
  bra.uni JOIN;
B:
  add.u32 %r2, %r1, 2;
  bra.uni JOIN;
A:
  add.u32 %r2, %r1, 3;
JOIN:
  ret;
}
)",
                               m, log))
      << log;
  const auto& instrs = m.functions[0].instrs;
  // Instructions: 0 mov, 1 setp, 2 @p1 bra A, 3 setp, 4 @p2 bra B, 5 add, 6 bra JOIN, 7 add,
  // 8 bra JOIN, 9 add (A), 10 ret (JOIN).
  ASSERT_EQ(instrs.size(), 11u);
  EXPECT_EQ(instrs[2].reconverge, 10u);
  EXPECT_EQ(instrs[4].reconverge, 10u);
  EXPECT_EQ(instrs[2].target, 9u);
}

// Register pressure is what is live at once: a loop keeps its accumulator, counter and bound live
// around the back edge, while values used once and dead (the loads' addresses) do not add up.
TEST_F(Parser, LiveRegistersCountValuesHeldAtOnceNotDeclarations) {
  ptx::Module m;
  std::string log;
  ASSERT_TRUE(ptx::parseModule(std::string(kHeader) + R"(
.visible .entry k(.param .u64 k_p)
{
  .reg .pred %p<2>;
  .reg .b32 %r<10>;
  .reg .f64 %fd<10>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [k_p];
  mov.u32 %r1, 0;
  mov.f64 %fd1, 0d0000000000000000;
LOOP:
  mul.wide.u32 %rd2, %r1, 8;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.f64 %fd2, [%rd3];
  add.f64 %fd1, %fd1, %fd2;
  add.u32 %r1, %r1, 1;
  setp.lt.u32 %p1, %r1, 100;
  @%p1 bra LOOP;
  st.global.f64 [%rd1], %fd1;
  ret;
}
)",
                              m, log))
      << log;
  // In the loop: %rd1 (2 words), %r1 (1), %fd1 (2), and at the address add %rd2 and %rd3 (2 + 2).
  EXPECT_EQ(m.functions[0].liveRegisterWords, 9u);
}

}  // namespace
}  // namespace gpusim
