// oneDNN on the CPU backend (runtime/onednn.h): which matmul and convolution kernels it takes, and
// that each one it takes (every epilogue, batches, broadcasts, 1-D operands; strides, padding,
// dilation, groups, both backward passes) computes what the interpreter and the generated kernel
// compute.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iostream>

#include <fmt/format.h>

#include "codegen/library_call.h"
#include "ir/constant_data.h"
#include "kiln_internal.h"
#include "runtime/onednn.h"

namespace kiln {
namespace {

struct Case {
  const char* name;
  const char* text;
  const char* call;  // describeLibraryCall on the CPU for the matmul's kernel
};

// (Every matmul has at least 2^15 multiply-adds: below that kiln computes it with the generated
// kernel, codegen/library_call.cpp.)
const Case kCases[] = {
    {"Plain", R"(func @main(%a: f32[67,17], %b: f32[17,29]) -> f32[67,29] {
  %c = matmul %a, %b
  return %c
})",
     "oneDNN matmul (no epilogue)"},
    {"BiasRelu", R"(func @main(%a: f32[35,40], %b: f32[40,24], %bias: f32[24]) -> f32[35,24] {
  %c = matmul %a, %b
  %d = add %c, %bias
  %e = relu %d
  return %e
})",
     "oneDNN matmul (epilogue bias+relu)"},
    {"Relu", R"(func @main(%a: f32[35,40], %b: f32[40,24]) -> f32[35,24] {
  %c = matmul %a, %b
  %e = relu %c
  return %e
})",
     "oneDNN matmul (epilogue relu)"},
    {"BiasGeluTanh", R"(func @main(%a: f32[24,32], %b: f32[32,48], %bias: f32[1,48]) -> f32[24,48] {
  %c = matmul %a, %b
  %d = add %c, %bias
  %e = gelu %d {approximate = "tanh"}
  return %e
})",
     "oneDNN matmul (epilogue bias+gelu)"},
    {"Batched", R"(func @main(%a: f32[3,45,16], %b: f32[3,16,25]) -> f32[3,45,25] {
  %c = matmul %a, %b
  return %c
})",
     "oneDNN matmul (no epilogue)"},
    {"BroadcastWeights", R"(func @main(%a: f32[4,30,32], %b: f32[32,9], %bias: f32[9]) -> f32[4,30,9] {
  %c = matmul %a, %b
  %d = add %c, %bias
  return %d
})",
     "oneDNN matmul (epilogue bias)"},
    {"BroadcastInput", R"(func @main(%a: f32[6,32], %b: f32[2,3,32,30]) -> f32[2,3,6,30] {
  %c = matmul %a, %b
  return %c
})",
     "oneDNN matmul (no epilogue)"},
    {"TransposedOperands", R"(func @main(%a: f32[40,36], %b: f32[24,40], %bias: f32[24]) -> f32[36,24] {
  %at = transpose %a {perm = [1, 0]}
  %bt = transpose %b {perm = [1, 0]}
  %c = matmul %at, %bt
  %d = add %c, %bias
  %e = relu %d
  return %e
})", "oneDNN matmul of A^T and B^T (epilogue bias+relu)"},
    {"BatchedTransposedA", R"(func @main(%a: f32[3,16,45], %b: f32[16,25]) -> f32[3,45,25] {
  %at = transpose %a {perm = [0, 2, 1]}
  %c = matmul %at, %b
  return %c
})", "oneDNN matmul of A^T and B (no epilogue)"},
    // (An f32 matrix times a vector is a row kernel on the CPU: passes/matvec_as_rows.h.)
    {"VectorMatrix", R"(func @main(%v: f32[256], %b: f32[256,128]) -> f32[128] {
  %c = matmul %v, %b
  return %c
})",
     "oneDNN matmul (no epilogue)"},
    // bf16: oneDNN sums in f32 and rounds once after the epilogue, where the interpreter rounds the
    // matmul and each epilogue op: equal within a few bf16 ulps.
    {"Bf16", R"(func @main(%a: bf16[33,64], %b: bf16[64,29]) -> bf16[33,29] {
  %c = matmul %a, %b
  return %c
})",
     "oneDNN matmul (no epilogue)"},
    {"Bf16BiasReluBatched", R"(func @main(%a: bf16[3,16,40], %b: bf16[40,24], %bias: bf16[24]) -> bf16[3,16,24] {
  %c = matmul %a, %b
  %d = add %c, %bias
  %e = relu %d
  return %e
})",
     "oneDNN matmul (epilogue bias+relu)"},
    {"Bf16BatchedTransposedGelu", R"(func @main(%a: bf16[2,40,36], %b: bf16[2,24,40], %bias: bf16[24]) -> bf16[2,36,24] {
  %at = transpose %a {perm = [0, 2, 1]}
  %bt = transpose %b {perm = [0, 2, 1]}
  %c = matmul %at, %bt
  %d = add %c, %bias
  %e = gelu %d {approximate = "tanh"}
  return %e
})", "oneDNN matmul of A^T and B^T (epilogue bias+gelu)"},
    // (A bf16 matrix times a vector is a row kernel: matvec-as-rows.)
    {"Bf16VectorMatrix", R"(func @main(%v: bf16[256], %a: bf16[256,128]) -> bf16[128] {
  %c = matmul %v, %a
  return %c
})",
     "oneDNN matmul (no epilogue)"},
    {"Bf16BroadcastInput", R"(func @main(%a: bf16[6,32], %b: bf16[2,3,32,30]) -> bf16[2,3,6,30] {
  %c = matmul %a, %b
  return %c
})",
     "oneDNN matmul (no epilogue)"},
    // Residuals (a transformer's, a ResNet block's): added by oneDNN's sum post-op after the bias
    // and before the activation, the output starting as a copy of the residual; either operand
    // order of the add.
    {"BiasResidual", R"(func @main(%a: f32[64,48], %b: f32[48,32], %bias: f32[32], %r: f32[64,32]) -> f32[64,32] {
  %c = matmul %a, %b
  %d = add %c, %bias
  %e = add %r, %d
  return %e
})",
     "oneDNN matmul (epilogue bias+residual)"},
    {"ResidualRelu", R"(func @main(%a: f32[2,30,40], %b: f32[40,24], %r: f32[2,30,24]) -> f32[2,30,24] {
  %c = matmul %a, %b
  %d = add %c, %r
  %e = relu %d
  return %e
})",
     "oneDNN matmul (epilogue residual+relu)"},
    {"Bf16BiasResidualGelu", R"(func @main(%a: bf16[40,36], %b: bf16[36,48], %bias: bf16[48], %r: bf16[40,48]) -> bf16[40,48] {
  %c = matmul %a, %b
  %d = add %c, %bias
  %s = add %d, %r
  %e = gelu %s {approximate = "tanh"}
  return %e
})",
     "oneDNN matmul (epilogue bias+residual+gelu)"},
    // f16: oneDNN 2.6 has no f16 matmul; the f32 one runs between conversions (F16C where the CPU
    // has it), one rounding to f16 after the epilogue.
    {"F16", R"(func @main(%a: f16[33,64], %b: f16[64,29]) -> f16[33,29] {
  %c = matmul %a, %b
  return %c
})",
     "oneDNN matmul (no epilogue)"},
    {"F16BatchedBiasResidualRelu", R"(func @main(%a: f16[3,16,40], %b: f16[40,24], %bias: f16[24], %r: f16[3,16,24]) -> f16[3,16,24] {
  %c = matmul %a, %b
  %d = add %c, %bias
  %s = add %d, %r
  %e = relu %s
  return %e
})",
     "oneDNN matmul (epilogue bias+residual+relu)"},
    {"Conv", R"(func @main(%x: f32[2,3,9,9], %w: f32[4,3,3,3]) -> f32[2,4,9,9] {
  %y = conv2d %x, %w {pads = [1, 1, 1, 1]}
  return %y
})",
     "oneDNN conv2d (no epilogue)"},
    {"ConvBiasRelu", R"(func @main(%x: f32[2,4,8,8], %w: f32[6,4,3,3], %b: f32[1,6,1,1]) -> f32[2,6,3,3] {
  %y = conv2d %x, %w {strides = [2, 2]}
  %z = add %y, %b
  %r = relu %z
  return %r
})",
     "oneDNN conv2d (bias+relu)"},
    // relu6 as eltwise_clip after the bias; the inputs scaled so that outputs clip at both ends.
    {"ConvNhwcBiasRelu6", R"(func @main(%x: f32[2,7,6,5], %w: f32[6,5,3,3], %b: f32[6]) -> f32[2,7,6,6] {
  %eight = constant 8.0 : f32[]
  %zero = constant 0.0 : f32[]
  %six = constant 6.0 : f32[]
  %big = mul %x, %eight
  %y = conv2d %big, %w {pads = [1, 1, 1, 1], layout = "nhwc"}
  %z = add %y, %b
  %lo = max %z, %zero
  %r = min %lo, %six
  return %r
})",
     "oneDNN conv2d NHWC (bias+relu6)"},
    // A ResNet block's end: its input x is the residual too. NCHW (oneDNN's blocked layout: the
    // residual reordered into the output's scratch) and NHWC (the output itself).
    {"ConvBiasResidualRelu", R"(func @main(%x: f32[2,16,9,9], %w: f32[16,16,3,3], %b: f32[1,16,1,1]) -> f32[2,16,9,9] {
  %y = conv2d %x, %w {pads = [1, 1, 1, 1]}
  %z = add %y, %b
  %s = add %x, %z
  %r = relu %s
  return %r
})",
     "oneDNN conv2d (bias+residual+relu)"},
    {"ConvNhwcBiasResidualRelu6", R"(func @main(%x: f32[2,7,6,5], %w: f32[8,5,1,1], %b: f32[8], %res: f32[2,7,6,8]) -> f32[2,7,6,8] {
  %eight = constant 8.0 : f32[]
  %zero = constant 0.0 : f32[]
  %six = constant 6.0 : f32[]
  %big = mul %x, %eight
  %y = conv2d %big, %w {layout = "nhwc"}
  %z = add %y, %b
  %s = add %z, %res
  %lo = max %s, %zero
  %r = min %lo, %six
  return %r
})",
     "oneDNN conv2d NHWC (bias+residual+relu6)"},
    // bf16 and f16 convolutions: the f32 one on widened copies, rounded back after the epilogue
    // (forward with bias, residual and relu, NCHW and NHWC; both gradients).
    {"Bf16ConvBiasResidualRelu", R"(func @main(%x: bf16[2,8,9,9], %w: bf16[8,8,3,3], %b: bf16[1,8,1,1]) -> bf16[2,8,9,9] {
  %y = conv2d %x, %w {pads = [1, 1, 1, 1]}
  %z = add %y, %b
  %s = add %x, %z
  %r = relu %s
  return %r
})",
     "oneDNN conv2d (bias+residual+relu)"},
    {"F16ConvNhwcBiasRelu", R"(func @main(%x: f16[2,7,6,5], %w: f16[6,5,3,3], %b: f16[6]) -> f16[2,7,6,6] {
  %y = conv2d %x, %w {pads = [1, 1, 1, 1], layout = "nhwc"}
  %z = add %y, %b
  %r = relu %z
  return %r
})",
     "oneDNN conv2d NHWC (bias+relu)"},
    {"Bf16ConvBackwardData", R"(func @main(%dy: bf16[2,4,5,5], %w: bf16[4,6,3,3]) -> bf16[2,6,10,10] {
  %dx = conv2d_backward_data %dy, %w {strides = [2, 2], pads = [1, 1, 1, 1], input_shape = [2, 6, 10, 10]}
  return %dx
})",
     "oneDNN conv2d backward-data"},
    {"F16ConvBackwardFilter", R"(func @main(%x: f16[2,6,10,10], %dy: f16[2,4,5,5]) -> f16[4,3,3,3] {
  %dw = conv2d_backward_filter %x, %dy {strides = [2, 2], pads = [1, 1, 1, 1], groups = 2, filter_shape = [4, 3, 3, 3]}
  return %dw
})",
     "oneDNN conv2d backward-filter"},
    // Asymmetric pads: TensorFlow's SAME at stride 2 (the far sides padded), and a near side padded
    // whose stride leaves the last row unread (the least far padding for the output size is -1).
    {"ConvAsymmetricPadsBiasRelu", R"(func @main(%x: f32[2,4,9,9], %w: f32[6,4,3,3], %b: f32[1,6,1,1]) -> f32[2,6,4,4] {
  %y = conv2d %x, %w {strides = [2, 2], pads = [0, 0, 1, 1]}
  %z = add %y, %b
  %r = relu %z
  return %r
})",
     "oneDNN conv2d (bias+relu)"},
    {"ConvAsymmetricPadsLastRowUnread", R"(func @main(%x: f32[1,2,5,6], %w: f32[3,2,3,3]) -> f32[1,3,2,3] {
  %y = conv2d %x, %w {strides = [2, 2], pads = [1, 0, 0, 1]}
  return %y
})",
     "oneDNN conv2d (no epilogue)"},
    {"ConvAsymmetricPadsBackwardData", R"(func @main(%dy: f32[2,4,4,4], %w: f32[4,6,3,3]) -> f32[2,6,9,9] {
  %dx = conv2d_backward_data %dy, %w {strides = [2, 2], pads = [0, 0, 1, 1], input_shape = [2, 6, 9, 9]}
  return %dx
})",
     "oneDNN conv2d backward-data"},
    {"ConvAsymmetricPadsBackwardFilter", R"(func @main(%x: f32[2,6,9,9], %dy: f32[2,4,4,4]) -> f32[4,6,3,3] {
  %dw = conv2d_backward_filter %x, %dy {strides = [2, 2], pads = [0, 0, 1, 1], filter_shape = [4, 6, 3, 3]}
  return %dw
})",
     "oneDNN conv2d backward-filter"},
    {"ConvGroupedDilatedStrided", R"(func @main(%x: f32[1,4,11,10], %w: f32[6,2,3,2]) -> f32[1,6,5,6] {
  %y = conv2d %x, %w {strides = [2, 2], pads = [1, 1, 1, 1], dilations = [2, 1], groups = 2}
  return %y
})",
     "oneDNN conv2d (no epilogue)"},
    {"ConvBackwardData", R"(func @main(%dy: f32[2,4,5,5], %w: f32[4,6,3,3]) -> f32[2,6,10,10] {
  %dx = conv2d_backward_data %dy, %w {strides = [2, 2], pads = [1, 1, 1, 1], input_shape = [2, 6, 10, 10]}
  return %dx
})",
     "oneDNN conv2d backward-data"},
    {"ConvBackwardFilter", R"(func @main(%x: f32[2,6,10,10], %dy: f32[2,4,5,5]) -> f32[4,3,3,3] {
  %dw = conv2d_backward_filter %x, %dy {strides = [2, 2], pads = [1, 1, 1, 1], groups = 2, filter_shape = [4, 3, 3, 3]}
  return %dw
})",
     "oneDNN conv2d backward-filter"},
    // A training step's gradients after the channels-last pass: dy, x and dx NHWC.
    {"ConvNhwcBackwardData", R"(func @main(%dy: f32[2,5,5,4], %w: f32[4,6,3,3]) -> f32[2,10,10,6] {
  %dx = conv2d_backward_data %dy, %w {strides = [2, 2], pads = [1, 1, 1, 1], input_shape = [2, 10, 10, 6], layout = "nhwc"}
  return %dx
})",
     "oneDNN conv2d NHWC backward-data"},
    {"ConvNhwcBackwardFilter", R"(func @main(%x: f32[2,10,10,6], %dy: f32[2,5,5,4]) -> f32[4,3,3,3] {
  %dw = conv2d_backward_filter %x, %dy {strides = [2, 2], pads = [1, 1, 1, 1], groups = 2, filter_shape = [4, 3, 3, 3], layout = "nhwc"}
  return %dw
})",
     "oneDNN conv2d NHWC backward-filter"},
    // oneDNN 2.6's jit_1x1 backward-weights of a strided NHWC convolution with 3 channels wrote
    // past the buffers: kiln reorders that one (runtime/onednn.cpp, takesChannelsLastInPlace).
    {"ConvNhwcBackwardFilterStrided1x1", R"(func @main(%x: f32[2,8,8,3], %dy: f32[2,4,4,8]) -> f32[8,3,1,1] {
  %dw = conv2d_backward_filter %x, %dy {strides = [2, 2], filter_shape = [8, 3, 1, 1], layout = "nhwc"}
  return %dw
})",
     "oneDNN conv2d NHWC backward-filter"},
};

