// NVPTX kernel entry points (grid-stride loop) and libdevice math calls.
#include "codegen/nvptx_target.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

#include "codegen/kernel_plan.h"
#include "ir/status.h"

namespace kiln::codegen {

namespace {

// libdevice's name for `fn` in f32 (suffix f) and f64; empty where an LLVM intrinsic is better.
const char* libdeviceName(MathFn fn) {
  switch (fn) {
    case MathFn::Exp: return "__nv_exp";
    case MathFn::Log: return "__nv_log";
    case MathFn::Log1p: return "__nv_log1p";
    case MathFn::Tanh: return "__nv_tanh";
    case MathFn::Erf: return "__nv_erf";
    case MathFn::Sin: return "__nv_sin";
    case MathFn::Cos: return "__nv_cos";
    case MathFn::Asin: return "__nv_asin";
    case MathFn::Acos: return "__nv_acos";
    case MathFn::Atan: return "__nv_atan";
    case MathFn::Pow: return "__nv_pow";
    case MathFn::Sqrt:
    case MathFn::Floor:
    case MathFn::Ceil:
    case MathFn::Fabs: return nullptr;
  }
  return nullptr;
}

llvm::Intrinsic::ID intrinsicFor(MathFn fn) {
  switch (fn) {
    case MathFn::Sqrt: return llvm::Intrinsic::sqrt;
    case MathFn::Floor: return llvm::Intrinsic::floor;
    case MathFn::Ceil: return llvm::Intrinsic::ceil;
    case MathFn::Fabs: return llvm::Intrinsic::fabs;
    default: return llvm::Intrinsic::not_intrinsic;
  }
}

// A special register as i64 (tid.x, ntid.x, ctaid.x, nctaid.x are all i32).
llvm::Value* readSreg(llvm::IRBuilder<>& b, llvm::Intrinsic::ID id, const char* name) {
  return b.CreateZExt(b.CreateIntrinsic(id, {}, {}), b.getInt64Ty(), name);
}

}  // namespace

llvm::Value* NvptxTarget::emitMath(llvm::IRBuilder<>& b, MathFn fn, llvm::ArrayRef<llvm::Value*> args) {
  KILN_INTERNAL_CHECK(!args.empty(), "emitMath without arguments");
  llvm::Type* type = args[0]->getType();
  KILN_INTERNAL_CHECK(type->isFloatTy() || type->isDoubleTy(), "NVPTX emitMath takes f32 or f64");
  // LLVM 19 always lowers llvm.sqrt.f32 to sqrt.rn (and InstCombine turns llvm.nvvm.sqrt.f into
  // it), so fast math asks for the approximation by name, as nvcc --use_fast_math gives it.
  if (fn == MathFn::Sqrt && type->isFloatTy() && fastMath_)
    return b.CreateIntrinsic(llvm::Intrinsic::nvvm_sqrt_approx_ftz_f, {}, args);
  if (llvm::Intrinsic::ID id = intrinsicFor(fn); id != llvm::Intrinsic::not_intrinsic)
    return b.CreateIntrinsic(id, {type}, args);
  std::string name = std::string(libdeviceName(fn)) + (type->isFloatTy() ? "f" : "");
  llvm::Module* module = b.GetInsertBlock()->getModule();
  std::vector<llvm::Type*> params(args.size(), type);
  llvm::FunctionCallee callee = module->getOrInsertFunction(name, llvm::FunctionType::get(type, params, false));
  if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    // Pure functions: lets the optimiser hoist or drop calls before libdevice is linked.
    f->setDoesNotAccessMemory();
    f->setDoesNotThrow();
    f->setWillReturn();
  }
  return b.CreateCall(callee, args);
}

