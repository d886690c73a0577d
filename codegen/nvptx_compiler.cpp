// NVPTX compilation: TargetMachine setup, libdevice linking, numerics, O3, PTX emission.
#include "codegen/nvptx_compiler.h"

#include "codegen/llvm_pipeline.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Operator.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SHA256.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Transforms/IPO/Internalize.h>

#include <map>
#include <mutex>

#include "codegen/cuda_toolkit.h"

namespace kiln::codegen {

namespace {

constexpr const char* kTriple = "nvptx64-nvidia-cuda";

void initializeNvptx() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

bool isKernel(const llvm::GlobalValue& gv) {
  auto* f = llvm::dyn_cast<llvm::Function>(&gv);
  return f && f->getCallingConv() == llvm::CallingConv::PTX_Kernel;
}

bool callsLibdevice(const llvm::Module& module) {
  for (const llvm::Function& f : module)
    if (f.isDeclaration() && f.getName().starts_with("__nv_")) return true;
  return false;
}

// libdevice's bytes, read once per process: each compilation parses them lazily into its own
// LLVMContext, and only the functions it calls are materialised.
Expected<llvm::MemoryBufferRef> libdeviceBytes(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<llvm::MemoryBuffer>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(path);
  if (it == cache.end()) {
    auto buffer = llvm::MemoryBuffer::getFile(path);
    if (!buffer) return Error("cannot read libdevice " + path + ": " + buffer.getError().message());
    it = cache.emplace(path, std::move(*buffer)).first;
  }
  return it->second->getMemBufferRef();
}

}  // namespace

namespace {
Expected<std::string> fingerprintLibdevice() {
  auto path = findLibdevice();
  if (!path) return path.error();
  auto bytes = libdeviceBytes(*path);
  if (!bytes) return bytes.error();
  // Hashed once per process and file: ~500 KB, not worth hashing per compilation.
  static std::mutex mutex;
  static std::map<std::string, std::string> digests;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = digests.find(*path);
  if (it == digests.end()) {
    std::string hex = llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(bytes->getBuffer())), true);
    it = digests.emplace(*path, "libdevice " + *path + " " + hex).first;
  }
  return it->second;
}
}  // namespace

Expected<std::string> libdeviceFingerprint(const llvm::Module& module) {
  return callsLibdevice(module) ? fingerprintLibdevice() : Expected<std::string>(std::string());
}

Expected<std::string> libdeviceFingerprint(const std::vector<std::string>& declared) {
  for (const std::string& name : declared)
    if (llvm::StringRef(name).starts_with("__nv_")) return fingerprintLibdevice();
  return std::string();
}

namespace {

// Links in the __nv_* functions the module declares (before optimising, so NVVMReflect folds
// libdevice's __nvvm_reflect("__CUDA_FTZ") queries and the inliner sees the bodies).
Status linkLibdevice(llvm::Module& module) {
  auto path = findLibdevice();
  if (!path) return path.error();
  auto bytes = libdeviceBytes(*path);
  if (!bytes) return bytes.error();
  auto lib = llvm::getLazyBitcodeModule(*bytes, module.getContext());
  if (!lib) return Error("cannot parse libdevice " + *path + ": " + llvm::toString(lib.takeError()));
  // libdevice says nvptx64-nvidia-gpulibs and an older layout; adopt ours so the linker is quiet.
  (*lib)->setTargetTriple(module.getTargetTriple());
  (*lib)->setDataLayout(module.getDataLayout());
  if (llvm::Linker::linkModules(module, std::move(*lib), llvm::Linker::LinkOnlyNeeded))
    return Error("internal error: linking libdevice " + *path + " failed");
  return {};
}

// Fast math on kiln's own float instructions (libdevice's are written for its own numerics and
// keep them): reassociation, reciprocals, contraction, approximate functions, no signed zeros.
// NaNs and infinities stay honoured, as with nvcc --use_fast_math.
void addFastMathFlags(llvm::Module& module) {
  llvm::FastMathFlags fast;
  fast.setAllowReassoc();
  fast.setAllowReciprocal();
  fast.setAllowContract();
  fast.setApproxFunc();
  fast.setNoSignedZeros();
  for (llvm::Function& f : module)
    for (llvm::BasicBlock& block : f)
      for (llvm::Instruction& inst : block)
        if (llvm::isa<llvm::FPMathOperator>(inst)) inst.setFastMathFlags(inst.getFastMathFlags() | fast);
}

// Numerics travel in the module and its functions: NVVMReflect reads nvvm-reflect-ftz, and the
// NVPTX backend picks div/sqrt precision and .ftz per function from these attributes.
void setNumerics(llvm::Module& module, bool fastMath) {
  module.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", fastMath ? 1 : 0);
  for (llvm::Function& f : module) {
    if (f.isDeclaration()) continue;
    // Set on every function, libdevice's too: inlining keeps an attribute only if both sides have it.
    f.addFnAttr("unsafe-fp-math", fastMath ? "true" : "false");
    f.addFnAttr("approx-func-fp-math", fastMath ? "true" : "false");
    f.addFnAttr("no-signed-zeros-fp-math", fastMath ? "true" : "false");
    f.addFnAttr("denormal-fp-math-f32", fastMath ? "preserve-sign,preserve-sign" : "ieee,ieee");
  }
}

Status verify(const llvm::Module& module, const char* when) {
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(module, &os)) return Error(std::string("internal error: invalid LLVM IR ") + when + ": " + problems);
  return {};
}

}  // namespace

