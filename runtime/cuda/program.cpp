// Compiling, loading and running a function on the GPU (program.h).
#include "runtime/cuda/program.h"

#include <cstring>
#include <deque>
#include <optional>

#include "codegen/nvptx_target.h"
#include "ir/compile_profile.h"
#include "runtime/collectives/all_reduce_step.h"
#include "runtime/collectives/in_flight.h"
#include "runtime/device_tensor.h"
#include "runtime/donation.h"
#include "runtime/cuda/driver.h"
#include "runtime/cuda/dynamic_library.h"

namespace kiln::cuda {

namespace {

// Every generated kernel's block; a block-per-row kernel relies on it (codegen/nvptx_target.h).
constexpr uint32_t kThreadsPerBlock = codegen::NvptxTarget::kThreadsPerBlock;
// CUDA graphs kept per program (one per set of parameter and result addresses).
constexpr size_t kMaxGraphs = 8;

// "%h (f32[64,128])" for messages about a value's buffer.
std::string describe(const Value* v, std::string_view role) {
  std::string name = v->name().empty() ? std::string("a value") : "%" + v->name();
  return std::string(role) + " " + name + " (" + v->type().str() + ")";
}

// Bytes of one slice along axis 0.
size_t rowBytes(const TensorType& t) {
  return t.shape.empty() || t.shape[0] == 0 ? 0 : t.byteSize() / static_cast<size_t>(t.shape[0]);
}

// Two timing events around work queued on one stream.
struct Span {
  Event start, end;
  Expected<float> milliseconds() const { return end.millisecondsSince(start); }
};

// A span whose start is recorded on `stream` now; the caller records its end after the work.
Expected<Span> startTiming(CUstream stream) {
  auto start = Event::create();
  auto end = Event::create();
  if (!start) return start.error();
  if (!end) return end.error();
  KILN_TRY(start->record(stream));
  return Span{std::move(*start), std::move(*end)};
}

bool hasRegionSteps(const codegen::BlockPlan& plan) {
  for (const codegen::Step& step : plan.steps)
    if (step.kind == codegen::Step::Kind::Region) return true;
  return false;
}

}  // namespace

Program::~Program() {
  if (device_) (void)device_->makeCurrent();  // nothing to report to from a destructor
}

Expected<std::unique_ptr<Program>> Program::compile(const Function& function, codegen::CompileOptions options,
                                                    codegen::CompileCache* cache) {
  auto device = options.deviceOrdinal >= 0 ? Device::get(options.deviceOrdinal) : Device::get();
  if (!device) return device.error();
  // LLVM 19 and CUDA 13 together target sm_75 and newer (codegen/gpu_arch.h).
  if ((*device)->computeCapability() < 75)
    return Error("kiln generates PTX for GPUs of compute capability 7.5 (Turing) and newer; " + (*device)->describe() +
                 " is older (use --backend cpu)");
  options.target = codegen::Target::Cuda;
  options.gpuArch = (*device)->gpuArch();
  auto compiled = codegen::compileForCuda(function, options, cache);
  if (!compiled) return compiled.error();
  auto stream = Stream::create();
  if (!stream) return stream.error();
  std::optional<StageTimer> loading(std::in_place, options.profile, "ptx load");
  // One module per distinct kernel (codegen::PtxLayout::PerKernel); where each kernel's entry is.
  std::vector<LoadedModule> modules;
  std::unordered_map<std::string, size_t> moduleOf;
  for (const codegen::PtxModule& ptx : compiled->modules) {
    auto module = LoadedModule::load(ptx.ptx, "@" + function.name() + " (" + ptx.kernels.at(0) + ")");
    if (!module) return module.error();
    for (const std::string& kernel : ptx.kernels) moduleOf[kernel] = modules.size();
    modules.push_back(std::move(*module));
  }
  std::unique_ptr<Program> program(
      new Program(std::move(*compiled), *device, std::move(*stream), std::move(modules)));

  // Launch shapes: enough blocks for every item's lanes, at most one full wave of resident blocks.
  codegen::NvptxTarget target(options.fastMath);
  std::vector<const codegen::KernelGroup*> groups = program->plan().allGroups();
  program->kernels_.reserve(groups.size());
  for (const codegen::KernelGroup* group : groups) {
    KernelThunk k;
    k.group = group;
    const std::string& symbol = codegen::symbolOf(program->compiled_.symbols, group->name);
    auto where = moduleOf.find(symbol);
    if (where == moduleOf.end()) return Error("internal error: no PTX module defines kernel " + symbol);
    auto fn = program->modules_[where->second].function(symbol);
    if (!fn) return fn.error();
    k.function = *fn;
    int perSm = 0;
    KILN_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor, group->name, &perSm, k.function,
            static_cast<int>(kThreadsPerBlock), 0);
    int lanes = codegen::lanesPerItem(*group, target);
    k.shape = launchShape(codegen::numWorkItems(*group, target), lanes, (*device)->multiprocessors(), perSm,
                          kThreadsPerBlock);
    k.library = codegen::selectLibraryCall(*group);
    program->kernels_.push_back(k);
  }
  loading.reset();
  KILN_TRY(program->prepareLibraries());
  {
    StageTimer timer(options.profile, "constants upload");
    KILN_TRY(program->uploadConstants(program->stream_.get()));
  }
  StageTimer timer(options.profile, "buffer plan");
  program->bufferPlan_ = BufferPlan::build(program->function(), program->plan());
  auto arena = allocateDevice(program->bufferPlan_.arenaBytes(), "the intermediate values of @" + function.name());
  if (!arena) return arena.error();
  program->arena_ = std::move(*arena);
  for (const KernelThunk& k : program->kernels_) program->kernelOf_[k.group] = &k;
  program->hasRegions_ = hasRegionSteps(program->plan());
  walkOps(program->function().body(), [&](const Op* op) { program->hasAllReduce_ |= collectives::isAllReduce(*op); });
  // The error word, then a byte for a `while` condition's flag (runWhile reads both at once).
  auto status = allocateDevice(kStatusBytes, "the kernels' error word");
  if (!status) return status.error();
  program->statusWord_ = std::move(*status);
  return program;
}