llvm::Value* NvptxTarget::loadVector(llvm::IRBuilder<>& b, llvm::Type* type, llvm::Value* ptr, unsigned width,
                                     uint64_t align) {
  auto* vectorType = llvm::FixedVectorType::get(type, width);
  const unsigned bits = width * static_cast<unsigned>(type->getPrimitiveSizeInBits());
  // ld.global.nc carries at most 128 bits; wider vectors would need splitting, which the NVPTX
  // backend cannot do for this intrinsic.
  if (bits > 128) return TargetHooks::loadVector(b, type, ptr, width, align);
  llvm::Value* global = b.CreateAddrSpaceCast(ptr, llvm::PointerType::get(b.getContext(), 1));
  // Elements narrower than 32 bits (bf16's i16, half, i8) travel as whole 32-bit words, one
  // ld.global.nc.v2/v4.u32, and are split in registers: NVPTX would load a <4 x bfloat> as two
  // scalar 32-bit loads, half of every sector a warp touches wasted.
  if (type->getPrimitiveSizeInBits() < 32 && bits % 32 == 0 && bits >= 64) {
    auto* words = llvm::FixedVectorType::get(b.getInt32Ty(), bits / 32);
    llvm::Value* loaded = b.CreateIntrinsic(llvm::Intrinsic::nvvm_ldg_global_i, {words, global->getType()},
                                            {global, b.getInt32(static_cast<uint32_t>(align))});
    return b.CreateBitCast(loaded, vectorType);
  }
  bool floats = type->isFloatTy() || type->isDoubleTy();
  bool ints = type->isIntegerTy(32) || type->isIntegerTy(64);
  if (!floats && !ints) return TargetHooks::loadVector(b, type, ptr, width, align);
  auto id = floats ? llvm::Intrinsic::nvvm_ldg_global_f : llvm::Intrinsic::nvvm_ldg_global_i;
  return b.CreateIntrinsic(id, {vectorType, global->getType()}, {global, b.getInt32(static_cast<uint32_t>(align))});
}

llvm::Value* NvptxTarget::roundToBFloat16(llvm::IRBuilder<>& b, llvm::Value* v) {
  if (smVersion_ < 80) return nullptr;
  return b.CreateBitCast(b.CreateFPTrunc(v, b.getBFloatTy()), b.getInt16Ty());
}

llvm::Value* NvptxTarget::widenBFloat16(llvm::IRBuilder<>& b, llvm::Value* bits) {
  if (smVersion_ < 90) return nullptr;
  return b.CreateFPExt(b.CreateBitCast(bits, b.getBFloatTy()), b.getFloatTy());
}

llvm::Value* NvptxTarget::shuffleXor(llvm::IRBuilder<>& b, llvm::Value* v, int laneMask) {
  llvm::Type* type = v->getType();
  unsigned bits = type->getPrimitiveSizeInBits();
  KILN_INTERNAL_CHECK(bits == 32 || bits == 64, "shuffleXor takes 32- or 64-bit values");
  auto shuffle32 = [&](llvm::Value* x) {
    // Every lane takes part (mask ~0); clamp 0x1f keeps the butterfly inside the warp.
    return b.CreateIntrinsic(llvm::Intrinsic::nvvm_shfl_sync_bfly_i32, {},
                             {b.getInt32(0xffffffffu), x, b.getInt32(static_cast<uint32_t>(laneMask)), b.getInt32(0x1f)});
  };
  if (bits == 32) return b.CreateBitCast(shuffle32(b.CreateBitCast(v, b.getInt32Ty())), type);
  llvm::Value* x = b.CreateBitCast(v, b.getInt64Ty());
  llvm::Value* low = shuffle32(b.CreateTrunc(x, b.getInt32Ty()));
  llvm::Value* high = shuffle32(b.CreateTrunc(b.CreateLShr(x, 32), b.getInt32Ty()));
  llvm::Value* joined = b.CreateOr(b.CreateZExt(low, b.getInt64Ty()), b.CreateShl(b.CreateZExt(high, b.getInt64Ty()), 32));
  return b.CreateBitCast(joined, type);
}

int NvptxTarget::rowLanes(const KernelGroup& group) const {
  bool fewRows = group.numRows() < kResidentWarps;
  return fewRows && group.rowLength() >= kBlockRowMinLength ? kThreadsPerBlock : kWarpSize;
}

llvm::GlobalVariable* NvptxTarget::sharedArray(llvm::IRBuilder<>& b, llvm::Type* type, uint64_t count,
                                              const std::string& what) {
  llvm::Function* kernel = b.GetInsertBlock()->getParent();
  auto* array = llvm::ArrayType::get(type, count);
  auto* global = new llvm::GlobalVariable(*kernel->getParent(), array, false, llvm::GlobalValue::InternalLinkage,
                                          llvm::UndefValue::get(array), kernel->getName() + "." + what, nullptr,
                                          llvm::GlobalValue::NotThreadLocal, /*AddressSpace=*/3);
  global->setAlignment(llvm::Align(std::max<uint64_t>(8, type->getPrimitiveSizeInBits() / 8)));
  return global;
}

