// callWithVectorVariants and inlineLateFunctions: see late_inline.h.
#include "codegen/late_inline.h"

#include <llvm/IR/Attributes.h>
#include <llvm/IR/Instructions.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/Transforms/Utils/ModuleUtils.h>

#include <algorithm>
#include <vector>

namespace kiln::codegen {

namespace {

// Marks the functions inlineLateFunctions inlines.
constexpr const char* kLateInline = "kiln-inline-after-vectorize";
constexpr unsigned kWidths[] = {4, 8, 16};

llvm::Function* defineFunction(llvm::Module& module, const std::string& name, llvm::Type* type, const MathBody& body) {
  if (llvm::Function* f = module.getFunction(name)) return f;
  auto* fnType = llvm::FunctionType::get(type, {type}, false);
  auto* f = llvm::Function::Create(fnType, llvm::GlobalValue::InternalLinkage, name, module);
  // Not inlined before the vectoriser (which must see the call), and free of side effects, so
  // the vectoriser may widen it.
  f->addFnAttr(llvm::Attribute::NoInline);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  f->addFnAttr(llvm::Attribute::WillReturn);
  f->setDoesNotAccessMemory();
  f->addFnAttr(kLateInline);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(module.getContext(), "entry", f));
  b.CreateRet(body(b, f->getArg(0)));
  return f;
}

}  // namespace

llvm::Value* callWithVectorVariants(llvm::IRBuilder<>& b, const std::string& name, llvm::Value* x, const MathBody& scalar,
                                    const MathBody& vector) {
  llvm::Module& module = *b.GetInsertBlock()->getModule();
  llvm::Type* f32 = b.getFloatTy();
  llvm::Function* scalarFn = defineFunction(module, name, f32, scalar);
  std::string mappings;
  for (unsigned width : kWidths) {
    std::string vectorName = name + "_v" + std::to_string(width);
    defineFunction(module, vectorName, llvm::FixedVectorType::get(f32, width), vector);
    // LLVM's vector function ABI name: the internal ISA, unmasked, `width` lanes, one vector
    // argument; then the scalar function and, in parentheses, the variant.
    mappings += (mappings.empty() ? "" : ",") + std::string("_ZGV_LLVM_N") + std::to_string(width) + "v_" + name + "(" +
                vectorName + ")";
  }
  llvm::CallInst* call = b.CreateCall(scalarFn, {x});
  call->setDoesNotAccessMemory();
  call->setDoesNotThrow();
  call->addFnAttr(llvm::Attribute::WillReturn);
  call->addFnAttr(llvm::Attribute::get(b.getContext(), "vector-function-abi-variant", mappings));
  return call;
}

std::vector<std::string> vectorVariantNames(const llvm::CallBase& call) {
  std::vector<std::string> names;
  llvm::Attribute mappings = call.getFnAttr("vector-function-abi-variant");
  if (!mappings.isValid()) return names;
  llvm::StringRef rest = mappings.getValueAsString();
  // "_ZGV..._scalar(variant),_ZGV..._scalar(variant)": the names in parentheses.
  while (!rest.empty()) {
    size_t open = rest.find('('), close = rest.find(')', open);
    if (open == llvm::StringRef::npos || close == llvm::StringRef::npos) break;
    names.push_back(rest.substr(open + 1, close - open - 1).str());
    rest = rest.substr(close + 1);
  }
  return names;
}

void keepLateFunctions(llvm::Module& module) {
  std::vector<llvm::GlobalValue*> late;
  for (llvm::Function& f : module)
    if (f.hasFnAttribute(kLateInline)) late.push_back(&f);
  if (!late.empty()) llvm::appendToCompilerUsed(module, late);
}

void inlineLateFunctions(llvm::Module& module) {
  std::vector<llvm::CallInst*> calls;
  std::vector<llvm::Function*> late;
  for (llvm::Function& f : module) {
    if (!f.hasFnAttribute(kLateInline)) continue;
    late.push_back(&f);
    for (llvm::User* user : f.users())
      if (auto* call = llvm::dyn_cast<llvm::CallInst>(user); call && call->getCalledFunction() == &f) calls.push_back(call);
  }
  if (late.empty()) return;
  for (llvm::CallInst* call : calls) {
    llvm::InlineFunctionInfo info;
    llvm::InlineFunction(*call, info);
  }
  llvm::removeFromUsedLists(module, [&](llvm::Constant* c) {
    return std::find(late.begin(), late.end(), c->stripPointerCasts()) != late.end();
  });
  for (llvm::Function* f : late)
    if (f->use_empty()) f->eraseFromParent();
}

}  // namespace kiln::codegen
