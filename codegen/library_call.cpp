// selectLibraryCall: match a kernel group against what cuBLASLt and cuDNN (on the GPU) or oneDNN
// (on the CPU) compute in one call.
// Everything the library cannot do exactly as the IR says sends the whole group to the generated
// kernel, with the reason; the library never computes part of a group (one call or one kernel
// per group keeps the runtime's thunk list and its fallback simple).
#include "codegen/library_call.h"

#include <algorithm>
#include <climits>
#include <optional>
#include <unordered_set>

#include <fmt/format.h>

#include "passes/epilogue_match.h"
#include "ir/constant_data.h"
#include "ir/shape_rules.h"

namespace kiln::codegen {

using passes::Activation;
using passes::classifyActivation;

namespace {

bool isLibraryOp(const Op& op) { return op.info().cls == OpClass::Library; }

// The group buffer holding `v`: its index among the inputs, looking through reshapes inside the
// group (a reshape moves no data, so it reads the same row-major buffer). -1 when the group
// computes the value.
int bufferOf(const KernelGroup& group, const Value* v) {
  while (v->definingOp() && v->definingOp()->kind() == OpKind::Reshape &&
         std::find(group.ops.begin(), group.ops.end(), v->definingOp()) != group.ops.end())
    v = v->definingOp()->operand(0);
  auto it = std::find(group.inputs.begin(), group.inputs.end(), v);
  return it == group.inputs.end() ? -1 : static_cast<int>(it - group.inputs.begin());
}

std::string valueText(const Value* v) { return "%" + v->name() + " : " + v->type().str(); }

// The group's ops that read the hero's result, directly or through each other, in program order.
std::vector<const Op*> downstreamOf(const KernelGroup& group, const Op& hero) {
  std::vector<const Op*> ops;
  std::unordered_set<const Value*> downstream{hero.result()};
  for (const Op* op : group.ops) {
    if (op == &hero) continue;
    if (std::none_of(op->operands().begin(), op->operands().end(), [&](const Value* v) { return downstream.count(v) > 0; }))
      continue;  // computes an operand of the epilogue (a reshaped bias), judged where it is used
    ops.push_back(op);
    downstream.insert(op->result());
  }
  return ops;
}

std::string opNames(const std::vector<const Op*>& ops) {
  std::string text;
  for (const Op* op : ops) text += (text.empty() ? "" : ",") + std::string(op->name());
  return text;
}

// A constant the kernel holds as an immediate; constant data (ir/constant_data.h) is a buffer.
bool isImmediateConstant(const Value* v) {
  return v->definingOp() && v->definingOp()->kind() == OpKind::Constant && !isConstantData(v);
}

// Whether every operand of `ops` is `x`, a result of `ops` or an immediate: a function of x alone.
bool readsOnly(const std::vector<const Op*>& ops, const Value* x) {
  std::unordered_set<const Value*> known{x};
  for (const Op* op : ops) {
    for (const Value* v : op->operands())
      if (!known.count(v) && !isImmediateConstant(v)) return false;
    known.insert(op->result());
  }
  return true;
}

// A library op's epilogue taken apart: an optional bias add first, then an optional residual add,
// then an optional activation.
struct Epilogue {
  const Value* bias = nullptr;  // the bias add's other operand
  int biasBuffer = -1;
  int residualBuffer = -1;      // the residual add's other operand's buffer
  bool hasActivation = false;
  Activation activation = Activation::Other;
  std::string reason;  // set: the generated kernel runs the group
};

// `biasText` describes the bias the library adds (passes::isLibraryBias) for the reason when an
// add's other operand is not one; `library` names the library in reasons.
Epilogue splitEpilogue(const KernelGroup& group, const Op& hero, const std::string& biasText, const std::string& library) {
  Epilogue e;
  std::vector<const Op*> ops = downstreamOf(group, hero);
  const Value* result = ops.empty() ? hero.result() : ops.back()->result();
  if (group.outputs.size() != 1 || group.outputs[0] != result) {
    auto extra = std::find_if(group.outputs.begin(), group.outputs.end(), [&](const Value* v) { return v != result; });
    e.reason = extra == group.outputs.end()
                   ? "the kernel stores " + std::to_string(group.outputs.size()) + " values, not one result"
                   : "the kernel also stores " + valueText(*extra) + ", which a library epilogue cannot write";
    return e;
  }
  if (DType out = result->type().dtype, t = hero.result()->type().dtype; out != t) {
    e.reason = "the epilogue ends in " + std::string(dtypeName(out)) + ", and " + library + " writes the " +
               std::string(hero.name()) + "'s " + std::string(dtypeName(t));
    return e;
  }
  const Value* x = hero.result();
  std::vector<const Op*> rest = ops;
  if (!ops.empty() && ops[0]->kind() == OpKind::Add && ops[0]->operand(0) != ops[0]->operand(1)) {
    const Value* other = ops[0]->operand(0) == x ? ops[0]->operand(1) : ops[0]->operand(0);
    // Adding an immediate is no bias buffer (judged below with the other ops), nor is a residual
    // that is no bias (judged next).
    bool bias = passes::isLibraryBias(hero, *other);
    bool residual = !bias && passes::isLibraryResidual(hero, *ops[0], x);
    if (!isImmediateConstant(other) && !residual) {
      if (!bias)
        e.reason = "add of " + valueText(other) + " is not " + biasText + ", which is all " + library + " adds";
      else if ((e.biasBuffer = bufferOf(group, other)) < 0)
        e.reason = "the bias " + valueText(other) + " is computed in the kernel";
      if (!e.reason.empty()) return e;
      e.bias = other;
      x = ops[0]->result();
      rest.erase(rest.begin());
    }
  }
  if (!rest.empty() && passes::isLibraryResidual(hero, *rest[0], x)) {
    const Op& add = *rest[0];
    const Value* other = add.operand(0) == x ? add.operand(1) : add.operand(0);
    if ((e.residualBuffer = bufferOf(group, other)) < 0) {
      e.reason = "the residual " + valueText(other) + " is computed in the kernel";
      return e;
    }
    x = add.result();
    rest.erase(rest.begin());
  }
  if (rest.empty()) return e;
  e.hasActivation = true;
  e.activation = classifyActivation(rest, x);
  if (e.activation == Activation::Other && !readsOnly(rest, x))
    e.reason = "epilogue '" + opNames(ops) + "' is not a bias add, a residual add and one activation (each optional), in that order";
  else if (e.activation == Activation::Other)
    e.reason = "epilogue '" + opNames(rest) + "' has no " + library + " epilogue";
  return e;
}

bool fitsInt32(std::initializer_list<int64_t> values) {
  return std::all_of(values.begin(), values.end(), [](int64_t v) { return v >= 0 && v <= INT32_MAX; });
}

// An operand's batch stride over the broadcast batch `out`: a whole matrix when it has every
// batch dim of size > 1, 0 when it has none of them (broadcast), nothing when it has some only
// (then the batch index is no single stride times the operand's matrix index).
std::optional<int64_t> batchStride(const Shape& operandBatch, const Shape& out, int64_t matrixSize) {
  bool some = false, all = true;
  size_t offset = out.size() - operandBatch.size();
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == 1) continue;
    bool has = i >= offset && operandBatch[i - offset] == out[i];
    some |= has;
    all &= has;
  }
  if (all) return some ? matrixSize : 0;
  if (!some) return 0;
  return std::nullopt;
}

