// OnednnMatmul: a MatmulCall as oneDNN's matmul primitive. Row-major throughout: A is [batch?,m,k],
// B [batch?,k,n], C [batch?,m,n], each with the strides MatmulCall gives (a batch stride of 0 is a
// broadcast operand: a batch dim of 1 in oneDNN's descriptor); the bias is [1,(1,)n].
#include "runtime/onednn.h"

#include <fmt/format.h>

#if KILN_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include <vector>
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
    e->status = check(dnnl_engine_create(&e->engine, dnnl_cpu, 0), "dnnl_engine_create");
    return e;
  }();
  return e;
}

// A row-major descriptor of `batch` matrices rows x cols, `batchStride` elements apart (0: one
// matrix broadcast over the batch); 2-d when the call has no batch.
dnnl_memory_desc_t matrixDesc(int64_t batch, int64_t rows, int64_t cols, int64_t batchStride, bool batched) {
  dnnl_memory_desc_t md;
  if (batched) {
    dnnl_dims_t dims = {batchStride == 0 ? 1 : batch, rows, cols};
    dnnl_dims_t strides = {batchStride == 0 ? rows * cols : batchStride, cols, 1};
    dnnl_memory_desc_init_by_strides(&md, 3, dims, dnnl_f32, strides);
  } else {
    dnnl_dims_t dims = {rows, cols};
    dnnl_dims_t strides = {cols, 1};
    dnnl_memory_desc_init_by_strides(&md, 2, dims, dnnl_f32, strides);
  }
  return md;
}

}  // namespace

struct OnednnMatmul::State {
  codegen::MatmulCall call;
  dnnl_memory_desc_t a, b, bias, c;
  dnnl_primitive_t primitive = nullptr;
};

Expected<std::unique_ptr<OnednnMatmul>> OnednnMatmul::create(const codegen::MatmulCall& call) {
  if (call.dtype != DType::F32) return Error("oneDNN: kiln calls it for f32 matmuls only");
  const Engine& e = engine();
  KILN_TRY(e.status);
  std::unique_ptr<OnednnMatmul> m(new OnednnMatmul);
  m->state_ = std::make_unique<State>();
  State& s = *m->state_;
  s.call = call;
  bool batched = call.batch > 1;
  s.a = matrixDesc(call.batch, call.m, call.k, call.batchStrideA, batched);
  s.b = matrixDesc(call.batch, call.k, call.n, call.batchStrideB, batched);
  s.c = matrixDesc(call.batch, call.m, call.n, call.m * call.n, batched);
  s.bias = matrixDesc(1, 1, call.n, 0, batched);
  dnnl_matmul_desc_t desc;
  KILN_DNNL(dnnl_matmul_desc_init, &desc, &s.a, &s.b, call.bias >= 0 ? &s.bias : nullptr, &s.c);

  dnnl_primitive_attr_t attr = nullptr;
  KILN_DNNL(dnnl_primitive_attr_create, &attr);
  dnnl_post_ops_t postOps = nullptr;
  Status made = check(dnnl_post_ops_create(&postOps), "dnnl_post_ops_create");
  using E = codegen::MatmulEpilogue;
  if (made.ok() && (call.epilogue == E::Relu || call.epilogue == E::BiasRelu))
    made = check(dnnl_post_ops_append_eltwise(postOps, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f), "dnnl_post_ops_append_eltwise");
  if (made.ok() && (call.epilogue == E::Gelu || call.epilogue == E::BiasGelu))
    made = check(dnnl_post_ops_append_eltwise(postOps, 1.0f, dnnl_eltwise_gelu_tanh, 0.0f, 0.0f), "dnnl_post_ops_append_eltwise");
  if (made.ok()) made = check(dnnl_primitive_attr_set_post_ops(attr, postOps), "dnnl_primitive_attr_set_post_ops");
  dnnl_primitive_desc_t pd = nullptr;
  if (made.ok()) made = check(dnnl_primitive_desc_create(&pd, &desc, attr, e.engine, nullptr), "dnnl_primitive_desc_create");
  if (made.ok()) made = check(dnnl_primitive_create(&s.primitive, pd), "dnnl_primitive_create");
  if (pd) dnnl_primitive_desc_destroy(pd);
  if (postOps) dnnl_post_ops_destroy(postOps);
  dnnl_primitive_attr_destroy(attr);
  KILN_TRY(made);
  return m;
}

OnednnMatmul::~OnednnMatmul() {
  if (state_ && state_->primitive) dnnl_primitive_destroy(state_->primitive);
}

Status OnednnMatmul::run(void* const* buffers) const {
  const State& s = *state_;
  const Engine& e = engine();
  // Memory objects wrap this run's buffers, and a stream of its own orders the execution: oneDNN
  // streams are not to be shared between threads, and runs of one executable may overlap.
  struct Wrapped {
    int arg;
    const dnnl_memory_desc_t* desc;
    int buffer;
  };
  std::vector<Wrapped> wanted = {{DNNL_ARG_SRC, &s.a, s.call.a}, {DNNL_ARG_WEIGHTS, &s.b, s.call.b}, {DNNL_ARG_DST, &s.c, s.call.output}};
  if (s.call.bias >= 0) wanted.push_back({DNNL_ARG_BIAS, &s.bias, s.call.bias});
  std::vector<dnnl_exec_arg_t> args;
  dnnl_stream_t stream = nullptr;
  Status status = check(dnnl_stream_create(&stream, e.engine, dnnl_stream_default_flags), "dnnl_stream_create");
  for (const Wrapped& w : wanted) {
    if (!status.ok()) break;
    dnnl_memory_t memory = nullptr;
    status = check(dnnl_memory_create(&memory, w.desc, e.engine, buffers[w.buffer]), "dnnl_memory_create");
    if (!status.ok()) break;
    args.push_back({w.arg, memory});
  }
  if (status.ok())
    status = check(dnnl_primitive_execute(s.primitive, stream, static_cast<int>(args.size()), args.data()), "dnnl_primitive_execute");
  if (status.ok()) status = check(dnnl_stream_wait(stream), "dnnl_stream_wait");
  for (const dnnl_exec_arg_t& a : args) dnnl_memory_destroy(a.memory);
  if (stream) dnnl_stream_destroy(stream);
  return status;
}

#else  // !KILN_HAVE_ONEDNN

struct OnednnMatmul::State {};

Expected<std::unique_ptr<OnednnMatmul>> OnednnMatmul::create(const codegen::MatmulCall&) {
  return Error("kiln was built without oneDNN (install libdnnl-dev and rebuild)");
}
OnednnMatmul::~OnednnMatmul() = default;
Status OnednnMatmul::run(void* const*) const { return Error("kiln was built without oneDNN"); }

#endif

}  // namespace kiln