// The state of one run: every value's device address. Values of regions get the program's own
// buffers (reused by later iterations and runs); `map` parameters borrow slices of their operands.
// Reductions in flight on the NCCL stream, by the event each records when done.
class Program::Run {
 public:
  Run(Program& p, const ExecuteOptions& options) : p_(p), options_(options) {}
  // A run that failed part way still orders the compute stream after the reductions it started:
  // they write buffers the next run reuses.
  ~Run() {
    for (const auto& e : inFlight_.takeAll()) api().cuStreamWaitEvent(p_.stream_.get(), e.handle, 0);
  }

  void bind(const Value* v, CUdeviceptr address) { addr_[v] = address; }

  // A step first waits for the reductions it reads; the plan's end, which hands over results or
  // yields, for all.
  Status runPlan(const codegen::BlockPlan& plan) {
    for (const codegen::Step& step : plan.steps) {
      KILN_TRY(await(inFlight_.takeNeededBy(plan, step)));
      if (step.kind == codegen::Step::Kind::Kernel) {
        KILN_TRY(launch(plan.groups[static_cast<size_t>(step.group)]));
      } else if (step.region.op->kind() == OpKind::Map) {
        KILN_TRY(runMap(step.region));
      } else {
        KILN_TRY(runWhile(step.region));
      }
    }
    return await(inFlight_.takeAll());
  }

  // After the stream finished: the first error a kernel raised, as the interpreter would word it.
  Status kernelError(int32_t word) const {
    if (word == 0) return {};
    size_t index = static_cast<size_t>(word - 1);
    if (index >= p_.compiled_.errors.size())
      return Error("cuda backend: a kernel raised an unknown error " + std::to_string(word));
    const codegen::KernelError& e = p_.compiled_.errors[index];
    return Error(e.message, e.loc);
  }