// A matmul operand's buffer: the value's own, or, for a transpose of the last two axes of a
// buffer (passes/fusion_rules.cpp lets a library kernel hold one), that buffer read transposed.
struct OperandBuffer {
  int buffer = -1;
  bool transposed = false;
};
OperandBuffer operandBuffer(const KernelGroup& group, const Value* operand) {
  const Op* op = operand->definingOp();
  bool inGroup = op && std::find(group.ops.begin(), group.ops.end(), op) != group.ops.end();
  if (inGroup && isMatrixTranspose(*op))
    return {bufferOf(group, op->operand(0)), true};
  return {bufferOf(group, operand), false};
}

LibraryCall selectMatmul(const KernelGroup& group, const Op& hero, const std::string& lib) {
  DType dtype = hero.result()->type().dtype;
  if (isInt(dtype))
    return GeneratedKernel{std::string(dtypeName(dtype)) +
                           " matmul: " + lib + " has no integer matmul with kiln's semantics (same dtype in and out, wrapping)"};
  const Shape& a = hero.operand(0)->type().shape;
  const Shape& b = hero.operand(1)->type().shape;
  Shape a2 = a.size() == 1 ? Shape{1, a[0]} : a;  // NumPy's 1-D promotion
  Shape b2 = b.size() == 1 ? Shape{b[0], 1} : b;
  MatmulCall call;
  call.dtype = dtype;
  call.m = a2[a2.size() - 2];
  call.k = a2.back();
  call.n = b2.back();
  Shape batchA(a2.begin(), a2.end() - 2), batchB(b2.begin(), b2.end() - 2);
  // The broadcast batch shape (the verifier checked that the two broadcast).
  Shape batch(std::max(batchA.size(), batchB.size()), 1);
  for (const Shape* operand : {&batchA, &batchB})
    for (size_t i = 0, offset = batch.size() - operand->size(); i < operand->size(); ++i)
      if ((*operand)[i] != 1) batch[offset + i] = (*operand)[i];
  call.batch = numElements(batch);
  auto strideA = batchStride(batchA, batch, call.m * call.k), strideB = batchStride(batchB, batch, call.k * call.n);
  if (!strideA || !strideB)
    return GeneratedKernel{"batch dims " + shapeStr(batchA) + " and " + shapeStr(batchB) +
                           " broadcast in a way one strided batch cannot express"};
  call.batchStrideA = *strideA;
  call.batchStrideB = *strideB;
  OperandBuffer bufferA = operandBuffer(group, hero.operand(0)), bufferB = operandBuffer(group, hero.operand(1));
  call.a = bufferA.buffer, call.transposeA = bufferA.transposed;
  call.b = bufferB.buffer, call.transposeB = bufferB.transposed;
  // A batch only A has is just more rows of one matrix: [batch*m, k] @ [k, n], C stays contiguous
  // (not so for A stored transposed, whose rows are then k apart in each matrix).
  if (call.batch > 1 && call.batchStrideB == 0 && call.batchStrideA == call.m * call.k && !call.transposeA) {
    call.m *= call.batch;
    call.batch = 1;
    call.batchStrideA = 0;
  }
  if (call.m == 0 || call.n == 0 || call.k == 0 || call.batch == 0)
    return GeneratedKernel{"empty matmul (a dimension is 0)"};
  if (!fitsInt32({call.m, call.n, call.k, call.batch}))
    return GeneratedKernel{"matmul dimensions beyond int32, which " + lib + "'s layouts take"};
  if (call.a < 0 || call.b < 0) return GeneratedKernel{"a matmul operand is computed in the kernel"};
  call.output = static_cast<int>(group.inputs.size());

  Epilogue e = splitEpilogue(
      group, hero, "a bias of " + std::to_string(call.n) + " values, one per output column", lib);
  if (!e.reason.empty()) return GeneratedKernel{e.reason};
  if (e.activation == Activation::GeluErf)
    return GeneratedKernel{"gelu is the erf form (approximate = \"none\"); " + lib + "'s GELU epilogue (as kiln uses it) is the tanh approximation"};
  if (e.hasActivation && e.activation != Activation::Relu && e.activation != Activation::GeluTanh)
    return GeneratedKernel{"epilogue '" + opNames(downstreamOf(group, hero)) + "' is not relu or tanh-gelu, the activations " + lib +
                           " fuses after a matmul"};
  call.bias = e.biasBuffer;
  bool bias = e.bias != nullptr;
  if (!e.hasActivation)
    call.epilogue = bias ? MatmulEpilogue::Bias : MatmulEpilogue::None;
  else if (e.activation == Activation::Relu)
    call.epilogue = bias ? MatmulEpilogue::BiasRelu : MatmulEpilogue::Relu;
  else
    call.epilogue = bias ? MatmulEpilogue::BiasGelu : MatmulEpilogue::Gelu;
  call.residual = e.residualBuffer;
  if (dtype == DType::F64 && (call.epilogue != MatmulEpilogue::None || call.residual >= 0))
    return GeneratedKernel{"f64 matmul with an epilogue: kiln uses " + lib + "'s epilogues for f32, f16 and bf16 only"};
  return call;
}