Expected<NvptxCompiler> NvptxCompiler::create(const CompileOptions& options) {
  auto arch = parseGpuArch(options.gpuArch);
  if (!arch) return arch.error();
  initializeNvptx();
  std::string problem;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(kTriple, problem);
  if (!target) return Error("this LLVM cannot generate NVPTX code: " + problem);
  llvm::TargetOptions to;
  // nvcc's default --fmad=true. The other float options come from function attributes
  // (setNumerics): codegen resets them from there for every function.
  to.AllowFPOpFusion = llvm::FPOpFusion::Fast;
  std::unique_ptr<llvm::TargetMachine> tm(
      target->createTargetMachine(kTriple, arch->sm, "+ptx" + std::to_string(arch->ptxVersion), to, std::nullopt,
                                  std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!tm) return Error("internal error: LLVM made no NVPTX TargetMachine for " + arch->sm);
  return NvptxCompiler(std::move(*arch), options.fastMath, std::move(tm));
}

void NvptxCompiler::configure(llvm::Module& module) const {
  module.setTargetTriple(kTriple);
  module.setDataLayout(tm_->createDataLayout());
}

Status NvptxCompiler::optimize(llvm::Module& module) const {
  KILN_TRY(verify(module, "from the kernel emitter"));
  if (fastMath_) addFastMathFlags(module);
  if (callsLibdevice(module)) KILN_TRY(linkLibdevice(module));
  setNumerics(module, fastMath_);
  // Only kernels are entry points: everything else may be inlined and dropped (unused libdevice).
  llvm::internalizeModule(module, isKernel);

  // Target callbacks add NVVMReflect and NVVMIntrRange at the start of the pipeline.
  runO3(module, *tm_, PipelineSettings{.loopVectorize = true, .slpVectorize = true, .targetCallbacks = true});
  return verify(module, "after optimisation");
}

Expected<std::string> NvptxCompiler::emitPtx(llvm::Module& module) const {
  llvm::legacy::PassManager pm;
  pm.add(new llvm::TargetLibraryInfoWrapperPass(llvm::Triple(module.getTargetTriple())));
  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream os(ptx);
  if (tm_->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile))
    return Error("internal error: the NVPTX target cannot emit PTX");
  pm.run(module);
  return std::string(ptx.str());
}

Expected<std::string> compileToPtx(llvm::Module& module, const CompileOptions& options) {
  auto compiler = NvptxCompiler::create(options);
  if (!compiler) return compiler.error();
  compiler->configure(module);
  KILN_TRY(compiler->optimize(module));
  return compiler->emitPtx(module);
}

}  // namespace kiln::codegen