void NvptxTarget::syncBlock(llvm::IRBuilder<>& b) { b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {}); }

llvm::Function* NvptxTarget::emitKernel(llvm::Module& module, const std::string& name,
                                       const std::vector<uint64_t>& bufferAlignments, int64_t numItems, int lanes,
                                       const std::vector<ItemPart>& /*parts: one grid-stride loop over all items*/,
                                       const WorkItemBodyFn& body) {
  const int numBuffers = static_cast<int>(bufferAlignments.size());
  llvm::LLVMContext& ctx = module.getContext();
  llvm::Type* ptr = llvm::PointerType::get(ctx, 0);
  std::vector<llvm::Type*> params(numBuffers + 1, ptr);
  auto* f = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), params, false),
                                   llvm::GlobalValue::ExternalLinkage, name, module);
  f->setCallingConv(llvm::CallingConv::PTX_Kernel);
  f->setDoesNotThrow();
  std::vector<llvm::Value*> buffers;
  for (int i = 0; i < numBuffers; ++i) {
    llvm::Argument* arg = f->getArg(i);
    arg->setName("b" + std::to_string(i));
    f->addParamAttr(i, llvm::Attribute::NoAlias);
    f->addParamAttr(i, llvm::Attribute::NoCapture);
    f->addParamAttr(i, llvm::Attribute::getWithAlignment(ctx, llvm::Align(bufferAlignments[i])));
    buffers.push_back(arg);
  }
  llvm::Argument* status = f->getArg(numBuffers);
  status->setName("status");
  f->addParamAttr(numBuffers, llvm::Attribute::NoAlias);
  f->addParamAttr(numBuffers, llvm::Attribute::NoCapture);
  f->addParamAttr(numBuffers, llvm::Attribute::getWithAlignment(ctx, llvm::Align(4)));

  // for (item = thread / lanes; item < n; item += threads / lanes) body(item, thread % lanes).
  // Every lane of an item sees the same trip count, so whole warps run the loop together.
  auto* entry = llvm::BasicBlock::Create(ctx, "entry", f);
  auto* loop = llvm::BasicBlock::Create(ctx, "loop", f);
  auto* exit = llvm::BasicBlock::Create(ctx, "exit", f);
  llvm::IRBuilder<> b(entry);
  llvm::Value* tid = readSreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, "tid");
  llvm::Value* ntid = readSreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x, "ntid");
  llvm::Value* ctaid = readSreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x, "ctaid");
  llvm::Value* nctaid = readSreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x, "nctaid");
  // Each factor is below 2^32, so neither product nor sum wraps in i64.
  llvm::Value* thread = b.CreateAdd(b.CreateMul(ctaid, ntid, "", true, true), tid, "thread", true, true);
  llvm::Value* threads = b.CreateMul(nctaid, ntid, "threads", true, true);
  llvm::Value* start = lanes == 1 ? thread : b.CreateUDiv(thread, b.getInt64(static_cast<uint64_t>(lanes)), "start");
  llvm::Value* lane = lanes == 1 ? b.getInt64(0) : b.CreateURem(thread, b.getInt64(static_cast<uint64_t>(lanes)), "lane");
  llvm::Value* stride = lanes == 1 ? threads : b.CreateUDiv(threads, b.getInt64(static_cast<uint64_t>(lanes)), "stride");
  llvm::Value* n = b.getInt64(static_cast<uint64_t>(numItems));
  b.CreateCondBr(b.CreateICmpULT(start, n), loop, exit);

  b.SetInsertPoint(loop);
  llvm::PHINode* index = b.CreatePHI(b.getInt64Ty(), 2, "item");
  index->addIncoming(start, entry);
  body(b, buffers, status, index, lane, nullptr, -1);
  // The body may have added blocks (reduction loops); the back edge leaves from wherever it ended.
  llvm::Value* next = b.CreateAdd(index, stride, "item.next", true, true);
  index->addIncoming(next, b.GetInsertBlock());
  b.CreateCondBr(b.CreateICmpULT(next, n), loop, exit);

  b.SetInsertPoint(exit);
  b.CreateRetVoid();
  return f;
}

}  // namespace kiln::codegen
