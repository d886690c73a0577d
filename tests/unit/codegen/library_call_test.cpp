// selectLibraryCall on graphs run through the default pipeline: what becomes a cuBLASLt or cuDNN
// call (dims, batch strides, buffers, epilogue) and why the rest stays a generated kernel; the
// row-major to column-major GEMM mapping checked against a host matmul; and `kiln explain`'s text.
#include <gtest/gtest.h>

#include "codegen/kernel_report.h"
#include "codegen/library_call.h"
#include "codegen/optimize.h"
#include "tests/unit/codegen/cpu_test_util.h"

namespace kiln::codegen {
namespace {

// A function through the default pipeline and the planner, kept alive together.
struct Planned {
  std::unique_ptr<Module> source;
  OptimizedFunction optimized;
  std::unique_ptr<BlockPlan> plan;

  // The one kernel holding a matmul, conv2d or pooling op.
  const KernelGroup& libraryGroup() const {
    const KernelGroup* found = nullptr;
    for (const KernelGroup* g : plan->allGroups())
      if (hasLibraryOp(*g)) {
        EXPECT_EQ(found, nullptr) << "more than one library kernel";
        found = g;
      }
    KILN_INTERNAL_CHECK(found, "no library kernel in the plan");
    return *found;
  }
  LibraryCall call() const { return selectLibraryCall(libraryGroup()); }
  // The group buffer index of function parameter `name`.
  int bufferOf(const std::string& name) const {
    const auto& inputs = libraryGroup().inputs;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i]->name() == name) return static_cast<int>(i);
    return -1;
  }
};

Planned planned(const std::string& text, Target target = Target::Cpu) {
  Planned p;
  p.source = test::parseOrFail(text);
  KILN_INTERNAL_CHECK(p.source != nullptr, "parse failed");
  CompileOptions options;
  options.target = target;
  auto optimized = optimizeFunction(*p.source->entry(), options);
  KILN_INTERNAL_CHECK(optimized.ok(), "pipeline failed");
  p.optimized = std::move(*optimized);
  p.plan = planFunction(*p.optimized.function);
  return p;
}

// `signature`'s function whose body `ops` (ending in %y) is written as one library fusion: a kernel
// the fusion pass would not form (passes::libraryEpilogueProblem), as a hand-written or imported
// fusion op may still be, and which selectLibraryCall then sends to the generated kernel.
Planned plannedAsOneKernel(const std::string& signature, const std::string& ops) {
  return planned(signature + " {\n  %out = fusion {kind = \"library\"} () {\n" + ops + "    yield %y\n  }\n  return %out\n}\n");
}

// The library kernel of `p` computes its matmul or convolution alone (or with the epilogue the
// library applies) and the rest is a kernel of its own.
void expectEpilogueLeftOut(const Planned& p, size_t kernels = 2) {
  EXPECT_FALSE(std::holds_alternative<GeneratedKernel>(p.call())) << describeLibraryCall(p.call());
  EXPECT_EQ(p.plan->groups.size(), kernels);
}

MatmulCall expectMatmul(const LibraryCall& call) {
  EXPECT_TRUE(std::holds_alternative<MatmulCall>(call)) << describeLibraryCall(call);
  return std::holds_alternative<MatmulCall>(call) ? std::get<MatmulCall>(call) : MatmulCall{};
}

ConvCall expectConv(const LibraryCall& call) {
  EXPECT_TRUE(std::holds_alternative<ConvCall>(call)) << describeLibraryCall(call);
  return std::holds_alternative<ConvCall>(call) ? std::get<ConvCall>(call) : ConvCall{};
}

std::string expectFallback(const LibraryCall& call) {
  EXPECT_TRUE(std::holds_alternative<GeneratedKernel>(call)) << describeLibraryCall(call);
  return std::holds_alternative<GeneratedKernel>(call) ? std::get<GeneratedKernel>(call).reason : "";
}

TEST(SelectLibraryCall, PlainMatmul) {
  auto p = planned(R"(func @main(%x: f32[5,12], %w: f32[12,7]) -> f32[5,7] {
  %y = matmul %x, %w
  return %y
})");
  MatmulCall m = expectMatmul(p.call());
  EXPECT_EQ(m.dtype, DType::F32);
  EXPECT_EQ(m.m, 5);
  EXPECT_EQ(m.n, 7);
  EXPECT_EQ(m.k, 12);
  EXPECT_EQ(m.batch, 1);
  EXPECT_EQ(m.a, p.bufferOf("x"));
  EXPECT_EQ(m.b, p.bufferOf("w"));
  EXPECT_EQ(m.output, 2);
  EXPECT_EQ(m.bias, -1);
  EXPECT_EQ(m.epilogue, MatmulEpilogue::None);
  EXPECT_EQ(describeLibraryCall(m), "cuBLASLt matmul (no epilogue)");
}

TEST(SelectLibraryCall, BatchedMatmulHasContiguousBatchStrides) {
  auto p = planned(R"(func @main(%a: bf16[2,3,5,12], %b: bf16[2,3,12,7]) -> bf16[2,3,5,7] {
  %y = matmul %a, %b
  return %y
})");
  MatmulCall m = expectMatmul(p.call());
  EXPECT_EQ(m.dtype, DType::BF16);
  EXPECT_EQ(m.batch, 6);
  EXPECT_EQ(m.batchStrideA, 5 * 12);
  EXPECT_EQ(m.batchStrideB, 12 * 7);
}