 private:
  Expected<CUdeviceptr> address(const Value* v) {
    if (auto it = addr_.find(v); it != addr_.end()) return it->second;
    // Not bound by the caller: an intermediate, in the arena (or, for a value the buffer plan does
    // not place, a buffer of the program's own).
    if (p_.bufferPlan_.has(v)) return addr_[v] = p_.arena_.address() + p_.bufferPlan_.offset(v);
    auto own = p_.ownBuffer(v, "intermediate");
    if (!own) return own.error();
    return addr_[v] = *own;
  }

  Status launch(const codegen::KernelGroup& group) {
    const KernelThunk& k = *p_.kernelOf_.at(&group);
    if (k.shape.blocks == 0) return {};
    std::vector<CUdeviceptr> args;
    for (const Value* v : group.inputs) {
      auto a = address(v);
      if (!a) return a.error();
      args.push_back(*a);
    }
    for (const Value* v : group.results) {
      auto a = address(v);
      if (!a) return a.error();
      args.push_back(*a);
    }
    if (options_.schedule) options_.schedule->push_back("kernel " + group.name);
    std::optional<Timed> timed;
    if (options_.kernelMilliseconds) {
      auto span = startTiming(p_.stream_.get());
      if (!span) return span.error();
      timed.emplace(Timed{group.name, std::move(*span)});
    }
    // An all_reduce's group has one result, reduced in place after the kernel wrote it (taken
    // before the kernel's arguments gain the error word).
    CUdeviceptr lastResult = args.back();
    auto ranLibrary = callLibrary(k, args);
    if (!ranLibrary) return ranLibrary.error();
    if (!*ranLibrary) {
      args.push_back(p_.statusWord_.address());
      std::vector<void*> params;
      for (CUdeviceptr& a : args) params.push_back(&a);
      KILN_CU(cuLaunchKernel, group.name, k.function, k.shape.blocks, 1, 1, k.shape.threadsPerBlock, 1, 1, 0,
              p_.stream_.get(), params.data(), nullptr);
    }
    if (timed) {
      KILN_TRY(timed->span.end.record(p_.stream_.get()));
      timed_.push_back(std::move(*timed));
    }
    return reduceAcrossReplicas(group, lastResult);
  }

  // An all_reduce's kernel wrote this replica's value into its result; NCCL then reduces it in
  // place. Overlapped: on the NCCL stream once the compute stream has reached this point (event
  // `ready`), recording `done` for the readers to wait on, while the compute stream goes on.
  // Synchronous: on the compute stream itself.
  Status reduceAcrossReplicas(const codegen::KernelGroup& group, CUdeviceptr result) {
    const Op* op = collectives::allReduceOf(group);
    if (!op || options_.collectives == CollectiveMode::Skipped) return {};
    auto comm = collectives::communicatorFor(options_.communicator);
    if (!comm) return comm.error().at(op->loc());
    // One replica: its own value, already in the result, is the reduction; NCCL is not needed
    // (nor loaded, which costs a second on hardware and is impossible on the simulator).
    if ((*comm)->size() == 1) return {};
    KILN_TRY(p_.joinReplicas(*op, options_));
    if (options_.schedule) options_.schedule->push_back("start " + group.name);
    bool overlap = options_.collectives == CollectiveMode::Overlapped;
    CUstream stream = overlap ? p_.ncclStream_->get() : p_.stream_.get();
    if (overlap) {
      auto ready = orderingEvent();
      if (!ready) return ready.error();
      KILN_TRY((*ready)->record(p_.stream_.get()));
      KILN_CU(cuStreamWaitEvent, group.name, stream, (*ready)->get(), 0);
    }
    std::optional<TimedReduction> timed;
    if (options_.collectiveTimings) {
      auto span = startTiming(stream);
      if (!span) return span.error();
      timed.emplace(TimedReduction{&group, std::move(*span)});
    }
    const TensorType& t = group.results[0]->type();
    Status s = p_.nccl_->allReduce(result, t.numElements(), t.dtype, collectives::reduceKindOf(*op), stream,
                                   collectives::describeAllReduce(*op));
    if (!s) return s.error().at(op->loc());
    if (timed) {
      KILN_TRY(timed->span.end.record(stream));
      timedReductions_.push_back(std::move(*timed));
    }
    if (!overlap) return {};
    auto done = orderingEvent();
    if (!done) return done.error();
    KILN_TRY((*done)->record(stream));
    inFlight_.add(group, (*done)->get());
    return {};
  }

