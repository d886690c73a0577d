// OnednnCall: a MatmulCall or ConvCall as a oneDNN primitive plus the list of its arguments, each
// a memory descriptor and the kernel buffer it wraps. Row-major matmuls: A is [batch?,m,k], B
// [batch?,k,n], C [batch?,m,n] with MatmulCall's strides (a batch stride of 0 is a broadcast
// operand: a batch dim of 1), the bias [1,(1,)n]. Convolutions in kiln's layouts: NCHW (or, for a
// channels-last conv2d, NHWC) activations, OIHW weights (GOIHW with groups), the bias [o]; oneDNN
// runs them in the layouts it picks, with reorders where those differ (OnednnCall::conv).
#include "runtime/onednn.h"
#include "runtime/narrow_floats.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "codegen/host_caches.h"
#include "codegen/host_isa.h"
#include "ir/types.h"

#if KILN_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#endif

namespace kiln {

#if KILN_HAVE_ONEDNN

namespace {

Status check(dnnl_status_t status, const char* call) {
  if (status == dnnl_success) return {};
  return Error(fmt::format("oneDNN: {} failed: {}", call, dnnl_status2str(status)));
}
#define KILN_DNNL(call, ...) KILN_TRY(check(call(__VA_ARGS__), #call))

// One CPU engine for the process: oneDNN's primitives are made for an engine.
struct Engine {
  dnnl_engine_t engine = nullptr;
  Status status;
};
const Engine& engine() {
  static const Engine& e = *[] {
    auto* e = new Engine;
    // Under KILN_CPU_ISA, oneDNN's kernels keep to the same level as kiln's (set before any
    // primitive exists, as oneDNN requires; AVX-512 without AMX).
    const Expected<codegen::IsaCap>& cap = codegen::hostIsaCap();
    if (cap.ok() && *cap != codegen::IsaCap::Native) {
      dnnl_cpu_isa_t isa = *cap == codegen::IsaCap::Sse42  ? dnnl_cpu_isa_sse41
                           : *cap == codegen::IsaCap::Avx2 ? dnnl_cpu_isa_avx2
                                                           : dnnl_cpu_isa_avx512_core_bf16;
      e->status = check(dnnl_set_max_cpu_isa(isa), "dnnl_set_max_cpu_isa");
      if (!e->status.ok()) return e;
    }
    e->status = check(dnnl_engine_create(&e->engine, dnnl_cpu, 0), "dnnl_engine_create");
    return e;
  }();
  return e;
}

// A descriptor of `batch` matrices rows x cols, `batchStride` elements apart (0: one matrix
// broadcast over the batch); 2-d when the call has no batch. Row-major, or column-major where the
// buffer holds the matrix transposed (a MatmulCall's transposeA/transposeB).
dnnl_memory_desc_t matrixDesc(dnnl_data_type_t type, int64_t batch, int64_t rows, int64_t cols, int64_t batchStride,
                              bool batched, bool transposed = false) {
  dnnl_memory_desc_t md;
  int64_t rowStride = transposed ? 1 : cols, colStride = transposed ? rows : 1;
  if (batched) {
    dnnl_dims_t dims = {batchStride == 0 ? 1 : batch, rows, cols};
    dnnl_dims_t strides = {batchStride == 0 ? rows * cols : batchStride, rowStride, colStride};
    dnnl_memory_desc_init_by_strides(&md, 3, dims, type, strides);
  } else {
    dnnl_dims_t dims = {rows, cols};
    dnnl_dims_t strides = {rowStride, colStride};
    dnnl_memory_desc_init_by_strides(&md, 2, dims, type, strides);
  }
  return md;
}

// A row-major [rows, cols] matrix whose rows are 64 bytes further apart than they need be (see
// OnednnCall::State::padsRowsOfB).
dnnl_memory_desc_t paddedRows(dnnl_data_type_t type, int64_t rows, int64_t cols) {
  dnnl_memory_desc_t md;
  dnnl_dims_t dims = {rows, cols};
  dnnl_dims_t strides = {cols + 16, 1};
  dnnl_memory_desc_init_by_strides(&md, 2, dims, type, strides);
  return md;
}

dnnl_memory_desc_t plainDesc(std::vector<int64_t> dims, dnnl_format_tag_t tag, dnnl_data_type_t type = dnnl_f32) {
  dnnl_memory_desc_t md;
  dnnl_memory_desc_init_by_tag(&md, static_cast<int>(dims.size()), dims.data(), type, tag);
  return md;
}

// Primitive attributes holding the post-ops of an epilogue: a sum (the output's prior contents,
// a residual copied there, added to the result), then at most one eltwise op (relu, tanh-gelu,
// clip) with its alpha and beta (clip's bounds).
class PostOps {
 public:
  explicit PostOps(dnnl_alg_kind_t activation = dnnl_alg_kind_undef, float alpha = 0.0f, float beta = 0.0f,
                   bool sum = false) {
    status_ = check(dnnl_primitive_attr_create(&attr_), "dnnl_primitive_attr_create");
    if (!status_.ok() || (activation == dnnl_alg_kind_undef && !sum)) return;
    status_ = check(dnnl_post_ops_create(&ops_), "dnnl_post_ops_create");
    if (status_.ok() && sum) status_ = check(dnnl_post_ops_append_sum(ops_, 1.0f), "dnnl_post_ops_append_sum");
    if (status_.ok() && activation != dnnl_alg_kind_undef)
      status_ = check(dnnl_post_ops_append_eltwise(ops_, 1.0f, activation, alpha, beta), "dnnl_post_ops_append_eltwise");
    if (status_.ok()) status_ = check(dnnl_primitive_attr_set_post_ops(attr_, ops_), "dnnl_primitive_attr_set_post_ops");
  }
  ~PostOps() {
    if (ops_) dnnl_post_ops_destroy(ops_);
    if (attr_) dnnl_primitive_attr_destroy(attr_);
  }
  PostOps(const PostOps&) = delete;
  PostOps& operator=(const PostOps&) = delete;
  const Status& status() const { return status_; }
  dnnl_primitive_attr_t get() const { return attr_; }