TEST(SelectLibraryCall, BroadcastBatchIsStrideZero) {
  auto p = planned(R"(func @main(%a: f16[5,12], %b: f16[4,12,7]) -> f16[4,5,7] {
  %y = matmul %a, %b
  return %y
})");
  MatmulCall m = expectMatmul(p.call());
  EXPECT_EQ(m.batch, 4);
  EXPECT_EQ(m.batchStrideA, 0);
  EXPECT_EQ(m.batchStrideB, 12 * 7);
  // Broadcast through size-1 batch dims too: [4,1] against [1,1] on the other side.
  auto q = planned(R"(func @main(%a: f32[1,1,5,12], %b: f32[4,1,12,7]) -> f32[4,1,5,7] {
  %y = matmul %a, %b
  return %y
})");
  MatmulCall n = expectMatmul(q.call());
  EXPECT_EQ(n.batch, 4);
  EXPECT_EQ(n.batchStrideA, 0);
  EXPECT_EQ(n.batchStrideB, 12 * 7);
}

TEST(SelectLibraryCall, BatchOnlyAHasFoldsIntoRows) {
  auto p = planned(R"(func @main(%a: f32[3,5,12], %b: f32[12,7]) -> f32[3,5,7] {
  %y = matmul %a, %b
  return %y
})");
  MatmulCall m = expectMatmul(p.call());
  EXPECT_EQ(m.m, 15);
  EXPECT_EQ(m.batch, 1);
}

// A transpose of an operand's last two axes is in the matmul's kernel (passes/fusion_rules.cpp)
// and the library reads the untransposed buffer as a transposed operand; a batch only A has stays
// a batch when A is read transposed (its rows are not contiguous across matrices).
TEST(SelectLibraryCall, TransposedOperandsAreReadInPlace) {
  auto p = planned(R"(func @main(%x: f32[64,32], %w: f32[16,64]) -> f32[32,16] {
  %xt = transpose %x {perm = [1, 0]}
  %wt = transpose %w {perm = [1, 0]}
  %y = matmul %xt, %wt
  return %y
})");
  EXPECT_EQ(p.plan->groups.size(), 1u);
  MatmulCall call = expectMatmul(p.call());
  EXPECT_EQ(call.m, 32);
  EXPECT_EQ(call.k, 64);
  EXPECT_EQ(call.n, 16);
  EXPECT_TRUE(call.transposeA && call.transposeB);
  EXPECT_EQ(call.a, p.bufferOf("x"));
  EXPECT_EQ(call.b, p.bufferOf("w"));
  EXPECT_EQ(describeLibraryCall(call), "cuBLASLt matmul of A^T and B^T (no epilogue)");
  auto batch = planned(R"(func @main(%x: f32[3,16,8], %w: f32[16,4]) -> f32[3,8,4] {
  %xt = transpose %x {perm = [0, 2, 1]}
  %y = matmul %xt, %w
  return %y
})");
  MatmulCall b = expectMatmul(batch.call());
  EXPECT_TRUE(b.transposeA && !b.transposeB);
  EXPECT_EQ(b.batch, 3);
  EXPECT_EQ(b.m, 8);
  EXPECT_EQ(b.batchStrideA, 16 * 8);
  EXPECT_EQ(b.batchStrideB, 0);
  // Another permutation is a copy the library cannot read in place: a kernel of its own.
  auto other = planned(R"(func @main(%x: f32[4,3,8], %w: f32[8,5]) -> f32[3,4,5] {
  %xt = transpose %x {perm = [1, 0, 2]}
  %y = matmul %xt, %w
  return %y
})");
  EXPECT_FALSE(expectMatmul(other.call()).transposeA);
  EXPECT_EQ(other.plan->groups.size(), 2u);
}

TEST(SelectLibraryCall, MixedBatchBroadcastFallsBack) {
  auto p = planned(R"(func @main(%a: f32[2,1,5,12], %b: f32[3,12,7]) -> f32[2,3,5,7] {
  %y = matmul %a, %b
  return %y
})");
  EXPECT_EQ(expectFallback(p.call()), "batch dims [2,1] and [3] broadcast in a way one strided batch cannot express");
}

TEST(SelectLibraryCall, OneDimensionalOperandsArePromoted) {
  auto vm = expectMatmul(planned(R"(func @main(%v: f32[12], %w: f32[12,7]) -> f32[7] {
  %y = matmul %v, %w
  return %y
})").call());
  EXPECT_EQ(vm.m, 1);
  EXPECT_EQ(vm.n, 7);
  EXPECT_EQ(vm.k, 12);
  // (On the GPU: the CPU's pipeline makes a matrix times a vector a row kernel, passes/matvec_as_rows.h.)
  auto mv = expectMatmul(planned(R"(func @main(%x: f32[3,5,12], %v: f32[12]) -> f32[3,5] {
  %y = matmul %x, %v
  return %y
})", Target::Cuda).call());
  EXPECT_EQ(mv.m, 15);  // the batch folds into rows: B is one vector
  EXPECT_EQ(mv.n, 1);
  EXPECT_EQ(mv.k, 12);
  auto dot = expectMatmul(planned(R"(func @main(%u: f64[12], %v: f64[12]) -> f64[] {
  %y = matmul %u, %v
  return %y
})").call());
  EXPECT_EQ(dot.m, 1);
  EXPECT_EQ(dot.n, 1);
  EXPECT_EQ(dot.dtype, DType::F64);
}