// The convolution's x, w and y shapes, whichever of them the hero computes.
struct ConvShapes {
  Shape x, w, y;
};
ConvShapes convShapes(const Op& hero, ConvDirection direction) {
  const Shape& a = hero.operand(0)->type().shape;
  const Shape& b = hero.operand(1)->type().shape;
  const Shape& r = hero.result()->type().shape;
  switch (direction) {
    case ConvDirection::Forward: return {a, b, r};
    case ConvDirection::BackwardData: return {r, b, a};
    case ConvDirection::BackwardFilter: return {a, r, b};
  }
  return {a, b, r};
}

LibraryCall selectConv(const KernelGroup& group, const Op& hero, const std::string& lib) {
  ConvDirection direction = hero.kind() == OpKind::Conv2dBackwardData     ? ConvDirection::BackwardData
                            : hero.kind() == OpKind::Conv2dBackwardFilter ? ConvDirection::BackwardFilter
                                                                          : ConvDirection::Forward;
  auto [x, w, y] = convShapes(hero, direction);
  bool channelsLast = isChannelsLast(hero);
  if (channelsLast && lib != "oneDNN")
    return GeneratedKernel{"channels-last " + std::string(hero.name()) + ": kiln's " + lib + " calls take NCHW"};
  if (channelsLast) x = permuteShape(x, kChannelsFirst), y = permuteShape(y, kChannelsFirst);
  auto strides = hero.intsAttr("strides"), pads = hero.intsAttr("pads"), dilations = hero.intsAttr("dilations");
  // oneDNN takes each side's padding (its far side's follows from the output size, in the runtime);
  // cuDNN one per axis. Asymmetric pads are TensorFlow's SAME padding at stride 2 (tf2onnx's models).
  if ((pads[0] != pads[2] || pads[1] != pads[3]) && lib != "oneDNN")
    return GeneratedKernel{"asymmetric pads " + shapeStr(pads) + " (top,left,bottom,right): " + lib + " pads both sides equally"};
  ConvCall call;
  call.direction = direction;
  call.dtype = hero.result()->type().dtype;
  call.n = x[0], call.c = x[1], call.h = x[2], call.w = x[3];
  call.o = w[0], call.kh = w[2], call.kw = w[3];
  call.outH = y[2], call.outW = y[3];
  call.strideH = strides[0], call.strideW = strides[1];
  call.padH = pads[0], call.padW = pads[1];
  call.dilationH = dilations[0], call.dilationW = dilations[1];
  call.groups = hero.intAttr("groups");
  call.channelsLast = channelsLast;
  if (numElements(x) == 0 || numElements(y) == 0 || call.c == 0) return GeneratedKernel{"empty conv2d (a dimension is 0)"};
  if (!fitsInt32({call.n, call.c, call.h, call.w, call.o, call.kh, call.kw, call.outH, call.outW, call.strideH,
                  call.strideW, call.padH, call.padW, call.dilationH, call.dilationW}) ||
      numElements(x) > INT32_MAX || numElements(y) > INT32_MAX)
    return GeneratedKernel{"conv2d sizes beyond int32, which " + lib + "'s 4-d descriptors take"};
  int first = bufferOf(group, hero.operand(0)), second = bufferOf(group, hero.operand(1));
  if (first < 0 || second < 0) return GeneratedKernel{std::string("a ") + std::string(hero.name()) + " operand is computed in the kernel"};
  call.output = static_cast<int>(group.inputs.size());
  if (direction != ConvDirection::Forward) {
    if (group.ops.size() != 1)
      return GeneratedKernel{std::string(hero.name()) + " with fused ops: " + lib + "'s backward convolutions fuse no epilogue"};
    if (direction == ConvDirection::BackwardData) call.dy = first, call.weights = second;
    else call.x = first, call.dy = second;
    return call;
  }
  call.x = first;
  call.weights = second;

  std::string o = std::to_string(call.o);
  Epilogue e = splitEpilogue(group, hero, "a per-channel bias " + (channelsLast ? "[" + o + "]" : "[1," + o + ",1,1]"), lib);
  if (!e.reason.empty()) return GeneratedKernel{e.reason};
  bool onednn = lib == "oneDNN";
  bool fused = e.activation == Activation::Relu || (onednn && e.activation == Activation::Relu6);
  if (e.hasActivation && !fused)
    return GeneratedKernel{"epilogue '" + opNames(downstreamOf(group, hero)) + "' is not " +
                           (onednn ? "relu or relu6, the activations kiln has oneDNN fuse" : "relu, the one activation " + lib + " fuses")};
  if (e.hasActivation && !e.bias) {
    std::string name = e.activation == Activation::Relu6 ? "relu6" : "relu";
    return GeneratedKernel{name + " without a bias add: " + lib + " fuses " + name + " only after a bias"};
  }
  if (e.residualBuffer >= 0 && !e.bias)
    return GeneratedKernel{"a residual add without a bias add: " + lib + " adds a residual only after a bias"};
  call.bias = e.biasBuffer;
  call.residual = e.residualBuffer;
  call.epilogue = !e.bias ? ConvEpilogue::None
                  : !e.hasActivation ? ConvEpilogue::Bias
                  : e.activation == Activation::Relu6 ? ConvEpilogue::BiasRelu6
                                                      : ConvEpilogue::BiasRelu;
  if (call.dtype == DType::F64 && call.epilogue != ConvEpilogue::None)
    return GeneratedKernel{"f64 conv2d with an epilogue: kiln uses " + lib + "'s fused bias for f32, f16 and bf16 only"};
  return call;
}

}  // namespace