 private:
  dnnl_primitive_attr_t attr_ = nullptr;
  dnnl_post_ops_t ops_ = nullptr;
  Status status_;
};

// The post-ops of a convolution's epilogue (after its bias, which the primitive adds): the
// residual's sum, then the activation.
PostOps convPostOps(codegen::ConvEpilogue epilogue, bool residual) {
  using E = codegen::ConvEpilogue;
  switch (epilogue) {
    case E::BiasRelu: return PostOps(dnnl_eltwise_relu, 0.0f, 0.0f, residual);
    case E::BiasRelu6: return PostOps(dnnl_eltwise_clip, 0.0f, 6.0f, residual);
    case E::None:
    case E::Bias: break;
  }
  return PostOps(dnnl_alg_kind_undef, 0.0f, 0.0f, residual);
}

// A residual's copy into the output the sum post-op adds to: nothing where the two are one
// buffer; on the OpenMP team where there is enough to share.
void copyResidual(const void* from, void* to, size_t bytes) {
  if (from == to) return;
  constexpr size_t kChunk = size_t{1} << 18;
  auto chunks = static_cast<int64_t>((bytes + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    size_t at = static_cast<size_t>(c) * kChunk;
    std::memcpy(static_cast<std::byte*>(to) + at, static_cast<const std::byte*>(from) + at, std::min(kChunk, bytes - at));
  }
}

// Runs `primitive` on `stream` with memory objects wrapping `data` as `descs` (one per argument
// of `dnnlArgs`), and waits for it.
Status execute(dnnl_primitive_t primitive, dnnl_stream_t stream, const std::vector<int>& dnnlArgs,
               const std::vector<const dnnl_memory_desc_t*>& descs, const std::vector<void*>& data) {
  Status status;
  std::vector<dnnl_exec_arg_t> args;
  for (size_t i = 0; i < dnnlArgs.size() && status.ok(); ++i) {
    dnnl_memory_t memory = nullptr;
    status = check(dnnl_memory_create(&memory, descs[i], engine().engine, data[i]), "dnnl_memory_create");
    if (status.ok()) args.push_back({dnnlArgs[i], memory});
  }
  if (status.ok())
    status = check(dnnl_primitive_execute(primitive, stream, static_cast<int>(args.size()), args.data()),
                   "dnnl_primitive_execute");
  if (status.ok()) status = check(dnnl_stream_wait(stream), "dnnl_stream_wait");
  for (const dnnl_exec_arg_t& a : args) dnnl_memory_destroy(a.memory);
  return status;
}

// A primitive descriptor, destroyed with its owner.
struct PrimitiveDesc {
  dnnl_primitive_desc_t pd = nullptr;
  PrimitiveDesc() = default;
  PrimitiveDesc(const PrimitiveDesc&) = delete;
  PrimitiveDesc& operator=(const PrimitiveDesc&) = delete;
  ~PrimitiveDesc() {
    if (pd) dnnl_primitive_desc_destroy(pd);
  }
  // oneDNN's primitive for `desc` with `attr` (a backward one given its forward's as `hint`), in
  // place of the one held before.
  Status create(const_dnnl_op_desc_t desc, const PostOps& attr, const_dnnl_primitive_desc_t hint = nullptr) {
    if (pd) dnnl_primitive_desc_destroy(pd);
    pd = nullptr;
    KILN_TRY(attr.status());
    KILN_DNNL(dnnl_primitive_desc_create, &pd, desc, attr.get(), engine().engine, hint);
    return {};
  }
  // The memory oneDNN's primitive takes for itself on each run (its scratchpad), in bytes.
  int64_t scratchpadBytes() const {
    int64_t bytes = 0;
    if (dnnl_primitive_desc_query(pd, dnnl_query_memory_consumption_s64, 0, &bytes) != dnnl_success) return 0;
    return bytes;
  }
  // The implementation oneDNN picked: "gemm:jit", "jit_1x1:avx2", "brg:avx512_core", ...
  std::string_view implementation() const {
    const char* name = nullptr;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name) != dnnl_success || !name) return "";
    return name;
  }
};

}  // namespace

// Memory in oneDNN's own layouts, between a reorder and the call (64-byte aligned, as oneDNN likes).
struct FreeDeleter {
  void operator()(std::byte* p) const { std::free(p); }
};
using ScratchBuffer = std::unique_ptr<std::byte, FreeDeleter>;
ScratchBuffer allocateScratch(size_t bytes) {
  return ScratchBuffer(static_cast<std::byte*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)));
}

// An operand in kiln's plain layout, and where oneDNN wants it.
struct LayoutOperand {
  int dnnlArg;             // DNNL_ARG_SRC, ...
  dnnl_query_t query;      // the primitive descriptor's query for the layout it chose
  dnnl_memory_desc_t plain;
  int buffer;              // the kernel buffer
  bool output;
  int queryIndex = 0;      // which of the query's operands (a matmul's bias: weights_md 1)
  int startsFrom = -1;     // an output the call adds to (the sum post-op): the buffer it starts as
  // In f32 scratch instead (a 16-bit convolution's operands, widened; its output, rounded after):
  // the scratch index of the plain memory, and of what the output starts as.
  int scratch = -1;
  int startsFromScratch = -1;
  size_t sliceBytes = 0;   // bytes of one batch slice of the kernel buffers (OnednnCall::State::slices)
  // Constant data laid out as `plain` to pack in place of the buffer's (16-bit weights widened to
  // f32 when the call was made), or null.
  const void* constant = nullptr;
};

struct OnednnCall::State {
  // An argument is a kernel buffer (buffer >= 0), scratch memory in oneDNN's own layout
  // (scratch >= 0), which reorders fill from or copy to a kernel buffer, or weights packed into
  // oneDNN's layout once, when the call was made (packed >= 0).
  struct Arg {
    int dnnlArg;
    dnnl_memory_desc_t desc;
    int buffer = -1;
    int scratch = -1;
    int packed = -1;
    size_t sliceBytes = 0;  // a kernel buffer's batch slice: bytes from one slice to the next (see slices)
  };
  struct PrimitiveDeleter {
    void operator()(dnnl_primitive_t p) const { dnnl_primitive_destroy(p); }
  };
  struct Step {
    std::unique_ptr<std::remove_pointer_t<dnnl_primitive_t>, PrimitiveDeleter> primitive;
    std::vector<Arg> args;
    std::string name;  // OnednnCall::primitives
    // Instead of a primitive: a conversion from args[0]'s memory to args[1]'s (matmulThroughF32), or
    // a residual's copy (copyResidual; `elements` counts its bytes).
    void (*convert)(const void* from, void* to, size_t elements) = nullptr;
    size_t elements = 0;
    bool firstSliceOnly = false;  // a reorder of weights, whose scratch copy serves every slice
  };
  std::vector<Step> steps;            // run in order: input reorders, the call, output reorders
  // The steps run once per slice of the batch, each over the next sliceBytes of their kernel
  // buffers' arguments, reusing the scratch memory (convBatchSlice).
  int64_t slices = 1;
  int64_t sliceCacheBytes = 0;  // what a slice's reordered activations are to fit in
  std::vector<size_t> scratchBytes;   // per scratch buffer
  // Scratch memory kept between runs (a run that finds it taken allocates its own).
  mutable std::mutex scratchMutex;
  mutable std::vector<ScratchBuffer> scratch;
  // The kernel's buffers that hold constant data (a model's weights, ir/constant_data.h), by
  // buffer index (null: not constant); and those of them packed into oneDNN's layouts.
  std::vector<const void*> constants;
  std::vector<ScratchBuffer> packed;
  size_t packedBytes = 0;

