// Executable::run: one arena per run laid out by the Executable's BufferPlan, kernels split over
// the thread pool, the host loops that drive `map` and `while` over the plans of their regions, and
// all_reduce results reduced across replicas on the communicator's reduction thread meanwhile.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "ir/constant_data.h"
#include "ir/interp/interpreter.h"
#include "runtime/collectives/all_reduce_step.h"
#include "runtime/collectives/in_flight.h"
#include "runtime/collectives/reduction_thread.h"
#include "runtime/executable.h"
#include "runtime/onednn.h"
#if KILN_HAVE_CUDA
#include "runtime/cuda/program.h"
#endif
#include "runtime/thread_pool.h"

namespace kiln {

namespace {

// Kernels assume 16-byte aligned buffers (vector loads and stores, codegen/element_emitter.cpp);
// results are written straight into the caller's Tensors, whose bytes come from allocateHostBytes
// (64-byte aligned at least).

// A kernel's error word says which check failed, not with what value. For the message the
// interpreter would give ("gather: index 7 is out of range [-5, 5) for axis 0"), the group's ops
// are rebuilt as a small function and interpreted on the same inputs: slow, but only on the way
// out of a failed run. Falls back to the kernel's own message.
Error preciseError(const codegen::KernelGroup& group, const std::vector<void*>& args, const codegen::KernelError& fallback) {
  Function f("error");
  std::unordered_map<const Value*, Value*> map;
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < group.inputs.size(); ++i) {
    const Value* v = group.inputs[i];
    map[v] = f.body().addArgument(v->type(), v->name());
    Tensor t(v->type());
    if (t.byteSize()) std::memcpy(t.data(), args[i], t.byteSize());
    inputs.push_back(std::move(t));
  }
  for (const Op* op : group.ops) {
    std::vector<Value*> operands;
    for (const Value* v : op->operands()) operands.push_back(map.at(v));
    std::vector<TensorType> types;
    for (const Value* r : op->results()) types.push_back(r->type());
    Op* copy = f.body().append(Op::create(op->kind(), operands, types, op->attrs(), op->loc()));
    for (size_t i = 0; i < op->numResults(); ++i) map[op->result(i)] = copy->result(i);
  }
  std::vector<Value*> outputs;
  for (const Value* v : group.outputs) outputs.push_back(map.at(v));
  f.body().append(Op::create(OpKind::Return, outputs));
  auto r = interpret(f, inputs);
  if (!r) return r.error();
  return Error(fallback.message, fallback.loc);
}

double millisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// Bytes of one slice along axis 0.
size_t rowBytes(const TensorType& t) {
  return t.shape.empty() || t.shape[0] == 0 ? 0 : t.byteSize() / static_cast<size_t>(t.shape[0]);
}

}  // namespace

// The state of one run: its arena (every intermediate value at its BufferPlan offset, region
// values reused by every iteration), the result tensors kernels write into directly, and the
// values that borrow memory (parameters, `map` slices of their operands, `while` cond arguments).
class ExecutionContext {
 public:
  ExecutionContext(const Executable& exe, const ExecuteOptions& options) : exe_(exe), options_(options) {
    const BufferPlan& plan = exe.bufferPlan_;
    // Never null, even when nothing is planned: empty values still get an address.
    // (From allocateHostBytes, which keeps the memory of the last run's arena for this one.)
    KILN_INTERNAL_CHECK(plan.alignment() <= 256, "cpu backend: allocateHostBytes aligns arenas to 256 bytes");
    arena_.resize(std::max(plan.arenaBytes(), plan.alignment()));
    // Every result is written whole by its kernel (or copied), so its memory is not zeroed first.
    for (const Value* v : plan.resultValues()) results_.emplace(v, Tensor::uninitialized(v->type()));
    // Constant data is read where the executable's IR holds it (aligned, as Tensor bytes come
    // from allocateHostBytes): no copy per run.
    for (const Value* v : exe.constants_)
      borrow(v, static_cast<const uint8_t*>(constantDataBytes(v)));
  }
  // A run that failed part way still waits for the reductions it started: they write its arena.
  ~ExecutionContext() { (void)await(inFlight_.takeAll()); }