TEST(SelectLibraryCall, BiasAndReluBecomeTheEpilogue) {
  auto p = planned(R"(func @main(%x: f32[32,64], %w: f32[64,16], %b: f32[16]) -> f32[32,16] {
  %h = matmul %x, %w
  %a = add %h, %b
  %y = relu %a
  return %y
})");
  MatmulCall m = expectMatmul(p.call());
  EXPECT_EQ(m.epilogue, MatmulEpilogue::BiasRelu);
  EXPECT_EQ(m.bias, p.bufferOf("b"));
  EXPECT_EQ(m.output, static_cast<int>(p.libraryGroup().inputs.size()));
  EXPECT_EQ(describeLibraryCall(m), "cuBLASLt matmul (epilogue bias+relu)");
  // The bias on the left, as a [1,n] row, on a batched matmul.
  auto q = planned(R"(func @main(%x: f32[4,8,64], %w: f32[4,64,16], %b: f32[1,16]) -> f32[4,8,16] {
  %h = matmul %x, %w
  %y = add %b, %h
  return %y
})");
  MatmulCall n = expectMatmul(q.call());
  EXPECT_EQ(n.epilogue, MatmulEpilogue::Bias);
  EXPECT_EQ(n.bias, q.bufferOf("b"));
}

// A reshape moves no data: a bias reshaped inside the kernel is still the parameter's buffer.
TEST(SelectLibraryCall, BiasReshapedInTheKernelIsItsBuffer) {
  auto p = planned(R"(func @main(%x: f32[8,64], %w: f32[64,16], %b: f32[16]) -> f32[8,16] {
  %h = matmul %x, %w
  %b2 = reshape %b {shape = [1, 16]}
  %a = add %h, %b2
  %y = relu %a
  return %y
})");
  MatmulCall m = expectMatmul(p.call());
  EXPECT_EQ(m.epilogue, MatmulEpilogue::BiasRelu);
  EXPECT_EQ(m.bias, p.bufferOf("b"));
}

TEST(SelectLibraryCall, TanhGeluMapsAndErfGeluDoesNot) {
  auto tanh = planned(R"(func @main(%x: f16[8,64], %w: f16[64,16], %b: f16[16]) -> f16[8,16] {
  %h = matmul %x, %w
  %a = add %h, %b
  %y = gelu %a {approximate = "tanh"}
  return %y
})");
  EXPECT_EQ(expectMatmul(tanh.call()).epilogue, MatmulEpilogue::BiasGelu);
  expectEpilogueLeftOut(planned(R"(func @main(%x: f32[8,64], %w: f32[64,16]) -> f32[8,16] {
  %h = matmul %x, %w
  %y = gelu %h
  return %y
})"));
  auto erf = plannedAsOneKernel("func @main(%x: f32[8,64], %w: f32[64,16]) -> f32[8,16]",
                                "    %h = matmul %x, %w\n    %y = gelu %h\n");
  EXPECT_EQ(expectFallback(erf.call()),
            "gelu is the erf form (approximate = \"none\"); cuBLASLt's GELU epilogue (as kiln uses it) is the tanh "
            "approximation");
}

// The decompose pass expands gelu into mul/add/tanh ops (with casts for f16): the epilogue is
// recognised by what those ops compute, with or without a bias, in any float type.
TEST(SelectLibraryCall, DecomposedTanhGeluIsRecognised) {
  auto p = planned(R"(func @main(%x: f32[8,64], %w: f32[64,16]) -> f32[8,16] {
  %h = matmul %x, %w
  %y = gelu %h {approximate = "tanh"}
  return %y
})");
  EXPECT_EQ(expectMatmul(p.call()).epilogue, MatmulEpilogue::Gelu);
  auto q = planned(R"(func @main(%x: bf16[8,64], %w: bf16[64,16]) -> bf16[8,16] {
  %h = matmul %x, %w
  %y = relu %h
  return %y
})");
  EXPECT_EQ(expectMatmul(q.call()).epilogue, MatmulEpilogue::Relu);
}

TEST(SelectLibraryCall, ActivationBeforeTheBiasFallsBack) {
  const char* signature = "func @main(%x: f32[8,64], %w: f32[64,16], %b: f32[16]) -> f32[8,16]";
  const char* ops = "    %h = matmul %x, %w\n    %r = relu %h\n    %y = add %r, %b\n";
  // Fusion leaves relu and add to a kernel of their own.
  auto fused = planned(std::string(signature) + " {\n" + ops + "    return %y\n}\n");
  expectEpilogueLeftOut(fused);
  EXPECT_EQ(expectMatmul(fused.call()).epilogue, MatmulEpilogue::None);
  auto p = plannedAsOneKernel(signature, ops);
  EXPECT_EQ(expectFallback(p.call()), "epilogue 'relu,add' is not a bias add, a residual add and one activation (each optional), in that order");
}