class OnednnCase : public ::testing::TestWithParam<Case> {};

std::string libraryCallOf(const Executable& exe) {
  for (const codegen::KernelGroup* group : exe.plan().allGroups())
    if (codegen::hasLibraryOp(*group))
      return codegen::describeLibraryCall(codegen::selectLibraryCall(*group, codegen::Target::Cpu), codegen::Target::Cpu);
  return "no library kernel";
}

void expectClose(const Tensor& got, const Tensor& want, const char* what) {
  ASSERT_EQ(got.type(), want.type()) << what;
  // bf16 keeps 8 bits, f16 11: a few of their ulps between one rounding and several.
  double tolerance = want.dtype() == DType::BF16 ? 0x1p-6 : want.dtype() == DType::F16 ? 0x1p-9 : 1e-4;
  for (int64_t i = 0; i < want.numElements(); ++i)
    ASSERT_NEAR(got.getDouble(i), want.getDouble(i), tolerance * (1 + std::fabs(want.getDouble(i))))
        << what << ", element " << i;
}

// What one program did: parsed, compiled for the CPU, run on random inputs.
struct Checked {
  std::unique_ptr<Module> module;
  std::vector<Tensor> inputs;
  Tensor result;
};

// Compiles `text` for the CPU, expects its library kernel to be `call`, runs it on random inputs
// (`seed`) and expects the interpreter's result.
void expectCallAndResult(const std::string& text, const std::string& call, uint64_t seed, Checked& out) {
  auto m = parseModule(text, "onednn.kiln");
  ASSERT_TRUE(m.ok()) << m.error().str();
  out.module = std::move(*m);
  const Function& f = *out.module->entry();
  auto exe = Executable::compile(f, {});
  ASSERT_TRUE(exe.ok()) << exe.error().str();
  EXPECT_EQ(libraryCallOf(**exe), call);
  out.inputs = randomInputs(f, seed);
  auto want = interpret(f, out.inputs);
  ASSERT_TRUE(want.ok()) << want.error().str();
  auto got = (*exe)->run(out.inputs);
  ASSERT_TRUE(got.ok()) << got.error().str();
  expectClose((*got)[0], (*want)[0], call.c_str());
  out.result = (*got)[0];
}