  Expected<std::vector<Tensor>> run(std::span<const TensorView> inputs) {
    const Function& f = *exe_.function_;
    std::vector<Value*> params = f.params();
    std::vector<TensorType> types;
    for (const TensorView& t : inputs) types.push_back(t.type);
    KILN_TRY(checkInputTypes(f, types));
    for (size_t i = 0; i < params.size(); ++i) {
      // Kernels never write their inputs, so parameters use the caller's memory directly.
      borrow(params[i], static_cast<const uint8_t*>(inputs[i].data));
    }
    auto start = std::chrono::steady_clock::now();
    KILN_TRY(runPlan(*exe_.plan_));
    if (options_.stepMilliseconds) *options_.stepMilliseconds = millisecondsSince(start);
    std::vector<Tensor> results;
    std::unordered_set<const Value*> handedOver;
    for (const Value* v : f.body().terminator()->operands()) {
      // A result's first occurrence hands over the tensor the kernels wrote; a returned
      // parameter or constant, or a value returned twice, is copied.
      if (auto it = results_.find(v); it != results_.end() && !handedOver.count(v)) {
        handedOver.insert(v);
        results.push_back(std::move(it->second));
        continue;
      }
      Tensor t(v->type());
      if (t.byteSize()) std::memcpy(t.data(), buffer(v), t.byteSize());
      results.push_back(std::move(t));
    }
    return results;
  }

 private:
  uint8_t* buffer(const Value* v) {
    auto it = buffers_.find(v);
    KILN_INTERNAL_CHECK(it != buffers_.end(), "cpu backend: a value is read before it is computed");
    return it->second;
  }
  // The memory a step writes `v` into: its place in the arena, or the result tensor (never null,
  // even when empty).
  uint8_t* allocate(const Value* v) {
    const BufferPlan& plan = exe_.bufferPlan_;
    if (plan.has(v)) return buffers_[v] = arena_.data() + plan.offset(v);
    auto it = results_.find(v);
    KILN_INTERNAL_CHECK(it != results_.end(), "cpu backend: the buffer plan has no place for a value");
    borrow(v, static_cast<const uint8_t*>(it->second.data()));
    return buffers_[v];
  }
  void borrow(const Value* v, const uint8_t* data) {
    alignas(64) static uint8_t empty[64];
    buffers_[v] = const_cast<uint8_t*>(data ? data : empty);
  }

  // A step first waits for the reductions it reads; the plan's end, which hands over results or
  // yields, for all.
  Status runPlan(const codegen::BlockPlan& plan) {
    for (const codegen::Step& step : plan.steps) {
      KILN_TRY(await(inFlight_.takeNeededBy(plan, step)));
      if (step.kind == codegen::Step::Kind::Kernel) {
        KILN_TRY(runKernel(plan.groups[static_cast<size_t>(step.group)]));
      } else if (step.region.op->kind() == OpKind::Map) {
        KILN_TRY(runMap(step.region));
      } else {
        KILN_TRY(runWhile(step.region));
      }
    }
    return await(inFlight_.takeAll());
  }

  ThreadPool& threads() const { return options_.threads ? *options_.threads : ThreadPool::shared(); }

