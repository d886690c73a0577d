// Helpers for the kernel emitter tests: a minimal TargetHooks (external math declarations and a
// plain loop kernel), and parse -> plan -> emit in one call.
#pragma once

#include <gtest/gtest.h>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <memory>
#include <string>

#include "codegen/kernel_emitter.h"
#include "codegen/kernel_plan.h"
#include "frontend/parser.h"

namespace kiln::codegen::test {

// Math as calls to libm-style declarations (expf / exp, ...); kernels are
// `void name(ptr buffers, ptr status, i64 begin, i64 end)` looping over [begin, end).
class TestTarget : public TargetHooks {
 public:
  std::string name() const override { return "test"; }

  llvm::Value* emitMath(llvm::IRBuilder<>& b, MathFn fn, llvm::ArrayRef<llvm::Value*> args) override {
    llvm::Type* type = args[0]->getType();
    EXPECT_TRUE(type->isFloatTy() || type->isDoubleTy()) << "emitMath takes f32 or f64 only";
    for (llvm::Value* a : args) EXPECT_EQ(a->getType(), type) << "emitMath arguments differ in type";
    static const char* names[] = {"exp",  "log",  "log1p", "sqrt", "tanh",  "erf",  "sin", "cos",
                                  "asin", "acos", "atan",  "pow",  "floor", "ceil", "fabs"};
    std::string name = std::string(names[static_cast<int>(fn)]) + (type->isFloatTy() ? "f" : "");
    std::vector<llvm::Type*> params(args.size(), type);
    llvm::Module* m = b.GetInsertBlock()->getModule();
    auto callee = m->getOrInsertFunction(name, llvm::FunctionType::get(type, params, false));
    return b.CreateCall(callee, args);
  }

  int elementsPerItem(size_t) const override { return 1; }
  int rowLanes(const KernelGroup&) const override { return 1; }
  llvm::GlobalVariable* sharedArray(llvm::IRBuilder<>&, llvm::Type*, uint64_t, const std::string&) override {
    ADD_FAILURE() << "sharedArray on a target without shared memory";
    return nullptr;
  }
  void syncBlock(llvm::IRBuilder<>&) override { ADD_FAILURE() << "syncBlock on a target without blocks"; }
  llvm::Value* shuffleXor(llvm::IRBuilder<>&, llvm::Value* v, int) override { return v; }

  llvm::Function* emitKernel(llvm::Module& module, const std::string& name, const std::vector<uint64_t>& bufferAlignments,
                             int64_t numElements, int, const std::vector<ItemPart>&, const WorkItemBodyFn& body) override {
    const int numBuffers = static_cast<int>(bufferAlignments.size());
    llvm::LLVMContext& ctx = module.getContext();
    auto* ptr = llvm::PointerType::get(ctx, 0);
    auto* i64 = llvm::Type::getInt64Ty(ctx);
    auto* type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr, ptr, i64, i64}, false);
    auto* f = llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage, name, module);
    auto* entry = llvm::BasicBlock::Create(ctx, "entry", f);
    auto* loop = llvm::BasicBlock::Create(ctx, "loop", f);
    auto* exit = llvm::BasicBlock::Create(ctx, "exit", f);
    llvm::IRBuilder<> b(entry);
    std::vector<llvm::Value*> buffers;
    for (int i = 0; i < numBuffers; ++i)
      buffers.push_back(b.CreateLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, f->getArg(0), i)));
    b.CreateCondBr(b.CreateICmpSLT(f->getArg(2), f->getArg(3)), loop, exit);
    b.SetInsertPoint(loop);
    llvm::PHINode* i = b.CreatePHI(i64, 2);
    i->addIncoming(f->getArg(2), entry);
    body(b, buffers, f->getArg(1), i, b.getInt64(0), nullptr, -1);
    llvm::Value* next = b.CreateAdd(i, b.getInt64(1));
    i->addIncoming(next, b.GetInsertBlock());
    b.CreateCondBr(b.CreateICmpSLT(next, f->getArg(3)), loop, exit);
    b.SetInsertPoint(exit);
    b.CreateRetVoid();
    return f;
  }
};

inline std::string printModule(const llvm::Module& m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os, nullptr);
  return s;
}

// Everything one emission produced.
struct Emitted {
  std::unique_ptr<Module> ir;
  std::unique_ptr<BlockPlan> plan;
  std::unique_ptr<llvm::LLVMContext> ctx;
  std::unique_ptr<llvm::Module> module;
  std::vector<KernelError> errors;
  std::string text;      // the printed LLVM module
  std::string problems;  // verifyModule's complaints, empty if valid
};

inline Emitted emitParsed(std::unique_ptr<Module> ir) {
  Emitted e;
  e.ir = std::move(ir);
  e.plan = planFunction(*e.ir->entry());
  e.ctx = std::make_unique<llvm::LLVMContext>();
  e.module = std::make_unique<llvm::Module>("kiln", *e.ctx);
  TestTarget target;
  e.errors = emitKernels(*e.module, target, *e.plan);
  llvm::raw_string_ostream os(e.problems);
  llvm::verifyModule(*e.module, &os);
  e.text = printModule(*e.module);
  return e;
}

// Parses `source` (failing the test on a parse error) and emits its entry function.
inline Emitted emitSource(const std::string& source) {
  auto parsed = parseModule(source, "test.kiln");
  if (!parsed) {
    ADD_FAILURE() << "parse failed: " << parsed.error().str() << "\n" << source;
    return {};
  }
  return emitParsed(std::move(*parsed));
}

}  // namespace kiln::codegen::test