TEST_P(OnednnCase, ComputesWhatTheInterpreterAndTheGeneratedKernelCompute) {
#if !KILN_HAVE_ONEDNN
  GTEST_SKIP() << "kiln was built without oneDNN (libdnnl-dev): CPU matmuls run generated kernels";
#endif
  const Case& c = GetParam();
  Checked run;
  ASSERT_NO_FATAL_FAILURE(expectCallAndResult(c.text, c.call, 11, run));
  const Function& f = *run.module->entry();
  const std::vector<Tensor>& inputs = run.inputs;

  // The generated kernel, which KILN_CPU_LIBRARIES=off runs instead, agrees.
  setenv("KILN_CPU_LIBRARIES", "off", 1);
  auto generated = Executable::compile(f, {});
  unsetenv("KILN_CPU_LIBRARIES");
  ASSERT_TRUE(generated.ok()) << generated.error().str();
  auto fallback = (*generated)->run(inputs);
  ASSERT_TRUE(fallback.ok()) << fallback.error().str();
  expectClose((*fallback)[0], run.result, "generated kernel against oneDNN");
}

INSTANTIATE_TEST_SUITE_P(Cpu, OnednnCase, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

// What stays a generated kernel says why.
// A literal of `shape` with distinct values (constant data, not an immediate): element i is
// a fixed function of i.
std::string literal(const std::vector<int>& shape, size_t axis = 0, int first = 0) {
  if (axis == shape.size()) return fmt::format("{}", (first * 37 % 101 - 50) / 64.0);
  int stride = 1;
  for (size_t d = axis + 1; d < shape.size(); ++d) stride *= shape[d];
  std::string s = "[";
  for (int i = 0; i < shape[axis]; ++i) s += (i ? ", " : "") + literal(shape, axis + 1, first + i * stride);
  return s + "]";
}

// A model's constant weights are packed into oneDNN's layout once, when the call is made: a
// matmul's (plain and read transposed) and a convolution's; each still equals the interpreter.
// Compiles `text`, makes each library kernel's oneDNN call as the executable makes it (with the
// kernel's constant buffers) for `inspect`, then runs the executable `runs` times (a second run
// reuses the call's kept scratch) against the interpreter.
void checkLibraryCalls(const std::string& text, const std::function<void(const OnednnCall&)>& inspect, int runs = 1) {
  SCOPED_TRACE(text.substr(0, 60));
  auto m = parseModule(text, "calls.kiln");
  ASSERT_TRUE(m.ok()) << m.error().str();
  const Function& f = *(*m)->entry();
  auto exe = Executable::compile(f, {});
  ASSERT_TRUE(exe.ok()) << exe.error().str();
  for (const codegen::KernelGroup* group : (*exe)->plan().allGroups()) {
    if (!codegen::hasLibraryOp(*group)) continue;
    std::vector<const void*> constants;
    for (const Value* v : group->inputs) constants.push_back(constantDataBytes(v));
    auto call = OnednnCall::create(codegen::selectLibraryCall(*group, codegen::Target::Cpu), constants);
    ASSERT_TRUE(call.ok()) << call.error().str();
    inspect(**call);
  }
  std::vector<Tensor> inputs = randomInputs(f, 5);
  auto want = interpret(f, inputs);
  ASSERT_TRUE(want.ok()) << want.error().str();
  for (int run = 0; run < runs; ++run) {
    auto got = (*exe)->run(inputs);
    ASSERT_TRUE(got.ok()) << got.error().str();
    expectClose((*got)[0], (*want)[0], "library call");
  }
}

TEST(Onednn, ConstantWeightsArePackedOnce) {
#if !KILN_HAVE_ONEDNN
  GTEST_SKIP() << "kiln was built without oneDNN (libdnnl-dev)";
#endif
  const std::string texts[] = {
      fmt::format(R"(func @main(%x: f32[32,48], %b: f32[32]) -> f32[32,32] {{
  %w = constant {} : f32[48,32]
  %h = matmul %x, %w
  %a = add %h, %b
  %y = relu %a
  return %y
}})", literal({48, 32})),
      fmt::format(R"(func @main(%x: f32[32,48]) -> f32[32,32] {{
  %w = constant {} : f32[32,48]
  %wt = transpose %w {{perm = [1, 0]}}
  %y = matmul %x, %wt
  return %y
}})", literal({32, 48})),
      fmt::format(R"(func @main(%x: f32[2,16,9,9]) -> f32[2,16,9,9] {{
  %w = constant {} : f32[16,16,3,3]
  %y = conv2d %x, %w {{pads = [1, 1, 1, 1]}}
  return %y
}})", literal({16, 16, 3, 3})),
  };
  for (const std::string& text : texts) {
    // Its weights are packed, or (oneDNN's gemm on hosts without AVX-512 multiplies B as kiln lays
    // it out) read where they lie; never reordered on every run, so the call is the primitive alone.
    bool packed = false, readInPlace = false;
    checkLibraryCalls(text, [&](const OnednnCall& call) {
      packed |= call.packedBytes() > 0;
      readInPlace |= call.primitives().size() == 1 && call.primitives()[0].starts_with("matmul:gemm:jit");
    });
    EXPECT_TRUE(packed || readInPlace) << "the weights were neither packed nor read in place: " << text.substr(0, 60);
  }
}