// relu6 is an activation the matcher knows (oneDNN clips after a channels-last conv), but no
// library's matmul epilogue: a matmul written as one kernel with it falls back, on either target.
TEST(SelectLibraryCall, Relu6IsNoMatmulEpilogue) {
  auto p = plannedAsOneKernel("func @main(%x: f32[8,64], %w: f32[64,16], %b: f32[16]) -> f32[8,16]",
                              "    %h = matmul %x, %w\n    %a = add %h, %b\n    %r = relu %a\n"
                              "    %six = constant 6.0 : f32[]\n    %y = min %r, %six\n");
  for (Target target : {Target::Cuda, Target::Cpu})
    EXPECT_NE(std::get<GeneratedKernel>(selectLibraryCall(p.libraryGroup(), target)).reason.find("is not relu or tanh-gelu"),
              std::string::npos);
}

TEST(SelectLibraryCall, SiluIsNoCuBlasLtEpilogue) {
  expectEpilogueLeftOut(planned(R"(func @main(%x: f32[8,64], %w: f32[64,16]) -> f32[8,16] {
  %h = matmul %x, %w
  %y = silu %h
  return %y
})"));
  auto p = plannedAsOneKernel("func @main(%x: f32[8,64], %w: f32[64,16]) -> f32[8,16]", "    %h = matmul %x, %w\n    %y = silu %h\n");
  EXPECT_NE(expectFallback(p.call()).find("has no cuBLASLt epilogue"), std::string::npos);
}

TEST(SelectLibraryCall, UnsupportedEpilogueFallsBackWithReason) {
  expectEpilogueLeftOut(planned(R"(func @main(%x: f32[8,64], %w: f32[64,16]) -> f32[8,16] {
  %h = matmul %x, %w
  %y = sigmoid %h
  return %y
})"));
  auto p = plannedAsOneKernel("func @main(%x: f32[8,64], %w: f32[64,16]) -> f32[8,16]", "    %h = matmul %x, %w\n    %y = sigmoid %h\n");
  EXPECT_EQ(expectFallback(p.call()), "epilogue 'sigmoid' has no cuBLASLt epilogue");
  EXPECT_EQ(describeLibraryCall(p.call()), "generated kernel: epilogue 'sigmoid' has no cuBLASLt epilogue");
}

TEST(SelectLibraryCall, RowBiasIsNotACuBlasLtBias) {
  const char* signature = "func @main(%x: f32[8,64], %w: f32[64,16], %r: f32[8,1]) -> f32[8,16]";
  const char* ops = "    %h = matmul %x, %w\n    %y = add %h, %r\n";
  expectEpilogueLeftOut(planned(std::string(signature) + " {\n" + ops + "    return %y\n}\n"));
  auto p = plannedAsOneKernel(signature, ops);
  EXPECT_NE(expectFallback(p.call()).find("is not a bias of 16 values"), std::string::npos);
}

// What fusion keeps out of a library kernel besides foreign activations: an epilogue that ends in
// another dtype (the library writes the matmul's), a bias the kernel would compute (a cast of it)
// and a constant bias the kernel would hold; each is still a library call, the rest a kernel.
TEST(SelectLibraryCall, EpiloguesTheLibraryCannotWriteStayOut) {
  auto cast = planned(R"(func @main(%x: bf16[8,64], %w: bf16[64,16]) -> f32[8,16] {
  %h = matmul %x, %w
  %r = relu %h
  %y = cast %r {to = f32}
  return %y
})");
  expectEpilogueLeftOut(cast);
  auto castBias = planned(R"(func @main(%x: bf16[8,64], %w: bf16[64,16], %b: f32[16]) -> bf16[8,16] {
  %h = matmul %x, %w
  %bc = cast %b {to = bf16}
  %y = add %h, %bc
  return %y
})");
  EXPECT_FALSE(std::holds_alternative<GeneratedKernel>(castBias.call())) << describeLibraryCall(castBias.call());
  auto splat = planned(R"(func @main(%x: f32[8,64], %w: f32[64,16]) -> f32[8,16] {
  %h = matmul %x, %w
  %c = constant 0.5 : f32[16]
  %y = add %h, %c
  return %y
})");
  EXPECT_FALSE(std::holds_alternative<GeneratedKernel>(splat.call())) << describeLibraryCall(splat.call());
  // Written by hand as one kernel, the cast gets its reason.
  auto p = plannedAsOneKernel("func @main(%x: bf16[8,64], %w: bf16[64,16]) -> f32[8,16]",
                              "    %h = matmul %x, %w\n    %r = relu %h\n    %y = cast %r {to = f32}\n");
  EXPECT_EQ(expectFallback(p.call()), "the epilogue ends in f32, and cuBLASLt writes the matmul's bf16");
}

TEST(SelectLibraryCall, IntegerMatmulFallsBack) {
  auto p = planned(R"(func @main(%x: i32[4,6], %w: i32[6,3]) -> i32[4,3] {
  %y = matmul %x, %w
  return %y
})");
  EXPECT_EQ(expectFallback(p.call()),
            "i32 matmul: cuBLASLt has no integer matmul with kiln's semantics (same dtype in and out, wrapping)");
}

// A library call writes one result, so fusion keeps a value that is also needed elsewhere (%a)
// out of the matmul's epilogue: the matmul stays a cuBLASLt call, add and relu form a kernel.
TEST(SelectLibraryCall, EpilogueStopsAtAStoredIntermediate) {
  auto p = planned(R"(func @main(%x: f32[8,64], %w: f32[64,16], %b: f32[16]) -> (f32[8,16], f32[8,16]) {
  %h = matmul %x, %w
  %a = add %h, %b
  %y = relu %a
  return %y, %a
})");
  expectMatmul(p.call());
  EXPECT_EQ(p.plan->groups.size(), 2u);
}