bool hasLibraryOp(const KernelGroup& group) {
  return std::any_of(group.ops.begin(), group.ops.end(), [](const Op* op) { return isLibraryOp(*op); });
}

const Value* inPlaceResidual(const KernelGroup& group) {
  const Op* hero = nullptr;
  for (const Op* op : group.ops)
    if (isLibraryOp(*op)) {
      if (hero) return nullptr;
      hero = op;
    }
  bool forward = hero && (hero->kind() == OpKind::Matmul || hero->kind() == OpKind::Conv2d);
  if (!forward || isInt(hero->result()->type().dtype)) return nullptr;
  Epilogue e = splitEpilogue(group, *hero, "a bias", "the library");
  if (!e.reason.empty() || e.residualBuffer < 0) return nullptr;
  const Value* residual = group.inputs[static_cast<size_t>(e.residualBuffer)];
  size_t reads = 0;
  for (const Op* op : group.ops) reads += static_cast<size_t>(std::count(op->operands().begin(), op->operands().end(), residual));
  return reads == 1 ? residual : nullptr;
}

// Below this many multiply-adds a matmul is computed faster by its generated kernel than by a
// oneDNN call, whose setup and thread start cost ~4-6 us: on the 2-core sandbox, [1,32] x [32,128]
// (4K) 1.1 us generated against 5.6 us, [1,480] x [480,20] (9.6K) 1.9 against 5.0, [1,1152] x
// [1152,48] (55K) 9.3 against 7-17, [64,64] x [64,64] (262K) 17-26 against 7-9. Squeeze-and-excite
// blocks are made of such matmuls (passes/conv_as_matmul.h).
constexpr int64_t kOnednnMinMultiplyAdds = int64_t{1} << 15;