// A 16-bit convolution oneDNN computes in f32 (every f16 one; bf16 ones where it has no bf16
// kernel) widens its constant weights and bias once, when the call is made, and packs the weights
// from that copy: a run converts x and rounds y, and nothing else; equal to the interpreter.
TEST(Onednn, Constant16BitConvWeightsAreWidenedOnce) {
#if !KILN_HAVE_ONEDNN
  GTEST_SKIP() << "kiln was built without oneDNN (libdnnl-dev)";
#endif
  for (const char* type : {"f16", "bf16"}) {
    std::string text = fmt::format(R"(func @main(%x: {0}[2,16,9,9]) -> {0}[2,24,9,9] {{
  %w = constant {1} : {0}[24,16,3,3]
  %b = constant {2} : {0}[24,1,1]
  %c = conv2d %x, %w {{pads = [1, 1, 1, 1]}}
  %d = add %c, %b
  %y = relu %d
  return %y
}})", type, literal({24, 16, 3, 3}), literal({24, 1, 1}));
    checkLibraryCalls(text, [&](const OnednnCall& call) {
      std::vector<std::string> steps = call.primitives();
      bool throughF32 = std::find(steps.begin(), steps.end(), fmt::format("convert:{} to f32", type)) != steps.end();
      if (!throughF32) {
        std::cout << type << ": oneDNN computes this convolution natively (no conversions)\n";
        return;
      }
      EXPECT_EQ(std::count(steps.begin(), steps.end(), fmt::format("convert:{} to f32", type)), 1) << "only x is widened per run";
      EXPECT_EQ(std::count(steps.begin(), steps.end(), fmt::format("convert:f32 to {}", type)), 1) << "y is rounded once";
      EXPECT_GE(call.packedBytes(), size_t{24 * 16 * 9 * 4 + 24 * 4}) << "the weights and bias in f32";
    }, 2);
  }
}