  const void* constantData(int buffer) const {
    return buffer >= 0 && static_cast<size_t>(buffer) < constants.size() ? constants[static_cast<size_t>(buffer)] : nullptr;
  }

  // Reorders constant `data` (laid out as `plain`) into `chosen` once, into memory the call keeps:
  // the argument that reads it.
  Expected<Arg> pack(int dnnlArg, const dnnl_memory_desc_t& plain, const void* data, const dnnl_memory_desc_t& chosen) {
    size_t bytes = dnnl_memory_desc_get_size(&chosen);
    ScratchBuffer memory = allocateScratch(bytes);
    if (!memory) return Error(fmt::format("oneDNN: cannot allocate {} bytes for packed weights", bytes));
    PrimitiveDesc pd;
    KILN_DNNL(dnnl_reorder_primitive_desc_create, &pd.pd, &plain, engine().engine, &chosen, engine().engine, nullptr);
    dnnl_primitive_t reorder = nullptr;
    KILN_DNNL(dnnl_primitive_create, &reorder, pd.pd);
    std::unique_ptr<std::remove_pointer_t<dnnl_primitive_t>, PrimitiveDeleter> owned(reorder);
    dnnl_stream_t stream = nullptr;
    KILN_DNNL(dnnl_stream_create, &stream, engine().engine, dnnl_stream_default_flags);
    Status s = execute(reorder, stream, {DNNL_ARG_FROM, DNNL_ARG_TO}, {&plain, &chosen}, {const_cast<void*>(data), memory.get()});
    dnnl_stream_destroy(stream);
    KILN_TRY(s);
    packed.push_back(std::move(memory));
    packedBytes += bytes;
    return Arg{dnnlArg, chosen, -1, -1, static_cast<int>(packed.size() - 1)};
  }

  // A step made now, appended to `to` (the steps, or output reorders that run after the call).
  static Status addStep(const_dnnl_primitive_desc_t pd, std::vector<Arg> args, std::vector<Step>& to) {
    dnnl_primitive_t primitive = nullptr;
    KILN_DNNL(dnnl_primitive_create, &primitive, pd);
    Step step;
    step.primitive.reset(primitive);
    step.args = std::move(args);
    dnnl_primitive_kind_t kind = dnnl_undefined_primitive;
    const char* implementation = nullptr;
    KILN_DNNL(dnnl_primitive_desc_query, pd, dnnl_query_primitive_kind, 0, &kind);
    KILN_DNNL(dnnl_primitive_desc_query, pd, dnnl_query_impl_info_str, 0, &implementation);
    step.name = fmt::format("{}:{}", dnnl_prim_kind2str(kind), implementation ? implementation : "?");
    to.push_back(std::move(step));
    return {};
  }

  // A step copying a residual from `from` into `to`, both laid out as `to.desc` (copyResidual:
  // nothing where they are one buffer).
  static Step copyStep(const Arg& from, const Arg& to) {
    Step step;
    step.args = {from, to};
    step.convert = copyResidual;
    step.elements = dnnl_memory_desc_get_size(&to.desc);  // bytes
    step.name = "copy:residual";
    return step;
  }

  // A step converting `elements` values between 16-bit (bf16 or f16, `dtype`) memory `narrow` and
  // f32 memory `wide`: widening, or, `toNarrow`, rounding back. `what` names what it converts in
  // the step's name ("residual ").
  static Step conversionStep(DType dtype, const Arg& narrow, const Arg& wide, size_t elements, bool toNarrow,
                             const std::string& what = "") {
    const bool bf16 = dtype == DType::BF16;
    const char* name = bf16 ? "bf16" : "f16";
    Step step;
    step.args = toNarrow ? std::vector<Arg>{wide, narrow} : std::vector<Arg>{narrow, wide};
    step.convert = toNarrow ? (bf16 ? roundToBFloat16 : roundToHalf) : (bf16 ? widenBFloat16 : widenHalf);
    step.elements = elements;
    step.name = toNarrow ? fmt::format("convert:{}f32 to {}", what, name) : fmt::format("convert:{}{} to f32", what, name);
    return step;
  }

  // The plain memory of operand `o`, and what an output starts as: a kernel buffer or scratch.
  static Arg plainArg(const LayoutOperand& o, int dnnlArg) {
    return o.scratch >= 0 ? Arg{dnnlArg, o.plain, -1, o.scratch} : Arg{dnnlArg, o.plain, o.buffer, -1, -1, o.sliceBytes};
  }
  static Arg startArg(const LayoutOperand& o, int dnnlArg) {
    return o.startsFromScratch >= 0 ? Arg{dnnlArg, o.plain, -1, o.startsFromScratch}
                                    : Arg{dnnlArg, o.plain, o.startsFrom, -1, -1, o.sliceBytes};
  }

  Status addPrimitive(const_dnnl_op_desc_t desc, const PostOps& attr, std::vector<Arg> args,
                      const_dnnl_primitive_desc_t hint = nullptr) {
    PrimitiveDesc pd;
    KILN_TRY(pd.create(desc, attr, hint));
    return addStep(pd.pd, std::move(args), steps);
  }

  // The primitive of `desc` (made with "any" layouts for `operands`) in the layouts oneDNN chose,
  // with reorders from and to kiln's plain layouts where they differ. `extra` are arguments
  // taken as they are (the bias).
  Status addWithLayouts(const_dnnl_op_desc_t desc, const PostOps& attr, const std::vector<LayoutOperand>& operands,
                        std::vector<Arg> extra) {
    PrimitiveDesc pd;
    KILN_TRY(pd.create(desc, attr));
    return addWithLayouts(pd, operands, std::move(extra));
  }