TEST(SelectLibraryCall, ConvWithBiasAndRelu) {
  auto p = planned(R"(func @main(%x: f32[2,3,9,9], %w: f32[4,3,3,3], %b: f32[4,1,1]) -> f32[2,4,5,5] {
  %c = conv2d %x, %w {strides = [2, 2], pads = [1, 1, 1, 1]}
  %a = add %c, %b
  %y = relu %a
  return %y
})");
  ConvCall c = expectConv(p.call());
  EXPECT_EQ(c.n, 2);
  EXPECT_EQ(c.c, 3);
  EXPECT_EQ(c.h, 9);
  EXPECT_EQ(c.o, 4);
  EXPECT_EQ(c.kh, 3);
  EXPECT_EQ(c.outH, 5);
  EXPECT_EQ(c.outW, 5);
  EXPECT_EQ(c.strideH, 2);
  EXPECT_EQ(c.padW, 1);
  EXPECT_EQ(c.x, p.bufferOf("x"));
  EXPECT_EQ(c.weights, p.bufferOf("w"));
  EXPECT_EQ(c.bias, p.bufferOf("b"));
  EXPECT_EQ(c.epilogue, ConvEpilogue::BiasRelu);
  EXPECT_EQ(describeLibraryCall(c), "cuDNN conv2d (bias+relu)");
}

// relu6 (MobileNet's clip to [0, 6]) after a channels-last conv's bias: the fusion pass makes it
// the epilogue, oneDNN applies it (eltwise_clip); cuDNN's fused call cannot, so on the GPU the
// generated kernel runs the group (as it does any channels-last conv2d).
TEST(SelectLibraryCall, ChannelsLastConvWithBiasAndRelu6) {
  auto p = planned(R"(func @main(%x: f32[1,6,6,3], %w: f32[4,3,3,3], %b: f32[4]) -> f32[1,6,6,4] {
  %zero = constant 0.0 : f32[]
  %six = constant 6.0 : f32[]
  %c = conv2d %x, %w {pads = [1, 1, 1, 1], layout = "nhwc"}
  %a = add %c, %b
  %lo = max %a, %zero
  %y = min %lo, %six
  return %y
})");
  ConvCall c = expectConv(selectLibraryCall(p.libraryGroup(), Target::Cpu));
  EXPECT_TRUE(c.channelsLast);
  EXPECT_EQ(c.bias, p.bufferOf("b"));
  EXPECT_EQ(c.epilogue, ConvEpilogue::BiasRelu6);
  EXPECT_EQ(describeLibraryCall(c, Target::Cpu), "oneDNN conv2d NHWC (bias+relu6)");
  EXPECT_EQ(expectFallback(p.call()), "channels-last conv2d: kiln's cuDNN calls take NCHW");
  // Channels-first, the fusion pass leaves relu6 out (cuDNN would run that conv); written as one
  // kernel anyway, oneDNN still clips, cuDNN falls back.
  const char* signature = "func @main(%x: f32[1,3,6,6], %w: f32[4,3,3,3], %b: f32[4,1,1]) -> f32[1,4,4,4]";
  const char* ops = "    %c = conv2d %x, %w\n    %a = add %c, %b\n    %lo = relu %a\n"
                    "    %six = constant 6.0 : f32[]\n    %y = min %lo, %six\n";
  expectEpilogueLeftOut(planned(std::string(signature) + " {\n" + ops + "    return %y\n}\n"));
  auto one = plannedAsOneKernel(signature, ops);
  EXPECT_EQ(expectConv(selectLibraryCall(one.libraryGroup(), Target::Cpu)).epilogue, ConvEpilogue::BiasRelu6);
  EXPECT_NE(expectFallback(one.call()).find("is not relu, the one activation cuDNN fuses"), std::string::npos);
}

TEST(SelectLibraryCall, GroupedDilatedConv) {
  auto p = planned(R"(func @main(%x: f16[1,4,10,10], %w: f16[6,2,3,3]) -> f16[1,6,6,6] {
  %y = conv2d %x, %w {dilations = [2, 2], groups = 2}
  return %y
})");
  ConvCall c = expectConv(p.call());
  EXPECT_EQ(c.groups, 2);
  EXPECT_EQ(c.dilationH, 2);
  EXPECT_EQ(c.epilogue, ConvEpilogue::None);
}

TEST(SelectLibraryCall, AsymmetricPadsFallBack) {
  auto p = planned(R"(func @main(%x: f32[1,3,8,8], %w: f32[4,3,3,3]) -> f32[1,4,7,7] {
  %y = conv2d %x, %w {pads = [1, 1, 0, 0]}
  return %y
})");
  EXPECT_EQ(expectFallback(p.call()), "asymmetric pads [1,1,0,0] (top,left,bottom,right): cuDNN pads both sides equally");
}

TEST(SelectLibraryCall, ConvReluWithoutBiasFallsBack) {
  const char* signature = "func @main(%x: f32[1,3,8,8], %w: f32[4,3,3,3]) -> f32[1,4,6,6]";
  const char* ops = "    %c = conv2d %x, %w\n    %y = relu %c\n";
  expectEpilogueLeftOut(planned(std::string(signature) + " {\n" + ops + "    return %y\n}\n"));
  auto p = plannedAsOneKernel(signature, ops);
  EXPECT_EQ(expectFallback(p.call()), "relu without a bias add: cuDNN fuses relu only after a bias");
}