// Where oneDNN has no bf16 matmul (2.6 without AVX-512), a bf16 one runs as the f32 matmul between
// conversions: A and the bias widened each run, constant weights widened once (packed), C
// rounded back; a second run reuses the kept f32 scratch. Results are the interpreter's either way.
TEST(Onednn, Bf16MatmulsRunInF32WhereOnednnHasNoBf16Kernel) {
#if !KILN_HAVE_ONEDNN
  GTEST_SKIP() << "kiln was built without oneDNN (libdnnl-dev)";
#endif
  std::string text = fmt::format(R"(func @main(%x: bf16[32,48], %b: bf16[32]) -> bf16[32,32] {{
  %w = constant {} : bf16[48,32]
  %h = matmul %x, %w
  %a = add %h, %b
  %y = relu %a
  return %y
}})", literal({48, 32}));
  bool native = false, widened = false;
  checkLibraryCalls(text, [&](const OnednnCall& call) {
    std::vector<std::string> steps = call.primitives();
    ASSERT_FALSE(steps.empty());
    if (steps.size() == 1) {
      native = steps[0].starts_with("matmul:");
      return;
    }
    ASSERT_EQ(steps.size(), 4u) << "x and the bias widened, the matmul, its result rounded";
    EXPECT_EQ(steps[0], "convert:bf16 to f32");
    EXPECT_EQ(steps[1], "convert:bf16 to f32");
    EXPECT_TRUE(steps[2].starts_with("matmul:")) << steps[2];
    EXPECT_EQ(steps[3], "convert:f32 to bf16");
    EXPECT_EQ(call.packedBytes(), 48u * 32u * 4u) << "the constant weights, widened once";
    widened = true;
  }, /*runs=*/2);
  EXPECT_TRUE(native || widened);
}