  // As above, for a primitive descriptor already made.
  Status addWithLayouts(const PrimitiveDesc& pd, const std::vector<LayoutOperand>& operands, std::vector<Arg> extra) {
    std::vector<Arg> args = std::move(extra);
    std::vector<Step> after;  // output reorders, run after the call
    for (const LayoutOperand& o : operands) {
      const dnnl_memory_desc_t* chosen = dnnl_primitive_desc_query_md(pd.pd, o.query, o.queryIndex);
      if (!chosen) return Error("oneDNN: the primitive reports no layout for an operand");
      if (o.constant) {  // copied into memory the call keeps, in the chosen layout
        auto arg = pack(o.dnnlArg, o.plain, o.constant, *chosen);
        if (!arg) return arg.error();
        args.push_back(*arg);
        continue;
      }
      if (dnnl_memory_desc_equal(chosen, &o.plain)) {
        args.push_back(plainArg(o, o.dnnlArg));
        if (o.startsFrom >= 0) steps.push_back(copyStep(startArg(o, 0), plainArg(o, 0)));
        continue;
      }
      // Constant weights are packed into the chosen layout now, not reordered on every run.
      if (const void* data = o.output || o.scratch >= 0 ? nullptr : constantData(o.buffer)) {
        auto arg = pack(o.dnnlArg, o.plain, data, *chosen);
        if (!arg) return arg.error();
        args.push_back(*arg);
        continue;
      }
      int k = static_cast<int>(scratchBytes.size());
      scratchBytes.push_back(dnnl_memory_desc_get_size(chosen));
      Arg inScratch{o.dnnlArg, *chosen, -1, k};
      args.push_back(inScratch);
      PrimitiveDesc reorder;
      const dnnl_memory_desc_t& from = o.output ? *chosen : o.plain;
      const dnnl_memory_desc_t& to = o.output ? o.plain : *chosen;
      KILN_DNNL(dnnl_reorder_primitive_desc_create, &reorder.pd, &from, engine().engine, &to, engine().engine, nullptr);
      Arg plain = plainArg(o, 0), blocked{0, *chosen, -1, k};
      if (o.output) {
        plain.dnnlArg = DNNL_ARG_TO, blocked.dnnlArg = DNNL_ARG_FROM;
        KILN_TRY(addStep(reorder.pd, {blocked, plain}, after));
        if (o.startsFrom >= 0) {  // the residual reordered into the scratch the call adds to
          PrimitiveDesc in;
          KILN_DNNL(dnnl_reorder_primitive_desc_create, &in.pd, &o.plain, engine().engine, chosen, engine().engine, nullptr);
          Arg residual = startArg(o, DNNL_ARG_FROM), into{DNNL_ARG_TO, *chosen, -1, k};
          KILN_TRY(addStep(in.pd, {residual, into}, steps));
        }
      } else {
        plain.dnnlArg = DNNL_ARG_FROM, blocked.dnnlArg = DNNL_ARG_TO;
        KILN_TRY(addStep(reorder.pd, {plain, blocked}, steps));
        steps.back().firstSliceOnly = o.sliceBytes == 0;
      }
    }
    KILN_TRY(addStep(pd.pd, std::move(args), steps));
    for (Step& step : after) steps.push_back(std::move(step));
    return {};
  }

  Status matmul(const codegen::MatmulCall& call) {
    // bf16 and f16: oneDNN multiplies in f32 (exact for their products), sums in f32 and rounds
    // the result once, after the epilogue, as cuBLASLt does on the GPU.
    if (call.dtype != DType::F32 && call.dtype != DType::BF16 && call.dtype != DType::F16)
      return Error("oneDNN: kiln calls it for f32, bf16 and f16 matmuls only");
    if (call.dtype == DType::F32) return matmulIn(call, dnnl_f32);
    // A 16-bit primitive oneDNN cannot make fails before anything is added (PrimitiveDesc::create).
    Status native = matmulIn(call, call.dtype == DType::BF16 ? dnnl_bf16 : dnnl_f16);
    return native.ok() ? native : matmulThroughF32(call);
  }

  // A's, B's, C's and the bias's descriptors of `call` in `type`.
  static std::array<dnnl_memory_desc_t, 4> matmulDescs(const codegen::MatmulCall& call, dnnl_data_type_t type) {
    bool batched = call.batch > 1;
    return {matrixDesc(type, call.batch, call.m, call.k, call.batchStrideA, batched, call.transposeA),
            matrixDesc(type, call.batch, call.k, call.n, call.batchStrideB, batched, call.transposeB),
            matrixDesc(type, call.batch, call.m, call.n, call.m * call.n, batched), matrixDesc(type, 1, 1, call.n, 0, batched)};
  }