// A residual, one value per output element read from a buffer, added after the bias and before
// the activation (either operand order): cuBLASLt's C, cuDNN's z, oneDNN's sum post-op.
TEST(SelectLibraryCall, ResidualsAfterTheBiasAreTheEpilogues) {
  auto m = planned(R"(func @main(%x: f32[8,64], %w: f32[64,16], %b: f32[16], %r: f32[8,16]) -> f32[8,16] {
  %h = matmul %x, %w
  %a = add %h, %b
  %s = add %r, %a
  %y = relu %s
  return %y
})");
  MatmulCall mc = expectMatmul(selectLibraryCall(m.libraryGroup(), Target::Cuda));
  EXPECT_EQ(mc.epilogue, MatmulEpilogue::BiasRelu);
  EXPECT_EQ(mc.residual, m.bufferOf("r"));
  EXPECT_EQ(describeLibraryCall(mc), "cuBLASLt matmul (epilogue bias+residual+relu)");
  EXPECT_EQ(m.plan->groups.size(), 1u) << "one kernel: the residual and relu are the call's";
  auto noBias = planned(R"(func @main(%x: f32[8,64], %w: f32[64,16], %r: f32[8,16]) -> f32[8,16] {
  %h = matmul %x, %w
  %y = add %h, %r
  return %y
})");
  EXPECT_EQ(describeLibraryCall(noBias.call(), Target::Cpu), "oneDNN matmul (epilogue residual)");
  // A ResNet block's end, its input the residual.
  auto c = planned(R"(func @main(%x: f32[2,4,9,9], %w: f32[4,4,3,3], %b: f32[4,1,1]) -> f32[2,4,9,9] {
  %c = conv2d %x, %w {pads = [1, 1, 1, 1]}
  %a = add %c, %b
  %s = add %a, %x
  %y = relu %s
  return %y
})");
  ConvCall cc = expectConv(c.call());
  EXPECT_EQ(cc.epilogue, ConvEpilogue::BiasRelu);
  EXPECT_EQ(cc.residual, c.bufferOf("x"));
  EXPECT_EQ(cc.x, cc.residual);
  EXPECT_EQ(describeLibraryCall(cc), "cuDNN conv2d (bias+residual+relu)");
}

// What a hand-written fusion may hold but no library adds: a conv2d's residual without a bias, a
// residual the kernel computes, an f64 one.
TEST(SelectLibraryCall, OtherResidualsFallBackWithReasons) {
  auto noBias = plannedAsOneKernel("func @main(%x: f32[1,4,8,8], %w: f32[4,4,3,3]) -> f32[1,4,8,8]",
                                   "    %c = conv2d %x, %w {pads = [1, 1, 1, 1]}\n    %y = add %c, %x\n");
  EXPECT_EQ(expectFallback(noBias.call()), "a residual add without a bias add: cuDNN adds a residual only after a bias");
  auto computed = plannedAsOneKernel("func @main(%x: f32[8,64], %w: f32[64,16], %r: f32[8,16]) -> f32[8,16]",
                                     "    %h = matmul %x, %w\n    %n = neg %r\n    %y = add %h, %n\n");
  EXPECT_EQ(expectFallback(computed.call()), "the residual %n : f32[8,16] is computed in the kernel");
  auto f64 = plannedAsOneKernel("func @main(%x: f64[8,64], %w: f64[64,16], %r: f64[8,16]) -> f64[8,16]",
                                "    %h = matmul %x, %w\n    %y = add %h, %r\n");
  EXPECT_EQ(expectFallback(f64.call()), "f64 matmul with an epilogue: kiln uses cuBLASLt's epilogues for f32, f16 and bf16 only");
}

TEST(SelectLibraryCall, ConvBiasOnlyAndOtherActivations) {
  auto bias = planned(R"(func @main(%x: f16[1,3,8,8], %w: f16[4,3,3,3], %b: f16[1,4,1,1]) -> f16[1,4,6,6] {
  %c = conv2d %x, %w
  %y = add %b, %c
  return %y
})");
  ConvCall c = expectConv(bias.call());
  EXPECT_EQ(c.epilogue, ConvEpilogue::Bias);
  EXPECT_EQ(c.bias, bias.bufferOf("b"));
  const char* geluSignature = "func @main(%x: f32[1,3,8,8], %w: f32[4,3,3,3], %b: f32[4,1,1]) -> f32[1,4,6,6]";
  const char* geluOps = "    %c = conv2d %x, %w\n    %a = add %c, %b\n    %y = gelu %a {approximate = \"tanh\"}\n";
  auto left = planned(std::string(geluSignature) + " {\n" + geluOps + "    return %y\n}\n");
  expectEpilogueLeftOut(left);  // the bias add goes with the gelu, which fusion grew first
  EXPECT_EQ(expectConv(left.call()).epilogue, ConvEpilogue::None);
  auto gelu = plannedAsOneKernel(geluSignature, geluOps);
  EXPECT_NE(expectFallback(gelu.call()).find("is not relu, the one activation cuDNN fuses"), std::string::npos);
  auto wrongBias = plannedAsOneKernel("func @main(%x: f32[1,3,8,8], %w: f32[4,3,3,3], %b: f32[6]) -> f32[1,4,6,6]",
                                      "    %c = conv2d %x, %w\n    %y = add %c, %b\n");
  EXPECT_NE(expectFallback(wrongBias.call()).find("is not a per-channel bias [1,4,1,1]"), std::string::npos);
}