// A residual is copied into the output before the call (whose sum post-op adds the result to
// it), reordered into the output's scratch where oneDNN computes in its own layout, or widened
// into the f32 output where a bf16 matmul runs in f32; the call runs once more with the kept
// scratch (the copy made again).
TEST(Onednn, ResidualsStartTheOutputTheCallAddsTo) {
#if !KILN_HAVE_ONEDNN
  GTEST_SKIP() << "kiln was built without oneDNN (libdnnl-dev)";
#endif
  const std::string matmul = R"(func @main(%a: f32[64,48], %b: f32[48,32], %r: f32[64,32]) -> f32[64,32] {
  %c = matmul %a, %b
  %d = add %c, %r
  return %d
})";
  checkLibraryCalls(matmul, [](const OnednnCall& call) {
    std::vector<std::string> steps = call.primitives();
    ASSERT_EQ(steps.size(), 2u);
    EXPECT_EQ(steps[0], "copy:residual");
    EXPECT_TRUE(steps[1].starts_with("matmul:")) << steps[1];
  }, /*runs=*/2);
  const std::string nhwc = R"(func @main(%x: f32[2,6,6,16], %w: f32[16,16,3,3], %b: f32[16]) -> f32[2,6,6,16] {
  %y = conv2d %x, %w {pads = [1, 1, 1, 1], layout = "nhwc"}
  %z = add %y, %b
  %s = add %z, %x
  %r = relu %s
  return %r
})";
  checkLibraryCalls(nhwc, [](const OnednnCall& call) {
    std::vector<std::string> steps = call.primitives();
    ASSERT_GE(steps.size(), 2u);
    auto copy = std::find(steps.begin(), steps.end(), "copy:residual");
    auto conv = std::find_if(steps.begin(), steps.end(), [](const std::string& s) { return s.starts_with("convolution:"); });
    if (copy == steps.end()) {  // oneDNN chose a layout of its own: the residual is reordered instead
      EXPECT_TRUE(steps.front().starts_with("reorder:")) << steps.front();
      return;
    }
    EXPECT_LT(copy, conv) << "the residual is copied after the call";
  }, /*runs=*/2);
  const std::string bf16 = R"(func @main(%a: bf16[64,48], %b: bf16[48,32], %r: bf16[64,32]) -> bf16[64,32] {
  %c = matmul %a, %b
  %d = add %r, %c
  %e = relu %d
  return %e
})";
  checkLibraryCalls(bf16, [](const OnednnCall& call) {
    std::vector<std::string> steps = call.primitives();
    ASSERT_FALSE(steps.empty());
    EXPECT_EQ(steps.front(), steps.size() == 2 ? "copy:residual" : "convert:bf16 to f32");
    if (steps.size() > 2) {
      EXPECT_NE(std::find(steps.begin(), steps.end(), "convert:residual bf16 to f32"), steps.end());
    }
  }, /*runs=*/2);
}

// B's rows a multiple of 2 KiB apart, A of a few hundred rows: where oneDNN's matmul reads B
// where it lies (its gemm:jit always; its brgemm, on AVX-512, for some shapes: oneDNN 2.6 at k =
// 40 copies B of 512 columns itself and reads B of 1536 in place, with A plain or transposed), B
// is read from a copy with padded rows (reordered every run, or packed once when constant); the
// results are the interpreter's either way. (oneDNN may multiply the padded B with another
// kernel than the plain one: the reorder before the matmul is what says B was padded.)
TEST(Onednn, AliasingRowsOfBAreReadPadded) {
#if !KILN_HAVE_ONEDNN
  GTEST_SKIP() << "kiln was built without oneDNN (libdnnl-dev)";
#endif
  // Which kernel oneDNN takes for such products on this host: a B of 1540 columns, whose rows do
  // not alias, is never padded.
  bool brgemmHost = false;
  checkLibraryCalls(R"(func @main(%a: f32[96,40], %b: f32[40,1540]) -> f32[96,1540] {
  %c = matmul %a, %b
  return %c
})", [&](const OnednnCall& call) {
    ASSERT_EQ(call.primitives().size(), 1u);
    brgemmHost = call.primitives()[0].starts_with("matmul:brg");
  }, 1);
  struct Padded {
    std::string text;
    bool constant;
    // Where oneDNN's plain product is brgemm (gemm:jit's are all padded): whether B is padded
    // (1, 0), or -1 where oneDNN takes brgemm or gemm:jit for the call by its threads and epilogue
    // (padded under gemm:jit, not under brgemm, which copies this B itself).
    int paddedUnderBrgemm;
  };
  const Padded cases[] = {
      {R"(func @main(%a: f32[96,40], %b: f32[40,512], %bias: f32[512]) -> f32[96,512] {
  %c = matmul %a, %b
  %d = add %c, %bias
  %e = relu %d
  return %e
})", false, -1},
      {R"(func @main(%a: f32[96,40], %b: f32[40,512]) -> f32[96,512] {
  %c = matmul %a, %b
  return %c
})", false, 0},
      {R"(func @main(%a: f32[96,40], %b: f32[40,1536]) -> f32[96,1536] {
  %c = matmul %a, %b
  return %c
})", false, 1},
      // A transposed (a weight gradient's X^T dY): brgemm copies A, and still reads B in place.
      {R"(func @main(%x: f32[40,96], %b: f32[40,1536]) -> f32[96,1536] {
  %a = transpose %x {perm = [1, 0]}
  %c = matmul %a, %b
  return %c
})", false, 1},
      {fmt::format(R"(func @main(%x: f32[8,48]) -> f32[8,1024] {{
  %w = constant {} : f32[48,1024]
  %y = matmul %x, %w
  return %y
}})", literal({48, 1024})), true, 0},
  };
  for (const Padded& c : cases) {
    checkLibraryCalls(c.text, [&](const OnednnCall& call) {
      std::vector<std::string> primitives = call.primitives();
      ASSERT_FALSE(primitives.empty());
      bool padded = primitives.size() == 2 && primitives[0].starts_with("reorder:");
      if (!c.constant && (!brgemmHost || c.paddedUnderBrgemm >= 0)) {
        EXPECT_EQ(padded, brgemmHost ? c.paddedUnderBrgemm == 1 : true)
            << (padded ? "B copied into padded rows before " : "B read as it is by ") << primitives.back();
      } else if (!c.constant) {
        EXPECT_TRUE(padded || primitives.back().starts_with("matmul:brg")) << "B read as it is by " << primitives.back();
      } else if (primitives.back().starts_with("matmul:gemm:jit")) {
        EXPECT_EQ(call.packedBytes(), size_t{48 * (1024 + 16) * 4}) << "the constant B was not packed into padded rows";
        EXPECT_EQ(primitives.size(), 1u);
      } else {
        std::cout << "oneDNN multiplies the constant B with " << primitives.back() << " here, packed its own way\n";
      }
    }, 2);
  }
}