  // The compute stream waits (on the device; the host goes on queueing) for these reductions.
  Status await(const std::vector<collectives::InFlight<CUevent>::Entry>& entries) {
    for (const auto& e : entries) {
      if (options_.schedule) options_.schedule->push_back("wait " + e.group->name);
      KILN_CU(cuStreamWaitEvent, e.group->name, p_.stream_.get(), e.handle, 0);
    }
    return {};
  }

  // An event of this run for ordering the two streams (destroyed with the run; the driver keeps a
  // recorded event alive until the device has passed it).
  Expected<const Event*> orderingEvent() {
    auto e = Event::create(CU_EVENT_DISABLE_TIMING);
    if (!e) return e.error();
    events_.push_back(std::move(*e));
    return &events_.back();
  }

  Expected<LibraryOutcome> callCudnn(const codegen::ConvCall& conv, const std::vector<CUdeviceptr>& buffers,
                                     std::string_view kernel) {
    CUstream stream = p_.stream_.get();
    switch (conv.direction) {
      case codegen::ConvDirection::Forward: return p_.cudnn_->forward(conv, buffers, stream, kernel);
      case codegen::ConvDirection::BackwardData:
        return p_.cudnn_->backwardData(conv, buffers[conv.dy], buffers[conv.weights], buffers[conv.output], stream, kernel);
      case codegen::ConvDirection::BackwardFilter:
        return p_.cudnn_->backwardFilter(conv, buffers[conv.x], buffers[conv.dy], buffers[conv.output], stream, kernel);
    }
    return LibraryOutcome::NoAlgorithm;
  }

  // True when cuBLASLt or cuDNN queued the group's work; false when the generated kernel must run
  // (no library call selected or loaded, or the library found no algorithm for these shapes).
  Expected<bool> callLibrary(const KernelThunk& k, const std::vector<CUdeviceptr>& buffers) {
    Expected<LibraryOutcome> outcome = LibraryOutcome::NoAlgorithm;
    if (auto* matmul = std::get_if<codegen::MatmulCall>(&k.library); matmul && p_.cublasLt_)
      outcome = p_.cublasLt_->matmul(*matmul, buffers, p_.stream_.get(), k.group->name);
    else if (auto* conv = std::get_if<codegen::ConvCall>(&k.library); conv && p_.cudnn_)
      outcome = callCudnn(*conv, buffers, k.group->name);
    if (!outcome) return outcome.error();
    return *outcome == LibraryOutcome::Ran;
  }

 public:
  // Adds the timed launches to options.kernelMilliseconds and the timed reductions to
  // options.collectiveTimings (after the streams finished).
  Status collectTimes() {
    for (const Timed& t : timed_) {
      auto ms = t.span.milliseconds();
      if (!ms) return ms.error();
      (*options_.kernelMilliseconds)[t.kernel] += *ms;
    }
    for (const TimedReduction& t : timedReductions_) {
      auto ms = t.span.milliseconds();
      if (!ms) return ms.error();
      int64_t bytes = static_cast<int64_t>(t.group->results[0]->type().byteSize());
      options_.collectiveTimings->push_back({t.group->name, bytes, *ms, 0});
    }
    return {};
  }

 private:

  Status copy(CUdeviceptr dst, CUdeviceptr src, size_t bytes, const Op& op) {
    if (bytes == 0 || dst == src) return {};
    KILN_CU(cuMemcpyDtoDAsync, std::string(op.name()), dst, src, bytes, p_.stream_.get());
    return {};
  }

  // Runs the body once per slice along axis 0 and stacks what it yields (as the interpreter).
  Status runMap(const codegen::RegionStep& step) {
    const Op& op = *step.op;
    const Block& body = *op.region(0);
    const Op& yield = *body.terminator();
    std::vector<CUdeviceptr> operands, results;
    for (const Value* v : op.operands()) {
      auto a = address(v);
      if (!a) return a.error();
      operands.push_back(*a);
    }
    for (const Value* v : op.results()) {
      auto a = address(v);
      if (!a) return a.error();
      results.push_back(*a);
    }
    int64_t n = op.operand(0)->type().shape[0];
    for (int64_t i = 0; i < n; ++i) {
      for (size_t k = 0; k < op.numOperands(); ++k)
        bind(body.argument(k), operands[k] + static_cast<size_t>(i) * rowBytes(op.operand(k)->type()));
      KILN_TRY(runPlan(*step.regions[0]));
      for (size_t k = 0; k < results.size(); ++k) {
        size_t row = rowBytes(op.result(k)->type());
        auto yielded = address(yield.operand(k));
        if (!yielded) return yielded.error();
        KILN_TRY(copy(results[k] + static_cast<size_t>(i) * row, *yielded, row, op));
      }
    }
    return {};
  }

  // The loop-carried values live in the op's result buffers; `cond` reads them in place, and so
  // does `body` where it can (whileBodyReadsCarriedInPlace), else it gets copies. What the body
  // yields is copied back after it ran. Each test of the condition waits for the GPU once: the
  // flag is copied next to the kernels' error word on the GPU, and one copy brings both back for
  // the host to decide whether to go on.
  Status runWhile(const codegen::RegionStep& step) {
    const Op& op = *step.op;
    const Block& cond = *op.region(0);
    const Block& body = *op.region(1);
    const bool inPlace = whileBodyReadsCarriedInPlace(op);
    std::vector<CUdeviceptr> carried;
    for (size_t k = 0; k < op.numResults(); ++k) {
      auto c = address(op.result(k));
      auto init = address(op.operand(k));
      if (!c) return c.error();
      if (!init) return init.error();
      carried.push_back(*c);
      KILN_TRY(copy(*c, *init, op.result(k)->type().byteSize(), op));
      bind(cond.argument(k), *c);
      if (inPlace) bind(body.argument(k), *c);
    }
    for (int64_t iteration = 0;; ++iteration) {
      KILN_TRY(runPlan(*step.regions[0]));
      auto flag = address(cond.terminator()->operand(0));
      if (!flag) return flag.error();
      KILN_TRY(copy(p_.statusWord_.address() + sizeof(int32_t), *flag, 1, op));
      uint8_t back[kStatusBytes] = {};
      KILN_TRY(copyToHost(back, p_.statusWord_.address(), kStatusBytes, p_.stream_.get()));
      // A kernel of the condition that failed must stop the loop with its own error.
      int32_t word = 0;
      std::memcpy(&word, back, sizeof word);
      KILN_TRY(kernelError(word));
      const bool go = back[sizeof(int32_t)] != 0;
      if (!go) return {};
      if (iteration >= options_.maxWhileIterations)
        return Error(std::string(op.name()) + ": no result after " + std::to_string(options_.maxWhileIterations) +
                         " iterations (ExecuteOptions::maxWhileIterations)",
                     op.loc());
      for (size_t k = 0; k < carried.size() && !inPlace; ++k) {
        auto arg = address(body.argument(k));
        if (!arg) return arg.error();
        KILN_TRY(copy(*arg, carried[k], op.result(k)->type().byteSize(), op));
      }
      KILN_TRY(runPlan(*step.regions[1]));
      for (size_t k = 0; k < carried.size(); ++k) {
        auto yielded = address(body.terminator()->operand(k));
        if (!yielded) return yielded.error();
        if (*yielded != carried[k]) KILN_TRY(copy(carried[k], *yielded, op.result(k)->type().byteSize(), op));
      }
    }
  }