  Status runKernel(const codegen::KernelGroup& group) {
    std::vector<void*> args;
    for (const Value* v : group.inputs) args.push_back(buffer(v));
    for (const Value* v : group.results) args.push_back(allocate(v));
    if (auto library = exe_.libraryCalls_.find(&group); library != exe_.libraryCalls_.end()) {
      if (options_.schedule) options_.schedule->push_back("kernel " + group.name);
      auto start = std::chrono::steady_clock::now();
      threads().bindLibrariesOfCallingThread();
      Status s = library->second->run(args.data());
      if (options_.kernelMilliseconds) (*options_.kernelMilliseconds)[group.name] += millisecondsSince(start);
      if (!s) return s.error().at(group.ops.front()->loc());
      return {};
    }
    const LoadedCpuKernel& kernel = exe_.kernels_.at(&group);
    // Each chunk has its own error word; the error of the first failing chunk is reported, so
    // the message does not depend on thread timing.
    std::mutex m;
    int64_t firstBegin = -1;
    int32_t firstStatus = 0;
    if (options_.schedule) options_.schedule->push_back("kernel " + group.name);
    auto start = std::chrono::steady_clock::now();
    threads().parallelFor(kernel.items, kernel.grain, [&](int64_t begin, int64_t end) {
      int32_t status = 0;
      kernel.fn(args.data(), &status, begin, end);
      if (status == 0) return;
      std::lock_guard<std::mutex> lock(m);
      if (firstBegin < 0 || begin < firstBegin) firstBegin = begin, firstStatus = status;
    });
    if (options_.kernelMilliseconds) (*options_.kernelMilliseconds)[group.name] += millisecondsSince(start);
    if (firstStatus == 0) return reduceAcrossReplicas(group, args.back());
    size_t index = static_cast<size_t>(firstStatus - 1);
    KILN_INTERNAL_CHECK(index < exe_.errors_.size(), "cpu backend: a kernel raised an unknown error");
    return preciseError(group, args, exe_.errors_[index]);
  }

  // An all_reduce's kernel wrote this replica's value into its result; the replicas then reduce
  // it in place: on the communicator's reduction thread while the next kernels run (waited for by
  // runPlan), or here and now (CollectiveMode::Synchronous, or an MPI without thread support).
  Status reduceAcrossReplicas(const codegen::KernelGroup& group, void* result) {
    const Op* op = collectives::allReduceOf(group);
    if (!op || options_.collectives == CollectiveMode::Skipped) return {};
    auto found = collectives::communicatorFor(options_.communicator);
    if (!found) return found.error().at(op->loc());
    collectives::Communicator* comm = *found;
    if (comm->size() == 1) return {};
    if (options_.schedule) options_.schedule->push_back("start " + group.name);
    if (options_.collectives == CollectiveMode::Overlapped && comm->allowsOtherThreads()) {
      reductions_ = &comm->reductionThread();
      inFlight_.add(group, reductions_->start([op, result, comm] { return collectives::allReduceInPlace(*op, result, *comm); }));
      return {};
    }
    auto start = std::chrono::steady_clock::now();
    Status s = collectives::allReduceInPlace(*op, result, *comm);
    double ms = millisecondsSince(start);
    if (options_.collectiveTimings) options_.collectiveTimings->push_back({group.name, resultBytes(group), ms, ms});
    return s;
  }

  // Waits for every reduction in `entries`, even after one failed (each writes this run's memory);
  // the first failure is the run's error.
  Status await(const std::vector<collectives::InFlight<collectives::ReductionThread::Ticket>::Entry>& entries) {
    Status first;
    for (const auto& e : entries) {
      if (options_.schedule) options_.schedule->push_back("wait " + e.group->name);
      auto start = std::chrono::steady_clock::now();
      collectives::ReductionThread::Outcome outcome = reductions_->wait(e.handle);
      if (options_.collectiveTimings)
        options_.collectiveTimings->push_back(
            {e.group->name, resultBytes(*e.group), outcome.milliseconds, millisecondsSince(start)});
      if (!outcome.status && first.ok()) first = outcome.status;
    }
    return first;
  }

  static int64_t resultBytes(const codegen::KernelGroup& group) {
    return static_cast<int64_t>(group.results[0]->type().byteSize());
  }