// A convolution whose activations oneDNN reorders runs on slices of the batch, sized to fit the
// caches (here a cache of 1 byte: an image per slice, on any host), the weights reordered once per
// run: forward with bias and relu, with a residual, strided and grouped, with constant weights,
// in bf16; backward data. Each equals the interpreter. Backward weights, which sum over the batch,
// is one slice.
TEST(Onednn, ReorderedConvolutionsRunInSlicesOfTheBatch) {
#if !KILN_HAVE_ONEDNN
  GTEST_SKIP() << "kiln was built without oneDNN (libdnnl-dev)";
#endif
  struct SliceCase {
    std::string text;
    int64_t slices;  // where oneDNN reorders the activations
  };
  const SliceCase cases[] = {
      {R"(func @main(%x: f32[4,16,10,10], %w: f32[24,16,3,3], %b: f32[24,1,1]) -> f32[4,24,10,10] {
  %c = conv2d %x, %w {pads = [1, 1, 1, 1]}
  %d = add %c, %b
  %y = relu %d
  return %y
})", 4},
      {R"(func @main(%x: f32[3,16,9,9], %w: f32[16,8,3,3], %b: f32[16,1,1], %r: f32[3,16,5,5]) -> f32[3,16,5,5] {
  %c = conv2d %x, %w {pads = [1, 1, 1, 1], strides = [2, 2], groups = 2}
  %e = add %c, %b
  %d = add %e, %r
  %y = relu %d
  return %y
})", 3},
      {fmt::format(R"(func @main(%x: f32[2,16,7,7]) -> f32[2,16,7,7] {{
  %w = constant {} : f32[16,16,3,3]
  %y = conv2d %x, %w {{pads = [1, 1, 1, 1]}}
  return %y
}})", literal({16, 16, 3, 3})), 2},
      {R"(func @main(%x: bf16[2,16,8,8], %w: bf16[16,16,3,3]) -> bf16[2,16,8,8] {
  %y = conv2d %x, %w {pads = [1, 1, 1, 1]}
  return %y
})", 2},
      {R"(func @main(%dy: f32[3,24,10,10], %w: f32[24,16,3,3]) -> f32[3,16,10,10] {
  %dx = conv2d_backward_data %dy, %w {pads = [1, 1, 1, 1], input_shape = [3, 16, 10, 10]}
  return %dx
})", 3},
      {R"(func @main(%x: f32[3,16,10,10], %dy: f32[3,24,10,10]) -> f32[24,16,3,3] {
  %dw = conv2d_backward_filter %x, %dy {pads = [1, 1, 1, 1], filter_shape = [24, 16, 3, 3]}
  return %dw
})", 1},
  };
  for (const SliceCase& c : cases) {
    SCOPED_TRACE(c.text.substr(0, 70));
    auto m = parseModule(c.text, "slices.kiln");
    ASSERT_TRUE(m.ok()) << m.error().str();
    const Function& f = *(*m)->entry();
    auto exe = Executable::compile(f, {});
    ASSERT_TRUE(exe.ok()) << exe.error().str();
    std::vector<const codegen::KernelGroup*> groups = (*exe)->plan().allGroups();
    ASSERT_EQ(groups.size(), 1u) << "the program is one library kernel";
    const codegen::KernelGroup& group = *groups[0];
    std::vector<Tensor> inputs = randomInputs(f, 7);
    // The kernel's buffers: its inputs (the compiled function's parameters, or constants), then
    // its output.
    std::vector<void*> buffers;
    std::vector<const void*> constants;
    for (const Value* v : group.inputs) {
      constants.push_back(constantDataBytes(v));
      ASSERT_TRUE(v->isBlockArgument() || constants.back()) << "a kernel input computed in the program";
      buffers.push_back(v->isBlockArgument() ? inputs[v->index()].data() : const_cast<void*>(constants.back()));
    }
    ASSERT_EQ(group.outputs.size(), 1u);
    Tensor output(group.outputs[0]->type());
    buffers.push_back(output.data());
    auto call = OnednnCall::create(codegen::selectLibraryCall(group, codegen::Target::Cpu), constants, 1);
    ASSERT_TRUE(call.ok()) << call.error().str();
    std::vector<std::string> primitives = (*call)->primitives();
    bool reordersActivations = primitives.back().starts_with("reorder");  // the output, after the call
    if (!reordersActivations)
      std::cout << "oneDNN takes these activations as kiln lays them out (" << primitives.back() << "): one slice\n";
    EXPECT_EQ((*call)->batchSlices(), reordersActivations ? c.slices : 1);
    auto want = interpret(f, inputs);
    ASSERT_TRUE(want.ok()) << want.error().str();
    for (int run = 0; run < 2; ++run) {  // the second with the kept scratch
      ASSERT_TRUE((*call)->run(buffers.data()).ok());
      expectClose(output, (*want)[0], "sliced convolution");
    }
  }
}