  struct Timed {
    std::string kernel;
    Span span;
  };
  struct TimedReduction {
    const codegen::KernelGroup* group;
    Span span;
  };

  Program& p_;
  const ExecuteOptions& options_;
  std::unordered_map<const Value*, CUdeviceptr> addr_;
  std::vector<Timed> timed_;
  std::vector<TimedReduction> timedReductions_;
  collectives::InFlight<CUevent> inFlight_;
  std::deque<Event> events_;  // a deque: the events' addresses stay put as it grows
};

Status Program::prepareLibraries() {
  bool matmuls = false, convs = false;
  for (const KernelThunk& k : kernels_) {
    matmuls |= std::holds_alternative<codegen::MatmulCall>(k.library);
    convs |= std::holds_alternative<codegen::ConvCall>(k.library);
  }
  // A library missing from the machine leaves its calls to the generated kernels; one the user
  // named (KILN_CUBLASLT_LIBRARY, KILN_CUDNN_LIBRARY) that does not load is an error, as a
  // KILN_CUDA_DRIVER that does not load is.
  auto fallBack = [this](const Error& why, const char* variable, const char* calls) -> Status {
    if (isOverridden(variable)) return Error(std::string(variable) + " names a library kiln cannot use: " + why.message());
    libraryNote_ += std::string(calls) + " run as generated kernels: " + why.message() + "\n";
    return {};
  };
  // Loading cuBLASLt costs a fraction of a second: only for programs that call it.
  if (matmuls) {
    auto lt = CublasLt::create();
    if (lt) cublasLt_ = std::move(*lt);
    else KILN_TRY(fallBack(lt.error(), "KILN_CUBLASLT_LIBRARY", "matmuls"));
  }
  if (convs) {
    auto dnn = Cudnn::create();
    if (dnn) cudnn_ = std::move(*dnn);
    else KILN_TRY(fallBack(dnn.error(), "KILN_CUDNN_LIBRARY", "convolutions"));
  }
  return {};
}

Status Program::uploadConstants(CUstream stream) {
  std::vector<const Value*> constants = plan().allConstants();
  size_t total = 0;
  std::vector<size_t> offsets;
  for (const Value* v : constants) {
    offsets.push_back(total);
    total += (v->type().byteSize() + BufferPlan::kDefaultAlignment - 1) / BufferPlan::kDefaultAlignment *
             BufferPlan::kDefaultAlignment;
  }
  if (constants.empty()) return {};
  auto buffer = allocateDevice(total, "the constant data (weights) of @" + function().name());
  if (!buffer) return buffer.error();
  constants_ = std::move(*buffer);
  for (size_t i = 0; i < constants.size(); ++i) {
    const Tensor& value = constants[i]->definingOp()->attr("value").getDense();
    CUdeviceptr address = constants_.address() + offsets[i];
    KILN_TRY(copyToDevice(address, value.data(), value.byteSize(), stream));
    constantAddress_[constants[i]] = address;
  }
  return {};
}

Expected<CUdeviceptr> Program::ownBuffer(const Value* v, std::string_view role) {
  if (auto it = own_.find(v); it != own_.end()) return it->second.address();
  // Never 0 bytes: a kernel argument must be a real address even for an empty tensor.
  auto buffer = allocateDevice(std::max<size_t>(v->type().byteSize(), 1), describe(v, role));
  if (!buffer) return buffer.error();
  CUdeviceptr address = buffer->address();
  own_[v] = std::move(*buffer);
  return address;
}