// The backward convolutions grad emits map to cuDNN's backward-data and backward-filter with the
// forward convolution's geometry (x, w and y shapes as conv2d's), and fall back when fused.
TEST(SelectLibraryCall, BackwardConvolutionsAreCudnnCalls) {
  auto data = planned(R"(func @main(%dy: f32[2,4,5,5], %w: f32[4,3,3,3]) -> f32[2,3,9,9] {
  %dx = conv2d_backward_data %dy, %w {strides = [2, 2], pads = [1, 1, 1, 1], input_shape = [2, 3, 9, 9]}
  return %dx
})");
  ConvCall d = expectConv(data.call());
  EXPECT_EQ(d.direction, ConvDirection::BackwardData);
  EXPECT_EQ(d.n, 2);
  EXPECT_EQ(d.c, 3);
  EXPECT_EQ(d.h, 9);
  EXPECT_EQ(d.o, 4);
  EXPECT_EQ(d.outH, 5);
  EXPECT_EQ(d.strideH, 2);
  EXPECT_EQ(d.dy, data.bufferOf("dy"));
  EXPECT_EQ(d.weights, data.bufferOf("w"));
  EXPECT_EQ(describeLibraryCall(d), "cuDNN conv2d backward-data");

  auto filter = planned(R"(func @main(%x: f16[1,4,10,10], %dy: f16[1,6,6,6]) -> f16[6,2,3,3] {
  %dw = conv2d_backward_filter %x, %dy {dilations = [2, 2], groups = 2, filter_shape = [6, 2, 3, 3]}
  return %dw
})");
  ConvCall f = expectConv(filter.call());
  EXPECT_EQ(f.direction, ConvDirection::BackwardFilter);
  EXPECT_EQ(f.groups, 2);
  EXPECT_EQ(f.dilationH, 2);
  EXPECT_EQ(f.kh, 3);
  EXPECT_EQ(f.x, filter.bufferOf("x"));
  EXPECT_EQ(f.dy, filter.bufferOf("dy"));
  EXPECT_EQ(describeLibraryCall(f), "cuDNN conv2d backward-filter");

  // Fusion leaves them alone (cuDNN takes no epilogue for them), so the add is a kernel of its own.
  auto summed = planned(R"(func @main(%dy: f32[2,4,5,5], %w: f32[4,3,3,3], %g: f32[2,3,9,9]) -> f32[2,3,9,9] {
  %dx = conv2d_backward_data %dy, %w {strides = [2, 2], pads = [1, 1, 1, 1], input_shape = [2, 3, 9, 9]}
  %sum = add %dx, %g
  return %sum
})");
  EXPECT_EQ(expectConv(summed.call()).direction, ConvDirection::BackwardData);
  EXPECT_EQ(summed.plan->groups.size(), 2u);
}

TEST(SelectLibraryCall, PoolingStaysGenerated) {
  auto p = planned(R"(func @main(%x: f32[1,3,8,8]) -> f32[1,3,4,4] {
  %y = max_pool2d %x {kernel = [2, 2]}
  return %y
})");
  EXPECT_EQ(expectFallback(p.call()), "max_pool2d: kiln calls no library for pooling");
}

// Row-major matmul C[b] = A[b] @ B[b] computed the way cuBLASLt will: a column-major GEMM over
// the buffers columnMajorGemm names, with its leading dimensions and batch strides.
std::vector<double> columnMajorProduct(const ColumnMajorGemm& g, const std::vector<std::vector<double>>& buffers,
                                       size_t outputSize) {
  std::vector<double> d(outputSize, 0.0);
  const auto& first = buffers[static_cast<size_t>(g.first)];
  const auto& second = buffers[static_cast<size_t>(g.second)];
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < g.k; ++p) {
          // op(first)[i][p] and op(second)[p][j], each column-major as stored (CUBLAS_OP_T: the
          // stored matrix's [p][i] and [j][p]).
          int64_t atFirst = g.transFirst ? p + i * g.ldFirst : i + p * g.ldFirst;
          int64_t atSecond = g.transSecond ? j + p * g.ldSecond : p + j * g.ldSecond;
          sum += first[static_cast<size_t>(b * g.strideFirst + atFirst)] *
                 second[static_cast<size_t>(b * g.strideSecond + atSecond)];
        }
        d[static_cast<size_t>(b * g.strideOutput + i + j * g.ldOutput)] = sum;
      }
  return d;
}

TEST(ColumnMajorGemm, SwapsOperandsAndTransposesShapes) {
  MatmulCall call;
  call.m = 5, call.n = 7, call.k = 12, call.batch = 3;
  call.batchStrideA = 60, call.batchStrideB = 0;
  call.a = 0, call.b = 1, call.output = 2;
  ColumnMajorGemm g = columnMajorGemm(call);
  EXPECT_EQ(g.m, 7);
  EXPECT_EQ(g.n, 5);
  EXPECT_EQ(g.k, 12);
  EXPECT_EQ(g.first, 1);
  EXPECT_EQ(g.ldFirst, 7);
  EXPECT_EQ(g.strideFirst, 0);
  EXPECT_EQ(g.second, 0);
  EXPECT_EQ(g.ldSecond, 12);
  EXPECT_EQ(g.strideSecond, 60);
  EXPECT_EQ(g.output, 2);
  EXPECT_EQ(g.ldOutput, 7);
  EXPECT_EQ(g.strideOutput, 35);
}