  // Runs the body once per slice along axis 0 and stacks what it yields (as the interpreter).
  Status runMap(const codegen::RegionStep& step) {
    const Op& op = *step.op;
    const Block& body = *op.region(0);
    const Op& yield = *body.terminator();
    std::vector<uint8_t*> results;
    for (Value* r : op.results()) results.push_back(allocate(r));
    int64_t n = op.operand(0)->type().shape[0];
    for (int64_t i = 0; i < n; ++i) {
      for (size_t k = 0; k < op.numOperands(); ++k) {
        size_t row = rowBytes(op.operand(k)->type());
        borrow(body.argument(k), buffer(op.operand(k)) + static_cast<size_t>(i) * row);
      }
      KILN_TRY(runPlan(*step.regions[0]));
      for (size_t k = 0; k < results.size(); ++k) {
        size_t row = rowBytes(op.result(k)->type());
        if (row) std::memcpy(results[k] + static_cast<size_t>(i) * row, buffer(yield.operand(k)), row);
      }
    }
    return {};
  }

  // The loop-carried values live in the op's result buffers; `cond` reads them in place, and so
  // does `body` where it can (whileBodyReadsCarriedInPlace), else it gets copies. What the body
  // yields is copied back after it ran.
  Status runWhile(const codegen::RegionStep& step) {
    const Op& op = *step.op;
    const Block& cond = *op.region(0);
    const Block& body = *op.region(1);
    const bool inPlace = whileBodyReadsCarriedInPlace(op);
    std::vector<uint8_t*> carried;
    std::vector<size_t> bytes;
    for (size_t k = 0; k < op.numResults(); ++k) {
      carried.push_back(allocate(op.result(k)));
      bytes.push_back(op.result(k)->type().byteSize());
      if (bytes[k]) std::memcpy(carried[k], buffer(op.operand(k)), bytes[k]);
      borrow(cond.argument(k), carried[k]);
      if (inPlace) borrow(body.argument(k), carried[k]);
    }
    for (int64_t iteration = 0;; ++iteration) {
      KILN_TRY(runPlan(*step.regions[0]));
      if (*buffer(cond.terminator()->operand(0)) == 0) return {};
      if (iteration >= options_.maxWhileIterations)
        return Error(std::string(op.name()) + ": no result after " + std::to_string(options_.maxWhileIterations) +
                         " iterations (InterpretOptions::maxWhileIterations)",
                     op.loc());
      for (size_t k = 0; k < carried.size() && !inPlace; ++k)
        if (bytes[k]) std::memcpy(allocate(body.argument(k)), carried[k], bytes[k]);
      KILN_TRY(runPlan(*step.regions[1]));
      for (size_t k = 0; k < carried.size(); ++k) {
        const uint8_t* yielded = buffer(body.terminator()->operand(k));
        if (bytes[k] && yielded != carried[k]) std::memcpy(carried[k], yielded, bytes[k]);
      }
    }
  }

  const Executable& exe_;
  const ExecuteOptions& options_;
  std::vector<uint8_t, UninitializedAllocator<uint8_t>> arena_;
  std::unordered_map<const Value*, Tensor> results_;  // the function's results, by value
  std::unordered_map<const Value*, uint8_t*> buffers_;
  collectives::InFlight<collectives::ReductionThread::Ticket> inFlight_;
  collectives::ReductionThread* reductions_ = nullptr;  // the thread the in-flight reductions run on
};

Expected<std::vector<Tensor>> Executable::run(const std::vector<Tensor>& inputs, const ExecuteOptions& options) const {
  return run(std::span<const TensorView>(viewsOf(inputs)), options);
}

Expected<std::vector<Tensor>> Executable::run(std::span<const TensorView> inputs, const ExecuteOptions& options) const {
#if KILN_HAVE_CUDA
  if (cuda_) return cuda_->run(inputs, options);
#endif
  return ExecutionContext(*this, options).run(inputs);
}

}  // namespace kiln