  // A bf16 or f16 matmul where oneDNN has no kernel for it (2.6 has no bf16 one without AVX-512
  // and no f16 one at all: the call failed, and the generated loop ran it at ~40-70 GFLOP/s): the
  // f32 matmul, with conversions widening A and B into scratch (constant weights once, into
  // oneDNN's packed layout) and rounding C back, the bias and activation applied in f32 before
  // that one rounding, as a native kernel does. The products are exact in f32 either way.
  // [512,512] x [512,512] bf16 on a 2-core Zen 3: 6.9 -> 2.2 ms (jax.jit, which also widens to
  // f32, 2.5); f16 on the 2-core Sapphire Rapids: 5.1-5.3 -> 0.86-0.93 ms (jax.jit 1.42).
  Status matmulThroughF32(const codegen::MatmulCall& call) {
    const bool bf16 = call.dtype == DType::BF16;
    std::array<dnnl_memory_desc_t, 4> wide = matmulDescs(call, dnnl_f32), narrow = matmulDescs(call, bf16 ? dnnl_bf16 : dnnl_f16);
    const std::array<int, 4> buffers = {call.a, call.b, call.output, call.bias};
    const std::array<int, 4> dnnlArgs = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS};
    std::vector<Arg> args;
    Step roundOutput;
    for (size_t k = 0; k < buffers.size(); ++k) {
      if (buffers[k] < 0) continue;  // no bias
      // Each matrix in f32 in memory of its own, laid out as the 16-bit one (its strides), so the
      // conversion runs over the whole span element by element.
      size_t elements = dnnl_memory_desc_get_size(&narrow[k]) / 2;
      Arg plain{0, narrow[k], buffers[k]}, widened{dnnlArgs[k], wide[k]};
      if (const void* data = k == 2 ? nullptr : constantData(buffers[k])) {
        // Constant weights (or bias): widened once, now.
        packed.push_back(allocateScratch(elements * 4));
        if (!packed.back()) return Error(fmt::format("oneDNN: cannot allocate {} bytes for weights", elements * 4));
        (bf16 ? widenBFloat16 : widenHalf)(data, packed.back().get(), elements);
        packedBytes += elements * 4;
        widened.packed = static_cast<int>(packed.size() - 1);
      } else {
        widened.scratch = static_cast<int>(scratchBytes.size());
        scratchBytes.push_back(elements * 4);
        (k == 2 ? roundOutput : steps.emplace_back()) = conversionStep(call.dtype, plain, widened, elements, k == 2);
      }
      args.push_back(widened);
    }
    if (call.residual >= 0) {  // widened into the f32 output (args[2]: A, B, C, the bias) the call adds to
      steps.push_back(conversionStep(call.dtype, Arg{0, narrow[2], call.residual}, args[2],
                                     dnnl_memory_desc_get_size(&narrow[2]) / 2, false, "residual "));
    }
    dnnl_matmul_desc_t desc;
    KILN_DNNL(dnnl_matmul_desc_init, &desc, &wide[0], &wide[1], call.bias >= 0 ? &wide[3] : nullptr, &wide[2]);
    KILN_TRY(addPrimitive(&desc, PostOps(matmulActivation(call.epilogue), 0.0f, 0.0f, call.residual >= 0), std::move(args)));
    steps.push_back(std::move(roundOutput));
    return {};
  }

  static dnnl_alg_kind_t matmulActivation(codegen::MatmulEpilogue epilogue) {
    using E = codegen::MatmulEpilogue;
    return epilogue == E::Relu || epilogue == E::BiasRelu   ? dnnl_eltwise_relu
           : epilogue == E::Gelu || epilogue == E::BiasGelu ? dnnl_eltwise_gelu_tanh
                                                            : dnnl_alg_kind_undef;
  }

  // The matmul computed in `type` (f32, or bf16 where oneDNN has a kernel for it).
  Status matmulIn(const codegen::MatmulCall& call, dnnl_data_type_t type) {
    bool batched = call.batch > 1;
    auto [a, b, c, bias] = matmulDescs(call, type);
    dnnl_alg_kind_t activation = matmulActivation(call.epilogue);
    std::vector<Arg> args = {{DNNL_ARG_SRC, a, call.a}, {DNNL_ARG_DST, c, call.output}};
    if (call.bias >= 0) args.push_back({DNNL_ARG_BIAS, bias, call.bias});
    // Constant weights (a model's): described with "any", oneDNN picks its packed layout, and
    // they are packed into it once, here, instead of on every call.
    bool constant = constantData(call.b) && !batched;
    dnnl_memory_desc_t bAny;
    dnnl_dims_t dims = {call.k, call.n};
    KILN_DNNL(dnnl_memory_desc_init_by_tag, &bAny, 2, dims, type, dnnl_format_tag_any);
    dnnl_matmul_desc_t desc;
    KILN_DNNL(dnnl_matmul_desc_init, &desc, &a, constant ? &bAny : &b, call.bias >= 0 ? &bias : nullptr, &c);
    PostOps attr(activation, 0.0f, 0.0f, call.residual >= 0);
    Expected<bool> pad = padsRowsOfB(call, &desc, attr, b, constant);
    if (!pad) return pad.error();
    if (*pad) {
      dnnl_memory_desc_t padded = paddedRows(type, call.k, call.n);
      KILN_DNNL(dnnl_matmul_desc_init, &desc, &a, &padded, call.bias >= 0 ? &bias : nullptr, &c);
    }
    // C starts as the residual (the sum post-op adds the product to it), copied in before the call
    // once the primitive is made: a bf16 one oneDNN cannot make leaves no step behind.
    size_t first = steps.size();
    if (constant || *pad) {
      KILN_TRY(addWithLayouts(&desc, attr, {{DNNL_ARG_WEIGHTS, dnnl_query_weights_md, b, call.b, false}}, std::move(args)));
    } else {
      args.push_back({DNNL_ARG_WEIGHTS, b, call.b});
      KILN_TRY(addPrimitive(&desc, attr, std::move(args)));
    }
    if (call.residual >= 0)
      steps.insert(steps.begin() + static_cast<ptrdiff_t>(first), copyStep(Arg{0, c, call.residual}, Arg{0, c, call.output}));
    return {};
  }

  // Whether B is better read from a copy whose rows are 64 bytes further apart (paddedRows):
  // made every run, or packed once for constant weights. Rows a multiple of 2 KiB apart share the
  // L1's sets and evict each other where oneDNN reads B where it lies:
  // - gemm:jit (its matmul on hosts without AVX-512) does so when A has few rows (and, given "any"
  //   for constant weights, keeps B's own layout). oneDNN 2.6 on a 2-core Zen 3 (AVX2), 2 threads:
  //   [256,784] x [784,1024] 89 GFLOP/s, 185 with B's rows 1040 floats apart; alike for n = 512,
  //   1536, 2048, 4096 and m from 8 to 256; from m = 384 on it packs B itself (150-180 either way).
  // - brgemm (AVX-512) copies B into its scratchpad for some shapes (n = 512, 1024, 2048, 4096,
  //   8192 at k = 768) and reads it in place for others, at any m; its scratchpad then has no
  //   room for a panel of B. On a 2-core Sapphire Rapids, k = 768, m = 256, ms plain / padded:
  //   n = 2560 4.0 / 3.2, 3072 6.7 / 3.6, 4608 7.1 / 5.6, 6144 10.7 / 7.8; m = 1024, n = 3072
  //   27.2 / 13.1; where it copies, padding only adds the copy (n = 4096 4.7 / 5.0). With A
  //   transposed (a weight gradient's X^T dY) it copies A into its scratchpad too, so the
  //   question is asked of the product with a plain A (brgemmReadsBInPlace): X^T dY of 768 x 256
  //   x 3072 4.7 -> 3.5 ms, of 256 x 768 x 3072 8.8 -> 4.3.
  // A copy every run (k n floats read and written) costs about what it saves below m = 64;
  // packed once it is free, and helps from m = 8 (61 -> 115 GFLOP/s at k = n = 1024; at m = 1
  // the padded rows are slower).
  Expected<bool> padsRowsOfB(const codegen::MatmulCall& call, const dnnl_matmul_desc_t* desc, const PostOps& attr,
                             const dnnl_memory_desc_t& plainB, bool packedOnce) {
    constexpr int64_t kAliasingStride = 2048, kGemmPacksFromRows = 384;
    int64_t minRows = packedOnce ? 8 : 64;
    if (call.dtype != DType::F32 || call.batch > 1 || call.transposeB || (call.n * 4) % kAliasingStride != 0 ||
        call.m < minRows)
      return false;
    PrimitiveDesc pd;
    KILN_TRY(pd.create(desc, attr));
    std::string_view implementation = pd.implementation();
    bool gemmInPlace = implementation.starts_with("gemm:jit") && call.m < kGemmPacksFromRows;
    bool brgemm = implementation.starts_with("brg");
    if (!gemmInPlace && !brgemm) return false;
    if (packedOnce) {
      // Constant weights: only where oneDNN kept them in kiln's layout (else it packs them its way).
      const dnnl_memory_desc_t* chosen = dnnl_primitive_desc_query_md(pd.pd, dnnl_query_weights_md, 0);
      return chosen && dnnl_memory_desc_equal(chosen, &plainB);
    }
    if (gemmInPlace) return true;
    return brgemmReadsBInPlace(call);
  }

  // Whether oneDNN's brgemm reads a plain f32 B of `call`'s shape where it lies: its scratchpad
  // for the product of plain operands, without bias or post-op, has no room for a panel of B (one
  // column of 64 bytes per row of B).
  static Expected<bool> brgemmReadsBInPlace(const codegen::MatmulCall& call) {
    constexpr int64_t kPanelColumnBytes = 64;
    dnnl_memory_desc_t a = plainDesc({call.m, call.k}, dnnl_ab), b = plainDesc({call.k, call.n}, dnnl_ab);
    dnnl_memory_desc_t c = plainDesc({call.m, call.n}, dnnl_ab);
    dnnl_matmul_desc_t desc;
    KILN_DNNL(dnnl_matmul_desc_init, &desc, &a, &b, nullptr, &c);
    PrimitiveDesc pd;
    KILN_TRY(pd.create(&desc, PostOps()));
    return pd.implementation().starts_with("brg") && pd.scratchpadBytes() < call.k * kPanelColumnBytes;
  }

  // Whether oneDNN's `implementation` of `call` takes its channels-last activations as kiln holds
  // them: its jit and brgemm kernels do, except (oneDNN 2.6) jit_1x1's backward-weights of a
  // strided convolution, which on NHWC whose channels are no multiple of its vector reads and
  // writes past the buffers (wrong weight gradients and a corrupted heap, found by random CNN
  // training steps: tests/lit/passes/channels_last_random_grad.test); that one is reordered.
  static bool takesChannelsLastInPlace(const codegen::ConvCall& call, std::string_view implementation) {
    if (!implementation.starts_with("jit") && !implementation.starts_with("brg")) return false;
    bool strided = call.strideH > 1 || call.strideW > 1;
    return !(call.direction == codegen::ConvDirection::BackwardFilter && strided && implementation.starts_with("jit_1x1"));
  }

  // The images per slice of the batch for convolution `call`, whose primitive `pd` (made for the
  // whole batch) takes its activations in layouts other than kiln's `x` and `y`: the largest
  // divisor of the batch whose reordered activations fit in sliceCacheBytes (the host's L2
  // caches together), at least 1 (all of it where pd takes x and y as they are, or where the call
  // sums over the batch: backward weights). Each slice's input reorder then leaves the call's
  // operand in the caches, and the call leaves its output there for the output reorder, where the
  // whole batch's copies went through memory. 3x3 over f32[32,64,56,56] with bias and relu (oneDNN 2.6, brgconv on a
  // 2-core Sapphire Rapids, 4 MiB of L2), ms, reorders in / call / reorder out: the whole batch
  // 4.2-4.8 / 17-22 / 4.9-7.2, slices of 2 images 1.9-2.3 / 18-22 / 2.6-2.9, of 1 or 4 alike.
  int64_t convBatchSlice(const codegen::ConvCall& call, const PrimitiveDesc& pd, const dnnl_memory_desc_t& x,
                         const dnnl_memory_desc_t& y, size_t typeBytes) const {
    using D = codegen::ConvDirection;
    if (call.direction == D::BackwardFilter || call.n == 1) return call.n;
    bool forward = call.direction == D::Forward;
    const dnnl_memory_desc_t* chosenX = dnnl_primitive_desc_query_md(pd.pd, forward ? dnnl_query_src_md : dnnl_query_diff_src_md, 0);
    const dnnl_memory_desc_t* chosenY = dnnl_primitive_desc_query_md(pd.pd, forward ? dnnl_query_dst_md : dnnl_query_diff_dst_md, 0);
    if (!chosenX || !chosenY || (dnnl_memory_desc_equal(chosenX, &x) && dnnl_memory_desc_equal(chosenY, &y))) return call.n;
    auto imageBytes = static_cast<int64_t>(typeBytes) * (call.c * call.h * call.w + call.o * call.outH * call.outW);
    int64_t fitting = std::max<int64_t>(1, sliceCacheBytes / imageBytes);
    int64_t slice = std::min(fitting, call.n);
    while (call.n % slice != 0) --slice;
    return slice;
  }

  // Convolutions are described with "any" layouts, so oneDNN picks its own (NHWC for its brgemm
  // kernels on AVX-512, nChw16c or nChw8c for others), and reorders convert kiln's layouts around
  // the call where they differ: measured 2x faster than oneDNN's kernels for plain NCHW, reorders
  // included. A channels-last conv2d or gradient (the channels-last pass) holds x and y (dx, dy)
  // as NHWC, which oneDNN then takes as they are where it has a jit kernel for them (below).
  Status conv(const codegen::ConvCall& call) {
    if (call.dtype != DType::F32 && call.dtype != DType::BF16 && call.dtype != DType::F16)
      return Error("oneDNN: kiln calls it for f32, bf16 and f16 convolutions only");
    if (call.dtype != DType::BF16) return convIn(call, dnnl_f32);
    // bf16: oneDNN's own bf16 convolutions where the CPU has them (AVX512-BF16, AMX), else the f32
    // one between conversions. A native attempt that fails leaves nothing behind.
    size_t stepCount = steps.size(), scratchCount = scratchBytes.size(), packedCount = packed.size();
    size_t packedBefore = packedBytes;
    if (convIn(call, dnnl_bf16).ok()) return {};
    steps.resize(stepCount);
    scratchBytes.resize(scratchCount);
    packed.resize(packedCount);
    packedBytes = packedBefore;
    return convIn(call, dnnl_f32);
  }

  // The convolution computed in `type`: the call's own type, or f32 for bf16 and f16 data.
  Status convIn(const codegen::ConvCall& call, dnnl_data_type_t type) {
    dnnl_format_tag_t activations = call.channelsLast ? dnnl_nhwc : dnnl_nchw;
    // x's and y's descriptors, plain and "any", for `batch` images (all, or a slice of them).
    dnnl_memory_desc_t x, y, xAny, yAny;
    auto describe = [&](int64_t batch) {
      x = plainDesc({batch, call.c, call.h, call.w}, activations, type);
      y = plainDesc({batch, call.o, call.outH, call.outW}, activations, type);
      xAny = plainDesc({batch, call.c, call.h, call.w}, dnnl_format_tag_any, type);
      yAny = plainDesc({batch, call.o, call.outH, call.outW}, dnnl_format_tag_any, type);
    };
    describe(call.n);
    std::vector<int64_t> wDims = call.groups == 1 ? std::vector<int64_t>{call.o, call.c, call.kh, call.kw}
                                                  : std::vector<int64_t>{call.groups, call.o / call.groups,
                                                                         call.c / call.groups, call.kh, call.kw};
    dnnl_memory_desc_t w = plainDesc(wDims, call.groups == 1 ? dnnl_oihw : dnnl_goihw, type);
    dnnl_memory_desc_t wAny = plainDesc(wDims, dnnl_format_tag_any, type);
    dnnl_memory_desc_t bias = plainDesc({call.o}, dnnl_a, type);
    dnnl_dims_t strides = {call.strideH, call.strideW};
    dnnl_dims_t dilates = {call.dilationH - 1, call.dilationW - 1};  // oneDNN counts the gaps
    dnnl_dims_t padL = {call.padH, call.padW};
    // The far side's padding that gives kiln's output size (floor mode: it may pad less than the
    // op's bottom and right pads). At least 0: where asymmetric pads leave the last row unread the
    // least is -1, which oneDNN 2.6 takes too, but any of the stride values from the least up give
    // the same output size, and 0 keeps to what every implementation is written for.
    auto farSide = [](int64_t out, int64_t stride, int64_t kernel, int64_t dilation, int64_t in, int64_t pad) {
      return std::max<int64_t>(0, (out - 1) * stride + (kernel - 1) * dilation + 1 - in - pad);
    };
    dnnl_dims_t padR = {farSide(call.outH, call.strideH, call.kh, call.dilationH, call.h, call.padH),
                        farSide(call.outW, call.strideW, call.kw, call.dilationW, call.w, call.padW)};
    using D = codegen::ConvDirection;
    bool hasBias = call.direction == D::Forward && call.bias >= 0;
    PostOps epilogue = call.direction == D::Forward ? convPostOps(call.epilogue, call.residual >= 0) : PostOps();
    // The call's primitive with activations described by xs and ys; a backward one takes the
    // forward one's as a hint, which must outlive it (held in `hint`).
    auto create = [&](PrimitiveDesc& pd, PrimitiveDesc& hint, const dnnl_memory_desc_t* xs,
                      const dnnl_memory_desc_t* ys) -> Status {
      dnnl_convolution_desc_t forward, backward;
      KILN_DNNL(dnnl_dilated_convolution_forward_desc_init, &forward,
                call.direction == D::Forward ? dnnl_forward_inference : dnnl_forward_training, dnnl_convolution_direct,
                xs, &wAny, hasBias ? &bias : nullptr, ys, strides, dilates, padL, padR);
      if (call.direction == D::Forward) return pd.create(&forward, epilogue);
      KILN_TRY(hint.create(&forward, PostOps()));
      if (call.direction == D::BackwardData)
        KILN_DNNL(dnnl_dilated_convolution_backward_data_desc_init, &backward, dnnl_convolution_direct, xs, &wAny, ys,
                  strides, dilates, padL, padR);
      else
        KILN_DNNL(dnnl_dilated_convolution_backward_weights_desc_init, &backward, dnnl_convolution_direct, xs, &wAny,
                  nullptr, ys, strides, dilates, padL, padR);
      return pd.create(&backward, PostOps(), hint.pd);
    };
    // Channels-last activations as they are, where oneDNN has a jit kernel for NHWC (on AVX2 its
    // jit:avx2, jit_1x1:avx2 and jit_dw:avx2 took every convolution of MobileNetV2,
    // EfficientNet-B0 and ResNet-50, and jit:avx2 all three directions of a CNN's training step).
    // Given "any", oneDNN without AVX-512 picks nChw8c, and a reorder before and after every
    // convolution took ~40% of MobileNetV2's time: on the 2-core Zen 3 sandbox, MobileNetV2
    // 7.6-7.8 -> 4.3-4.6 ms, EfficientNet-B0 12.4-12.8 -> 8.8-9.4, ResNet-50 54-55 -> 51-53
    // (onnxruntime 4.6-5.1, 8.4-9.0, 46-54 in the same hour).
    PrimitiveDesc pd, hint;
    bool inPlace = call.channelsLast && create(pd, hint, &x, &y).ok() && takesChannelsLastInPlace(call, pd.implementation());
    if (!inPlace) KILN_TRY(create(pd, hint, &xAny, &yAny));
    const bool narrow = call.dtype != DType::F32 && type == dnnl_f32;
    // Where oneDNN reorders the activations, the call runs on slices of the batch small enough
    // for the reordered copies to stay in the caches (convBatchSlice).
    int64_t slice = inPlace || narrow ? call.n : convBatchSlice(call, pd, x, y, dnnl_data_type_size(type));
    if (slice < call.n) {
      describe(slice);
      KILN_TRY(create(pd, hint, &xAny, &yAny));
      slices = call.n / slice;
    }
    // bf16 and f16 in f32 (oneDNN 2.6 has no f16 convolutions, nor bf16 ones without AVX-512):
    // the f32 convolution on copies widened into scratch each run (constant weights and bias once,
    // when the call is made), its output rounded back once, after the epilogue, as a native kernel
    // rounds. The products are exact in f32; the sums are f32's.
    std::vector<Step> rounding;  // run after the call and its output reorder
    const int64_t xElements = call.n * call.c * call.h * call.w, yElements = call.n * call.o * call.outH * call.outW;
    const int64_t wElements = call.o * (call.c / call.groups) * call.kh * call.kw;
    // The scratch buffer holding buffer `index` (`elements` values) in f32, or -1 for f32 calls.
    auto inF32 = [&](int index, int64_t elements, bool output) {
      if (!narrow || index < 0) return -1;
      int k = static_cast<int>(scratchBytes.size());
      scratchBytes.push_back(static_cast<size_t>(elements) * 4);
      Arg plain{0, bias, index}, wide{0, bias, -1, k};  // (a conversion's descriptors go unread)
      (output ? rounding : steps).push_back(conversionStep(call.dtype, plain, wide, static_cast<size_t>(elements), output));
      return k;
    };
    // Constant 16-bit weights widened once, now, into f32 the call packs (addWithLayouts), not
    // converted on every run; null where there are none (or no memory for the copy: then they are).
    std::vector<ScratchBuffer> widenedWeights;  // until the call is made
    auto widenedOnce = [&](int index, int64_t elements) -> const void* {
      const void* data = narrow ? constantData(index) : nullptr;
      ScratchBuffer copy = data ? allocateScratch(static_cast<size_t>(elements) * 4) : nullptr;
      if (!copy) return nullptr;
      (call.dtype == DType::BF16 ? widenBFloat16 : widenHalf)(data, copy.get(), static_cast<size_t>(elements));
      widenedWeights.push_back(std::move(copy));
      return widenedWeights.back().get();
    };
    auto operand = [&](int dnnlArg, dnnl_query_t query, const dnnl_memory_desc_t& plain, int buffer, int64_t elements,
                       bool output, int residual = -1) {
      LayoutOperand o{dnnlArg, query, plain, buffer, output};
      o.startsFrom = residual;
      // The activations advance by a slice of the batch per slice; the weights are whole in each.
      if (&plain != &w) o.sliceBytes = dnnl_memory_desc_get_size(&plain);
      if (!output && buffer == call.weights) o.constant = widenedOnce(buffer, elements);
      o.scratch = o.constant ? -1 : inF32(buffer, elements, output);
      o.startsFromScratch = inF32(residual, elements, false);
      return o;
    };
    Status added;
    switch (call.direction) {
      case D::Forward: {
        std::vector<Arg> extra;
        if (hasBias && widenedOnce(call.bias, call.o)) {  // kept with the packed weights
          packed.push_back(std::move(widenedWeights.back()));
          widenedWeights.pop_back();
          packedBytes += static_cast<size_t>(call.o) * 4;
          extra.push_back(Arg{DNNL_ARG_BIAS, bias, -1, -1, static_cast<int>(packed.size() - 1)});
        } else if (hasBias) {
          int b = inF32(call.bias, call.o, false);
          extra.push_back(b >= 0 ? Arg{DNNL_ARG_BIAS, bias, -1, b} : Arg{DNNL_ARG_BIAS, bias, call.bias});
        }
        std::vector<LayoutOperand> operands = {operand(DNNL_ARG_SRC, dnnl_query_src_md, x, call.x, xElements, false),
                                               operand(DNNL_ARG_WEIGHTS, dnnl_query_weights_md, w, call.weights, wElements, false),
                                               operand(DNNL_ARG_DST, dnnl_query_dst_md, y, call.output, yElements, true, call.residual)};
        added = addWithLayouts(pd, operands, std::move(extra));
        break;
      }
      case D::BackwardData: {
        std::vector<LayoutOperand> operands = {
            operand(DNNL_ARG_DIFF_DST, dnnl_query_diff_dst_md, y, call.dy, yElements, false),
            operand(DNNL_ARG_WEIGHTS, dnnl_query_weights_md, w, call.weights, wElements, false),
            operand(DNNL_ARG_DIFF_SRC, dnnl_query_diff_src_md, x, call.output, xElements, true)};
        added = addWithLayouts(pd, operands, {});
        break;
      }
      case D::BackwardFilter: {
        std::vector<LayoutOperand> operands = {
            operand(DNNL_ARG_SRC, dnnl_query_src_md, x, call.x, xElements, false),
            operand(DNNL_ARG_DIFF_DST, dnnl_query_diff_dst_md, y, call.dy, yElements, false),
            operand(DNNL_ARG_DIFF_WEIGHTS, dnnl_query_diff_weights_md, w, call.output, wElements, true)};
        added = addWithLayouts(pd, operands, {});
        break;
      }
    }
    KILN_TRY(added);
    for (Step& step : rounding) steps.push_back(std::move(step));
    return {};
  }
};