Status Program::execute(const std::vector<CUdeviceptr>& params, const std::vector<CUdeviceptr>& results,
                        const ExecuteOptions& options) {
  const Function& f = function();
  CUstream stream = stream_.get();
  Run run(*this, options);
  std::vector<Value*> ps = f.params();
  for (size_t i = 0; i < ps.size(); ++i) run.bind(ps[i], params[i]);
  for (const auto& [v, address] : constantAddress_) run.bind(v, address);
  // Results are computed straight into the caller's buffers; a parameter or a constant returned
  // as it is is copied there at the end.
  const Op& ret = *f.body().terminator();
  std::vector<std::pair<size_t, CUdeviceptr>> passedThrough;  // result index, address to copy
  for (size_t k = 0; k < ret.numOperands(); ++k) {
    const Value* v = ret.operand(k);
    if (v->isBlockArgument()) passedThrough.push_back({k, params[v->index()]});
    else if (auto c = constantAddress_.find(v); c != constantAddress_.end()) passedThrough.push_back({k, c->second});
    else run.bind(v, results[k]);
  }
  auto enqueue = [&]() -> Status {
    KILN_CU(cuMemsetD8Async, "the kernels' error word", statusWord_.address(), 0, sizeof(int32_t), stream);
    KILN_TRY(run.runPlan(plan()));
    for (auto [k, from] : passedThrough) {
      size_t bytes = ret.operand(k)->type().byteSize();
      if (bytes && results[k] != from)
        KILN_CU(cuMemcpyDtoDAsync, "result " + std::to_string(k), results[k], from, bytes, stream);
    }
    return {};
  };

  // The first run with a set of buffers runs eagerly (it allocates the intermediates, which a
  // capture may not); the second captures a graph, later ones replay it.
  std::vector<CUdeviceptr> key = params;
  key.insert(key.end(), results.begin(), results.end());
  // Timing each kernel needs events between the launches: no graph then.
  bool useGraph = capturable() && options.cudaGraph && !options.kernelMilliseconds;
  auto graph = graphs_.find(key);
  if (useGraph && graph == graphs_.end() && warmedUp_.count(key)) {
    // Bounded: a caller cycling through many buffer sets must not grow the program without end.
    if (graphs_.size() >= kMaxGraphs) graphs_.clear(), warmedUp_.clear();
    auto captured = GraphExec::capture(stream, enqueue);
    if (!captured) return captured.error();
    graph = graphs_.emplace(key, std::move(*captured)).first;
  }
  std::optional<Span> step;
  if (options.stepMilliseconds) {
    auto span = startTiming(stream);
    if (!span) return span.error();
    step.emplace(std::move(*span));
  }
  if (useGraph && graph != graphs_.end()) {
    KILN_TRY(graph->second.launch(stream));
  } else {
    KILN_TRY(enqueue());
    if (warmedUp_.size() >= 4 * kMaxGraphs) warmedUp_.clear();
    warmedUp_.insert(std::move(key));
  }
  if (step) KILN_TRY(step->end.record(stream));
  // With collectives queued, wait through NCCL before anything that blocks on the stream (reading
  // the timing events too): a dead peer then ends in an error, not a hang. The compute stream has
  // waited for the NCCL stream's reductions, so it is the one to poll.
  if (nccl_) KILN_TRY(nccl_->wait(stream, "the step's all_reduce"));
  if (step) {
    auto ms = step->milliseconds();
    if (!ms) return ms.error();
    *options.stepMilliseconds = *ms;
  }
  if (options.kernelMilliseconds || options.collectiveTimings) KILN_TRY(run.collectTimes());
  int32_t word = 0;
  KILN_TRY(copyToHost(&word, statusWord_.address(), sizeof word, stream));
  return run.kernelError(word);
}

Status Program::joinReplicas(const Op& op, const ExecuteOptions& options) {
  if (nccl_) return {};
  auto comm = collectives::communicatorFor(options.communicator);
  if (!comm) return comm.error().at(op.loc());
  auto nccl = NcclCommunicator::create(**comm, (*comm)->timeout());
  if (!nccl) return nccl.error().at(op.loc());
  auto stream = Stream::create();
  if (!stream) return stream.error().at(op.loc());
  nccl_ = std::move(*nccl);
  ncclStream_.emplace(std::move(*stream));
  return {};
}

