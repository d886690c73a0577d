// Executable::compile: compile a function for this CPU to an object (codegen/cpu_compiler.h, via
// the compile cache) and link it into an ORC JIT.
#include "runtime/executable.h"

#include "codegen/cpu_compiler.h"
#include "codegen/cpu_jit.h"
#include "codegen/parallel_codegen.h"
#include "ir/compile_profile.h"
#include "ir/constant_data.h"
#if KILN_HAVE_CUDA
#include "runtime/cuda/program.h"
#include "runtime/onednn.h"
#endif

namespace kiln {

Status checkInputTypes(const Function& f, const std::vector<TensorType>& given) {
  std::vector<Value*> params = f.params();
  if (given.size() != params.size())
    return Error("@" + f.name() + " takes " + std::to_string(params.size()) + " input" +
                 (params.size() == 1 ? "" : "s") + ", got " + std::to_string(given.size()));
  for (size_t i = 0; i < params.size(); ++i) {
    if (given[i] != params[i]->type()) {
      std::string name = params[i]->name().empty() ? "" : " (%" + params[i]->name() + ")";
      return Error("input " + std::to_string(i) + name + ": expected " + params[i]->type().str() + ", got " +
                   given[i].str());
    }
  }
  return {};
}

Executable::Executable(std::unique_ptr<Module> module, const Function* function,
                       std::unique_ptr<codegen::BlockPlan> plan)
    : module_(std::move(module)),
      function_(function),
      plan_(std::move(plan)),
      bufferPlan_(BufferPlan::build(*function_, *plan_)),
      constants_(plan_->allConstants()) {}

#if KILN_HAVE_CUDA
Executable::Executable(std::unique_ptr<cuda::Program> program)
    : function_(&program->function()), cuda_(std::move(program)) {}
#endif

Executable::~Executable() = default;

const codegen::BlockPlan& Executable::plan() const {
#if KILN_HAVE_CUDA
  if (cuda_) return cuda_->plan();
#endif
  return *plan_;
}

std::vector<std::string> Executable::kernelNames() const {
  std::vector<std::string> names;
  for (const codegen::KernelGroup* g : plan().allGroups()) names.push_back(g->name);
  return names;
}

Expected<std::vector<DeviceTensor>> Executable::runOnDevice(const std::vector<DeviceTensor>& inputs,
                                                    const ExecuteOptions& options) const {
#if KILN_HAVE_CUDA
  if (cuda_) return cuda_->runOnDevice(inputs, options);
#else
  (void)inputs, (void)options;
#endif
  return Error("device tensors need an executable compiled for the GPU (CompileOptions::target = Target::Cuda)");
}

namespace {

using KernelTable = std::unordered_map<const codegen::KernelGroup*, LoadedCpuKernel>;

// Roughly how many scalar operations one output element of the group costs, so that cheap
// elementwise kernels run in big chunks (or inline when small) and a matmul with few outputs is
// still spread across threads.
int64_t elementCost(const codegen::KernelGroup& group) {
  int64_t cost = 0;
  for (const Op* op : group.ops) {
    int64_t out = std::max<int64_t>(1, op->result(0)->type().numElements()), in = 0;
    for (const Value* v : op->operands()) in += v->type().numElements();
    int64_t c = std::max<int64_t>(1, in / out);
    if (op->kind() == OpKind::Matmul) c = std::max<int64_t>(c, op->operand(0)->type().shape.back());
    if (op->kind() == OpKind::Conv2d) {
      const Shape& w = op->operand(1)->type().shape;
      c = std::max<int64_t>(c, w[1] * w[2] * w[3]);
    }
    cost += c;
  }
  // A row kernel's work item is a whole row, read once per reduction and once more for the outputs.
  if (group.kind == codegen::KernelKind::Row) cost *= group.rowLength() * static_cast<int64_t>(1 + group.rowOps.size());
  return std::max<int64_t>(1, cost);
}

// How runs split `group`'s kernel over the thread pool: its work items, in chunks of enough of
// them (2^15 scalar operations at least) that cheap kernels run in big chunks or inline.
LoadedCpuKernel splitOf(const codegen::KernelGroup& group, codegen::CpuKernelFn fn) {
  codegen::CpuTarget target;
  int64_t perItem = elementCost(group) * codegen::outputsPerWorkItem(group, target);
  return {fn, codegen::numWorkItems(group, target), std::max<int64_t>(1, (int64_t{1} << 15) / perItem)};
}

// A fresh JIT with `object`'s objects linked and every kernel of `plan` looked up. A fresh JIT per
// attempt: one that failed to link an object may hold its symbols in an error state.
Status loadObject(const Function& function, const codegen::CompileOptions& options, const codegen::CpuObject& object,
                  std::unique_ptr<codegen::CpuJit>& jit, KernelTable& kernels) {
  StageTimer timer(options.profile, "jit link");
  auto created = codegen::CpuJit::create(options);
  if (!created) return created.error();
  jit = std::move(*created);
  kernels.clear();
  for (size_t i = 0; i < object.objects.size(); ++i)
    KILN_TRY(jit->addObject(object.objects[i], "kiln." + function.name() + "." + std::to_string(i) + ".o"));
  for (const codegen::KernelGroup* group : object.plan->allGroups()) {
    auto fn = jit->lookup(codegen::symbolOf(object.symbols, group->name));
    if (!fn) return fn.error();
    kernels[group] = splitOf(*group, *fn);
  }
  return {};
}

}  // namespace

Expected<std::unique_ptr<Executable>> Executable::compile(const Function& function,
                                                          const codegen::CompileOptions& options,
                                                          codegen::CompileCache* cache) {
  if (options.target == codegen::Target::Cuda) {
#if KILN_HAVE_CUDA
    auto program = cuda::Program::compile(function, options, cache);
    if (!program) return program.error();
    return std::unique_ptr<Executable>(new Executable(std::move(*program)));
#else
    return Error("this kiln was built without the CUDA toolkit's headers, so it cannot run on the GPU; rebuild with "
                 "the toolkit installed, or use Target::Cpu");
#endif
  }
  // Always through an object file, cached or fresh: one way into the JIT.
  auto object = codegen::compileCpuObject(function, options, cache);
  if (!object) return object.error();
  std::unique_ptr<codegen::CpuJit> jit;
  KernelTable kernels;
  Status loaded = loadObject(function, options, *object, jit, kernels);
  if (!loaded && object->objectsFromCache > 0) {
    // A damaged cache entry is not the user's problem: compile afresh and overwrite it.
    object = codegen::compileCpuObject(function, options, cache, /*refresh=*/true);
    if (!object) return object.error();
    loaded = loadObject(function, options, *object, jit, kernels);
  }
  if (!loaded) return loaded.error();
  // The plan points into the optimised copy: the Executable keeps both.
  StageTimer timer(options.profile, "buffer plan");
  std::unique_ptr<Executable> exe(
      new Executable(std::move(object->optimized.module), object->optimized.function, std::move(object->plan)));
  exe->errors_ = std::move(object->errors);
  exe->jit_ = std::move(jit);
  exe->kernels_ = std::move(kernels);
  exe->makeLibraryCalls();
  return exe;
}

namespace {
// KILN_CPU_LIBRARIES=off runs every kernel as generated code (to compare the two).
bool cpuLibrariesEnabled() {
  const char* env = std::getenv("KILN_CPU_LIBRARIES");
  return !env || std::string_view(env) != "off";
}
}  // namespace

void Executable::makeLibraryCalls() {
  if (!cpuLibrariesEnabled()) return;
  // The matmuls and convolutions oneDNN computes (codegen::selectLibraryCall, which `kiln explain`
  // prints). Should oneDNN refuse a primitive it was expected to take, the generated kernel runs it.
  for (const codegen::KernelGroup* group : plan_->allGroups()) {
    if (!codegen::hasLibraryOp(*group)) continue;
    codegen::LibraryCall call = codegen::selectLibraryCall(*group, codegen::Target::Cpu);
    if (std::holds_alternative<codegen::GeneratedKernel>(call)) continue;
    // Constant data the kernel reads (a model's weights), which oneDNN may pack once.
    std::vector<const void*> constants;
    for (const Value* v : group->inputs) constants.push_back(constantDataBytes(v));
    if (auto primitive = OnednnCall::create(call, std::move(constants)); primitive.ok())
      libraryCalls_[group] = std::move(*primitive);
  }
}

}  // namespace kiln