OnednnCall::OnednnCall() : state_(std::make_unique<State>()) {}

OnednnCall::~OnednnCall() = default;

Expected<std::unique_ptr<OnednnCall>> OnednnCall::create(const codegen::LibraryCall& call,
                                                          std::vector<const void*> constants, int64_t sliceCacheBytes) {
  KILN_TRY(engine().status);
  std::unique_ptr<OnednnCall> made(new OnednnCall);
  made->state_->constants = std::move(constants);
  made->state_->sliceCacheBytes = sliceCacheBytes > 0 ? sliceCacheBytes : codegen::hostCaches().l2Bytes;
  if (const auto* m = std::get_if<codegen::MatmulCall>(&call)) {
    KILN_TRY(made->state_->matmul(*m));
  } else if (const auto* c = std::get_if<codegen::ConvCall>(&call)) {
    KILN_TRY(made->state_->conv(*c));
  } else {
    return Error("oneDNN: no library call to make");
  }
  return made;
}

size_t OnednnCall::packedBytes() const { return state_->packedBytes; }

int64_t OnednnCall::batchSlices() const { return state_->slices; }

std::vector<std::string> OnednnCall::primitives() const {
  std::vector<std::string> names;
  for (const State::Step& step : state_->steps) names.push_back(step.name);
  return names;
}