// The same rules on both targets, with the library named: cuBLASLt and cuDNN on the GPU; oneDNN on
// the CPU, for f32, bf16 and f16 matmuls and convolutions (the generated kernels compute the
// other types as kiln specifies: f64 accumulating in f64, integers wrapping). Where oneDNN has no
// bf16 or f16 kernel, the runtime runs the f32 one between conversions.
LibraryCall selectLibraryCall(const KernelGroup& group, Target target) {
  std::vector<const Op*> heroes;
  for (const Op* op : group.ops)
    if (isLibraryOp(*op)) heroes.push_back(op);
  if (heroes.empty()) return GeneratedKernel{"no matmul or conv2d in the kernel"};
  if (heroes.size() > 1) return GeneratedKernel{"more than one matmul, conv2d or pooling op in the kernel"};
  const Op& hero = *heroes[0];
  bool cpu = target == Target::Cpu;
#if KILN_HAVE_ONEDNN
  // oneDNN's types, said first on the CPU for f64: the other rules (an f64 epilogue) are about
  // libraries that take f64. (Integer matmuls get their own reason from selectMatmul.)
  auto notOnednnType = [&](DType dtype) {
    return GeneratedKernel{std::string(dtypeName(dtype)) + " " + std::string(hero.name()) + ": kiln calls oneDNN for f32, bf16 and f16 only"};
  };
  bool pooling = hero.kind() == OpKind::MaxPool2d || hero.kind() == OpKind::AvgPool2d;
  if (cpu && !pooling && hero.result()->type().dtype == DType::F64) return notOnednnType(DType::F64);
#endif
  LibraryCall call;
  switch (hero.kind()) {
    case OpKind::Matmul: call = selectMatmul(group, hero, cpu ? "oneDNN" : "cuBLASLt"); break;
    case OpKind::Conv2d:
    case OpKind::Conv2dBackwardData:
    case OpKind::Conv2dBackwardFilter: call = selectConv(group, hero, cpu ? "oneDNN" : "cuDNN"); break;
    case OpKind::MaxPool2d:
    case OpKind::AvgPool2d: return GeneratedKernel{std::string(hero.name()) + ": kiln calls no library for pooling"};
    default: return GeneratedKernel{std::string(hero.name()) + ": no library call for it yet"};
  }
  if (!cpu || std::holds_alternative<GeneratedKernel>(call)) return call;
#if KILN_HAVE_ONEDNN
  if (DType dtype = hero.result()->type().dtype; dtype != DType::F32 && dtype != DType::BF16 && dtype != DType::F16)
    return notOnednnType(dtype);
  if (const auto* m = std::get_if<MatmulCall>(&call); m && m->batch * m->m * m->n * m->k < kOnednnMinMultiplyAdds)
    return GeneratedKernel{fmt::format("a matmul of {} multiply-adds: oneDNN's call costs more than computing it here",
                                       m->batch * m->m * m->n * m->k)};
  return call;
#else
  return GeneratedKernel{std::string(hero.name()) + ": kiln was built without oneDNN (install libdnnl-dev and rebuild)"};
#endif
}