// Every selected matmul of these graphs, run as the column-major GEMM, equals the interpreter.
TEST(ColumnMajorGemm, ComputesTheRowMajorProduct) {
  const char* sources[] = {
      R"(func @main(%a: f64[5,12], %b: f64[12,7]) -> f64[5,7] {
  %y = matmul %a, %b
  return %y
})",
      R"(func @main(%a: f64[3,5,4], %b: f64[3,4,6]) -> f64[3,5,6] {
  %y = matmul %a, %b
  return %y
})",
      R"(func @main(%a: f64[5,4], %b: f64[2,3,4,6]) -> f64[2,3,5,6] {
  %y = matmul %a, %b
  return %y
})",
      R"(func @main(%a: f64[2,5,4], %b: f64[4,6]) -> f64[2,5,6] {
  %y = matmul %a, %b
  return %y
})",
      R"(func @main(%a: f64[4], %b: f64[3,4,6]) -> f64[3,6] {
  %y = matmul %a, %b
  return %y
})",
      // Operands transposed in the kernel, read in place (CUBLAS_OP_T).
      R"(func @main(%a: f64[12,5], %b: f64[7,12]) -> f64[5,7] {
  %at = transpose %a {perm = [1, 0]}
  %bt = transpose %b {perm = [1, 0]}
  %y = matmul %at, %bt
  return %y
})",
      R"(func @main(%a: f64[3,4,5], %b: f64[3,4,6]) -> f64[3,5,6] {
  %at = transpose %a {perm = [0, 2, 1]}
  %y = matmul %at, %b
  return %y
})",
      R"(func @main(%a: f64[2,4,5], %b: f64[6,4]) -> f64[2,5,6] {
  %at = transpose %a {perm = [0, 2, 1]}
  %bt = transpose %b {perm = [1, 0]}
  %y = matmul %at, %bt
  return %y
})",
  };
  for (const char* source : sources) {
    auto p = planned(source);
    MatmulCall call = expectMatmul(p.call());
    const Function& f = *p.source->entry();
    std::vector<Tensor> inputs = randomInputs(f, 7);
    auto want = interpret(f, inputs);
    ASSERT_TRUE(want.ok());
    std::vector<std::vector<double>> buffers;
    for (const Value* v : p.libraryGroup().inputs) {
      const Tensor& t = inputs[v->index()];  // the group reads the function's parameters
      std::vector<double> data;
      for (int64_t i = 0; i < t.numElements(); ++i) data.push_back(t.getDouble(i));
      buffers.push_back(data);
    }
    const Tensor& c = (*want)[0];
    std::vector<double> got = columnMajorProduct(columnMajorGemm(call), buffers, static_cast<size_t>(c.numElements()));
    for (int64_t i = 0; i < c.numElements(); ++i)
      ASSERT_NEAR(got[static_cast<size_t>(i)], c.getDouble(i), 1e-12) << source << "\nelement " << i;
  }
}

TEST(KernelReport, CudaTargetNamesTheLibraryCall) {
  auto m = test::parseOrFail(R"(func @main(%x: f32[32,64], %w: f32[64,16], %b: f32[16], %v: f32[16,8]) -> f32[32,8] {
  %h = matmul %x, %w
  %a = add %h, %b
  %r = relu %a
  %z = matmul %r, %v
  %y = sigmoid %z
  return %y
})");
  ASSERT_TRUE(m);
  CompileOptions cuda;
  cuda.target = Target::Cuda;
  auto report = reportPlan(*m->entry(), cuda);
  ASSERT_TRUE(report.ok());
  std::vector<std::string> calls;
  for (const KernelReport& k : report->kernels)
    if (!k.libraryCall.empty()) calls.push_back(k.libraryCall);
  // The sigmoid is no cuBLASLt epilogue: fusion leaves it to a loop kernel after the call.
  EXPECT_EQ(calls, (std::vector<std::string>{"cuBLASLt matmul (epilogue bias+relu)", "cuBLASLt matmul (no epilogue)"}));
  EXPECT_NE(report->kernels[0].layout.find("cuBLASLt matmul (epilogue bias+relu); fallback loop [32,16]"),
            std::string::npos)
      << report->kernels[0].layout;
  // The CPU target names oneDNN, or says it was built without it.
  auto cpu = reportPlan(*m->entry(), CompileOptions{});
  ASSERT_TRUE(cpu.ok());
  calls.clear();
  for (const KernelReport& k : cpu->kernels)
    if (!k.libraryCall.empty()) calls.push_back(k.libraryCall);
#if KILN_HAVE_ONEDNN
  // The second matmul has 4096 multiply-adds, fewer than a oneDNN call is worth.
  EXPECT_EQ(calls, (std::vector<std::string>{
                       "oneDNN matmul (epilogue bias+relu)",
                       "generated kernel: a matmul of 4096 multiply-adds: oneDNN's call costs more than computing it here"}));
#else
  std::string without = "generated kernel: matmul: kiln was built without oneDNN (install libdnnl-dev and rebuild)";
  EXPECT_EQ(calls, (std::vector<std::string>{without, without}));
#endif
}

}  // namespace
}  // namespace kiln::codegen