Expected<std::vector<Tensor>> Program::run(std::span<const TensorView> inputs, const ExecuteOptions& options) {
  std::vector<TensorType> types;
  for (const TensorView& t : inputs) types.push_back(t.type);
  KILN_TRY(checkInputTypes(function(), types));
  std::lock_guard<std::mutex> lock(mutex_);
  KILN_TRY(device_->makeCurrent());
  const Function& f = function();
  std::vector<Value*> ps = f.params();
  std::vector<CUdeviceptr> params, results;
  for (size_t i = 0; i < ps.size(); ++i) {
    auto a = ownBuffer(ps[i], "input");
    if (!a) return a.error();
    KILN_TRY(copyToDevice(*a, inputs[i].data, inputs[i].byteSize(), stream_.get()));
    params.push_back(*a);
  }
  const Op& ret = *f.body().terminator();
  for (const Value* v : ret.operands()) {
    auto a = ownBuffer(v, "result");
    if (!a) return a.error();
    results.push_back(*a);
  }
  KILN_TRY(execute(params, results, options));
  std::vector<Tensor> out;
  for (size_t k = 0; k < results.size(); ++k) {
    Tensor t(ret.operand(k)->type());
    KILN_TRY(copyToHost(t.data(), results[k], t.byteSize(), stream_.get()));
    out.push_back(std::move(t));
  }
  return out;
}

Expected<std::vector<DeviceTensor>> Program::runOnDevice(const std::vector<DeviceTensor>& inputs,
                                                 const ExecuteOptions& options) {
  std::vector<TensorType> types;
  for (const DeviceTensor& t : inputs) types.push_back(t.type());
  KILN_TRY(checkInputTypes(function(), types));
  std::lock_guard<std::mutex> lock(mutex_);
  KILN_TRY(device_->makeCurrent());
  std::vector<CUdeviceptr> params;
  for (const DeviceTensor& t : inputs) params.push_back(static_cast<CUdeviceptr>(t.address()));
  // Results go into donated inputs where that is safe, else into one new buffer per distinct
  // value (a value returned twice is one tensor).
  const Op& ret = *function().body().terminator();
  std::vector<int> alias(ret.numOperands(), -1);
  if (!options.donated.empty() && options.donated.size() != inputs.size())
    return Error("ExecuteOptions::donated has " + std::to_string(options.donated.size()) + " entries for " +
                 std::to_string(inputs.size()) + " inputs");
  if (!options.donated.empty()) {
    auto known = donations_.find(options.donated);
    if (known == donations_.end())
      known = donations_.emplace(options.donated, donatedResultBuffers(function(), plan(), options.donated)).first;
    alias = known->second;
  }
  std::unordered_map<const Value*, DeviceTensor> fresh;
  std::vector<DeviceTensor> out;
  std::vector<CUdeviceptr> results;
  for (size_t k = 0; k < ret.numOperands(); ++k) {
    const Value* v = ret.operand(k);
    if (alias[k] >= 0) {
      const DeviceTensor& donor = inputs[static_cast<size_t>(alias[k])];
      out.push_back(donor);
      results.push_back(static_cast<CUdeviceptr>(donor.address()));
      continue;
    }
    auto it = fresh.find(v);
    if (it == fresh.end()) {
      auto tensor = uninitializedOnGpu(device_->ordinal(), v->type());  // this program's GPU
      if (!tensor) return tensor.error();
      it = fresh.emplace(v, std::move(*tensor)).first;
    }
    out.push_back(it->second);
    results.push_back(static_cast<CUdeviceptr>(it->second.address()));
  }
  KILN_TRY(execute(params, results, options));
  return out;
}

}  // namespace kiln::cuda