Status OnednnCall::run(void* const* buffers) const {
  const State& s = *state_;
  const dnnl_engine_t e = engine().engine;
  // Scratch memory: the kept set, or this run's own while another run holds it.
  std::unique_lock<std::mutex> kept(s.scratchMutex, std::try_to_lock);
  std::vector<ScratchBuffer> own;
  std::vector<ScratchBuffer>& scratch = kept.owns_lock() ? s.scratch : own;
  if (scratch.size() != s.scratchBytes.size())
    for (size_t bytes : s.scratchBytes) {
      scratch.push_back(allocateScratch(bytes));
      if (!scratch.back()) return Error(fmt::format("oneDNN: cannot allocate {} bytes of scratch memory", bytes));
    }
  // A stream of its own orders the steps: oneDNN streams are not to be shared between threads.
  dnnl_stream_t stream = nullptr;
  Status status = check(dnnl_stream_create(&stream, e, dnnl_stream_default_flags), "dnnl_stream_create");
  for (int64_t slice = 0; slice < s.slices && status.ok(); ++slice)
    for (const State::Step& step : s.steps) {
      if (!status.ok()) break;
      if (slice > 0 && step.firstSliceOnly) continue;
      // This run's buffers (this slice of them), scratch memory or the packed weights.
      std::vector<int> dnnlArgs;
      std::vector<const dnnl_memory_desc_t*> descs;
      std::vector<void*> data;
      for (const State::Arg& a : step.args) {
        dnnlArgs.push_back(a.dnnlArg);
        descs.push_back(&a.desc);
        data.push_back(a.buffer >= 0   ? static_cast<std::byte*>(buffers[a.buffer]) + static_cast<size_t>(slice) * a.sliceBytes
                       : a.packed >= 0 ? s.packed[static_cast<size_t>(a.packed)].get()
                                       : scratch[static_cast<size_t>(a.scratch)].get());
      }
      if (step.convert) step.convert(data[0], data[1], step.elements);
      else status = execute(step.primitive.get(), stream, dnnlArgs, descs, data);
    }
  if (stream) dnnl_stream_destroy(stream);
  return status;
}

#else  // !KILN_HAVE_ONEDNN

struct OnednnCall::State {};

OnednnCall::OnednnCall() = default;
OnednnCall::~OnednnCall() = default;
Expected<std::unique_ptr<OnednnCall>> OnednnCall::create(const codegen::LibraryCall&, std::vector<const void*>, int64_t) {
  return Error("kiln was built without oneDNN (install libdnnl-dev and rebuild)");
}
Status OnednnCall::run(void* const*) const { return Error("kiln was built without oneDNN"); }
size_t OnednnCall::packedBytes() const { return 0; }
int64_t OnednnCall::batchSlices() const { return 1; }
std::vector<std::string> OnednnCall::primitives() const { return {}; }

#endif

}  // namespace kiln