namespace {

// "bias+residual+relu": the parts present, in the order the library applies them; "none".
std::string epilogueParts(bool bias, bool residual, const char* activation) {
  std::string text;
  for (const char* part : {bias ? "bias" : nullptr, residual ? "residual" : nullptr, activation})
    if (part) text += (text.empty() ? "" : "+") + std::string(part);
  return text.empty() ? "none" : text;
}

}  // namespace

std::string epilogueName(MatmulEpilogue epilogue, bool residual) {
  using E = MatmulEpilogue;
  bool bias = epilogue == E::Bias || epilogue == E::BiasRelu || epilogue == E::BiasGelu;
  const char* activation = epilogue == E::Relu || epilogue == E::BiasRelu   ? "relu"
                           : epilogue == E::Gelu || epilogue == E::BiasGelu ? "gelu"
                                                                            : nullptr;
  return epilogueParts(bias, residual, activation);
}

std::string epilogueName(ConvEpilogue epilogue, bool residual) {
  using E = ConvEpilogue;
  const char* activation = epilogue == E::BiasRelu ? "relu" : epilogue == E::BiasRelu6 ? "relu6" : nullptr;
  return epilogueParts(epilogue != E::None, residual, activation);
}

std::string describeLibraryCall(const LibraryCall& call, Target target) {
  std::string blas = target == Target::Cpu ? "oneDNN" : "cuBLASLt", dnn = target == Target::Cpu ? "oneDNN" : "cuDNN";
  if (const auto* m = std::get_if<MatmulCall>(&call)) {
    std::string operands = m->transposeA || m->transposeB
                               ? std::string(" of ") + (m->transposeA ? "A^T" : "A") + " and " + (m->transposeB ? "B^T" : "B")
                               : "";
    bool none = m->epilogue == MatmulEpilogue::None && m->residual < 0;
    return none ? blas + " matmul" + operands + " (no epilogue)"
                : blas + " matmul" + operands + " (epilogue " + epilogueName(m->epilogue, m->residual >= 0) + ")";
  }
  if (const auto* c = std::get_if<ConvCall>(&call)) {
    std::string conv = dnn + (c->channelsLast ? " conv2d NHWC" : " conv2d");
    if (c->direction == ConvDirection::BackwardData) return conv + " backward-data";
    if (c->direction == ConvDirection::BackwardFilter) return conv + " backward-filter";
    return c->epilogue == ConvEpilogue::None ? conv + " (no epilogue)" : conv + " (" + epilogueName(c->epilogue, c->residual >= 0) + ")";
  }
  return "generated kernel: " + std::get<GeneratedKernel>(call).reason;
}

ColumnMajorGemm columnMajorGemm(const MatmulCall& call) {
  ColumnMajorGemm g;
  g.m = call.n;
  g.n = call.m;
  g.k = call.k;
  g.first = call.b;  // B^T: n x k column-major is row-major B [k,n] as stored
  g.transFirst = call.transposeB;  // else the buffer is B^T [n,k] row-major: k x n column-major
  g.rowsFirst = call.transposeB ? call.k : call.n;
  g.colsFirst = call.transposeB ? call.n : call.k;
  g.ldFirst = g.rowsFirst;
  g.strideFirst = call.batchStrideB;
  g.second = call.a;  // A^T: k x m column-major is row-major A [m,k] as stored
  g.transSecond = call.transposeA;  // else the buffer is A^T [k,m] row-major: m x k column-major
  g.rowsSecond = call.transposeA ? call.m : call.k;
  g.colsSecond = call.transposeA ? call.k : call.m;
  g.ldSecond = g.rowsSecond;
  g.strideSecond = call.batchStrideA;
  g.output = call.output;  // C^T: n x m column-major is row-major C [m,n]
  g.ldOutput = call.n;
  g.strideOutput = call.batch > 1 ? call.m * call.n : 0;
  g.batch = call.batch;
  return g;
}

}  // namespace kiln::codegen