// A channels-last convolution with constant weights: where oneDNN has a jit kernel for NHWC, it
// reads x and writes y as kiln holds them, so a run is the convolution alone (its weights packed
// once), with no reorder of the activations before or after it; equal to the interpreter.
TEST(Onednn, ChannelsLastActivationsAreNotReordered) {
#if !KILN_HAVE_ONEDNN
  GTEST_SKIP() << "kiln was built without oneDNN (libdnnl-dev)";
#endif
  const std::string texts[] = {
      fmt::format(R"(func @main(%x: f32[1,14,14,16], %b: f32[24]) -> f32[1,14,14,24] {{
  %w = constant {} : f32[24,16,3,3]
  %c = conv2d %x, %w {{pads = [1, 1, 1, 1], layout = "nhwc"}}
  %y = add %c, %b
  return %y
}})", literal({24, 16, 3, 3})),
      fmt::format(R"(func @main(%x: f32[2,9,9,16]) -> f32[2,5,5,16] {{
  %w = constant {} : f32[16,1,3,3]
  %y = conv2d %x, %w {{pads = [1, 1, 1, 1], strides = [2, 2], groups = 16, layout = "nhwc"}}
  return %y
}})", literal({16, 1, 3, 3})),
  };
  // A training step's gradients (the channels-last pass makes them NHWC with the forward
  // convolutions): backward-data with constant weights (packed once) is the convolution alone;
  // backward-filter may reorder its output, the weights' gradient, from oneDNN's blocked layout.
  const std::string gradients[] = {
      fmt::format(R"(func @main(%dy: f32[2,8,8,24]) -> f32[2,8,8,16] {{
  %w = constant {} : f32[24,16,3,3]
  %dx = conv2d_backward_data %dy, %w {{pads = [1, 1, 1, 1], input_shape = [2, 8, 8, 16], layout = "nhwc"}}
  return %dx
}})", literal({24, 16, 3, 3})),
      R"(func @main(%x: f32[2,8,8,16], %dy: f32[2,8,8,24]) -> f32[24,16,3,3] {
  %dw = conv2d_backward_filter %x, %dy {pads = [1, 1, 1, 1], filter_shape = [24, 16, 3, 3], layout = "nhwc"}
  return %dw
})",
  };
  auto inPlace = [](size_t mostPrimitives, bool packed) {
    return [=](const OnednnCall& call) {
      std::vector<std::string> primitives = call.primitives();
      auto found = std::find_if(primitives.begin(), primitives.end(),
                                [](const std::string& p) { return p.starts_with("convolution:"); });
      ASSERT_NE(found, primitives.end()) << "no convolution among the call's primitives";
      const std::string conv = *found;
      if (!conv.starts_with("convolution:jit") && !conv.starts_with("convolution:brg")) {
        std::cout << "oneDNN has no jit kernel for NHWC here (" << conv << "): the activations are reordered\n";
        return;
      }
      EXPECT_EQ(found, primitives.begin()) << "a reorder runs before " << conv;
      EXPECT_LE(primitives.size(), mostPrimitives) << "a reorder runs after " << conv;
      if (packed) {
        EXPECT_GT(call.packedBytes(), 0u);
      }
    };
  };
  for (const std::string& text : texts) checkLibraryCalls(text, inPlace(1, true));
  checkLibraryCalls(gradients[0], inPlace(1, true));
  checkLibraryCalls(gradients[1], inPlace(2, false));
}

TEST(Onednn, WhatItDoesNotTakeSaysWhy) {
#if !KILN_HAVE_ONEDNN
  GTEST_SKIP() << "kiln was built without oneDNN (libdnnl-dev)";
#endif
  struct Refused {
    const char* text;
    const char* reason;
  };
  const Refused refused[] = {
      {R"(func @main(%a: f64[4,8], %b: f64[8,4]) -> f64[4,4] {
  %c = matmul %a, %b
  return %c
})",
       "generated kernel: f64 matmul: kiln calls oneDNN for f32, bf16 and f16 only"},
      {R"(func @main(%a: i32[4,8], %b: i32[8,4]) -> i32[4,4] {
  %c = matmul %a, %b
  return %c
})",
       "generated kernel: i32 matmul: oneDNN has no integer matmul with kiln's semantics (same dtype in and out, wrapping)"},
      {R"(func @main(%x: f64[1,2,5,5], %w: f64[3,2,3,3]) -> f64[1,3,3,3] {
  %y = conv2d %x, %w
  return %y
})",
       "generated kernel: f64 conv2d: kiln calls oneDNN for f32, bf16 and f16 only"},
      // A fusion the fusion pass would not form (its gelu is no oneDNN epilogue), written by hand.
      {R"(func @main(%a: f32[4,8], %b: f32[8,4]) -> f32[4,4] {
  %out = fusion {kind = "library"} () {
    %c = matmul %a, %b
    %e = gelu %c
    yield %e
  }
  return %out
})",
       "generated kernel: gelu is the erf form (approximate = \"none\"); oneDNN's GELU epilogue (as kiln uses it) is the tanh "
       "approximation"},
  };
  for (const Refused& r : refused) {
    Checked run;
    ASSERT_NO_FATAL_FAILURE(expectCallAndResult(r.text, r.reason, 2, run));
  }
}

}  // namespace
}  // namespace kiln
