// Each kernel of a module cloned, with what it uses, into a module of its own (kernel_units.h).
#include "codegen/kernel_units.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/SmallPtrSet.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/Transforms/Utils/ValueMapper.h>

#include <algorithm>

#include "codegen/late_inline.h"

namespace kiln::codegen {

namespace {

bool isKernel(const llvm::Function& fn) { return !fn.isDeclaration() && !fn.hasLocalLinkage(); }

// Every global `root` refers to, directly or through its callees' and tables' code, root included.
class Closure {
 public:
  explicit Closure(const llvm::Function& root) { add(&root); }

  std::vector<const llvm::GlobalValue*> take() {
    while (!pending_.empty()) {
      const llvm::GlobalValue* value = pending_.back();
      pending_.pop_back();
      if (const auto* fn = llvm::dyn_cast<llvm::Function>(value)) {
        for (const llvm::Instruction& inst : llvm::instructions(*fn)) {
          for (const llvm::Value* operand : inst.operands()) visit(operand);
          // The vector variants a call names for the loop vectoriser (late_inline.h) are used
          // through that name alone.
          if (const auto* call = llvm::dyn_cast<llvm::CallBase>(&inst))
            for (const std::string& name : vectorVariantNames(*call))
              if (const llvm::Function* variant = fn->getParent()->getFunction(name)) add(variant);
        }
      } else if (const auto* global = llvm::dyn_cast<llvm::GlobalVariable>(value)) {
        if (global->hasInitializer()) visit(global->getInitializer());
      }
    }
    return std::move(found_);
  }

 private:
  void add(const llvm::GlobalValue* value) {
    if (!seen_.insert(value).second) return;
    found_.push_back(value);
    pending_.push_back(value);
  }
  // Globals hide inside constant expressions and aggregate initializers; each constant is walked
  // once, so a table shared by many instructions costs one walk.
  void visit(const llvm::Value* value) {
    if (const auto* global = llvm::dyn_cast<llvm::GlobalValue>(value)) return add(global);
    const auto* constant = llvm::dyn_cast<llvm::Constant>(value);
    if (!constant || constant->getNumOperands() == 0 || !constants_.insert(constant).second) return;
    for (const llvm::Value* operand : constant->operands()) visit(operand);
  }

  llvm::SmallPtrSet<const llvm::Value*, 32> seen_;
  llvm::SmallPtrSet<const llvm::Constant*, 32> constants_;
  std::vector<const llvm::GlobalValue*> pending_, found_;
};

// A module holding exactly `globals` (in that order): prototypes first, so that bodies and
// initializers can refer to any of them, then the initializers and the bodies.
std::unique_ptr<llvm::Module> cloneOnly(const llvm::Module& source, const std::string& name,
                                        const std::vector<const llvm::GlobalValue*>& globals) {
  auto unit = std::make_unique<llvm::Module>(name, source.getContext());
  unit->setSourceFileName(name);
  unit->setTargetTriple(source.getTargetTriple());
  unit->setDataLayout(source.getDataLayout());
  llvm::SmallVector<llvm::Module::ModuleFlagEntry, 4> flags;
  source.getModuleFlagsMetadata(flags);
  for (const auto& flag : flags) unit->addModuleFlag(flag.Behavior, flag.Key->getString(), flag.Val);

  llvm::ValueToValueMapTy map;
  for (const llvm::GlobalValue* value : globals) {
    if (const auto* fn = llvm::dyn_cast<llvm::Function>(value)) {
      auto* copy = llvm::Function::Create(fn->getFunctionType(), fn->getLinkage(), fn->getAddressSpace(),
                                          fn->getName(), unit.get());
      copy->copyAttributesFrom(fn);
      map[fn] = copy;
    } else if (const auto* global = llvm::dyn_cast<llvm::GlobalVariable>(value)) {
      auto* copy = new llvm::GlobalVariable(*unit, global->getValueType(), global->isConstant(), global->getLinkage(),
                                            nullptr, global->getName(), nullptr, global->getThreadLocalMode(),
                                            global->getAddressSpace());
      copy->copyAttributesFrom(global);
      map[global] = copy;
    }
  }
  for (const llvm::GlobalValue* value : globals) {
    if (const auto* global = llvm::dyn_cast<llvm::GlobalVariable>(value); global && global->hasInitializer()) {
      llvm::cast<llvm::GlobalVariable>(map[global])->setInitializer(llvm::MapValue(global->getInitializer(), map));
    } else if (const auto* fn = llvm::dyn_cast<llvm::Function>(value); fn && !fn->isDeclaration()) {
      auto* copy = llvm::cast<llvm::Function>(map[fn]);
      auto arg = copy->arg_begin();
      for (const llvm::Argument& a : fn->args()) {
        arg->setName(a.getName());
        map[&a] = &*arg++;
      }
      llvm::SmallVector<llvm::ReturnInst*, 4> returns;
      llvm::CloneFunctionInto(copy, fn, map, llvm::CloneFunctionChangeType::DifferentModule, returns);
    }
  }
  // Cloning into another module adds an llvm.dbg.cu list for the debug info it might carry over;
  // kernels have none, and an empty list makes the bitcode reader warn about debug info.
  if (llvm::NamedMDNode* units = unit->getNamedMetadata("llvm.dbg.cu"); units && units->getNumOperands() == 0)
    unit->eraseNamedMetadata(units);
  return unit;
}

}  // namespace

std::vector<KernelUnit> splitKernelUnits(const llvm::Module& module) {
  // Units list their globals in module order, whatever order the walk found them in, so the same
  // kernel gives the same bitcode wherever it sits.
  llvm::DenseMap<const llvm::GlobalValue*, size_t> position;
  for (const llvm::Function& fn : module) position[&fn] = position.size();
  for (const llvm::GlobalVariable& global : module.globals()) position[&global] = position.size();

  std::vector<KernelUnit> units;
  for (const llvm::Function& fn : module) {
    if (!isKernel(fn)) continue;
    std::vector<const llvm::GlobalValue*> globals = Closure(fn).take();
    std::sort(globals.begin(), globals.end(),
              [&](const llvm::GlobalValue* a, const llvm::GlobalValue* b) { return position[a] < position[b]; });
    KernelUnit unit;
    unit.kernel = fn.getName().str();
    for (const llvm::GlobalValue* value : globals)
      if (value->isDeclaration() && llvm::isa<llvm::Function>(value)) unit.declared.push_back(value->getName().str());
    std::unique_ptr<llvm::Module> part = cloneOnly(module, unit.kernel, globals);
    llvm::raw_string_ostream os(unit.bitcode);
    llvm::WriteBitcodeToFile(*part, os);
    os.flush();
    units.push_back(std::move(unit));
  }
  return units;
}

Expected<std::unique_ptr<llvm::Module>> readUnit(const KernelUnit& unit, llvm::LLVMContext& context) {
  llvm::MemoryBufferRef bytes(unit.bitcode, unit.kernel);
  auto module = llvm::parseBitcodeFile(bytes, context);
  if (!module)
    return Error("internal error: the unit of kernel " + unit.kernel +
                 " does not read back: " + llvm::toString(module.takeError()));
  return std::move(*module);
}

}  // namespace kiln::codegen
