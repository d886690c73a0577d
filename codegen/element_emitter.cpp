// The core of the shared element emitter: value representation and conversions, index
// arithmetic, loops and branches, kernel errors, and the recursion from a value to its op.
#include "codegen/element_emitter.h"

#include <llvm/IR/Constants.h>

#include <algorithm>

namespace kiln::codegen {

int ErrorTable::add(const Op& op, const std::string& message) {
  errors_.push_back({std::string(op.name()) + ": " + message, op.loc()});
  return static_cast<int>(errors_.size()) - 1;
}

std::optional<std::vector<int64_t>> optionalIntsAttr(const Op& op, std::string_view name) {
  if (const Attr* a = op.findAttr(name)) return a->getIntList();
  return std::nullopt;
}

ElementEmitter::ElementEmitter(llvm::IRBuilder<>& builder, TargetHooks& target, const KernelGroup& group,
                               const Values& buffers, llvm::Value* status, ErrorTable& errors)
    : b(builder), target_(target), group_(group), buffers_(buffers), status_(status), errors_(errors) {
  KILN_INTERNAL_CHECK(buffers.size() == group.inputs.size() + group.outputs.size(),
                      "kernel " + group.name + ": buffer count does not match the group");
  for (size_t i = 0; i < group.inputs.size(); ++i) inputIndex_[group.inputs[i]] = static_cast<int>(i);
}

// ---- types and conversions ----

llvm::Type* ElementEmitter::computeType(DType t) {
  switch (t) {
    case DType::Bool: return b.getInt1Ty();
    case DType::I8: return b.getInt8Ty();
    case DType::I32: return b.getInt32Ty();
    case DType::I64: return b.getInt64Ty();
    case DType::F16:
    case DType::BF16:
    case DType::F32: return b.getFloatTy();
    case DType::F64: return b.getDoubleTy();
  }
  internalError(__FILE__, __LINE__, "bad dtype");
}

llvm::Type* ElementEmitter::storageType(DType t) {
  switch (t) {
    case DType::Bool: return b.getInt8Ty();
    case DType::F16: return b.getHalfTy();
    case DType::BF16: return b.getInt16Ty();
    default: return computeType(t);
  }
}

llvm::Value* ElementEmitter::constant(DType t, double v) {
  if (isFloat(t)) return llvm::ConstantFP::get(computeType(t), v);
  if (t == DType::Bool) return b.getInt1(v != 0.0);
  return intConstant(t, static_cast<int64_t>(v));
}

llvm::Value* ElementEmitter::intConstant(DType t, int64_t v) {
  if (isFloat(t)) return llvm::ConstantFP::get(computeType(t), static_cast<double>(v));
  return llvm::ConstantInt::get(computeType(t), static_cast<uint64_t>(v), /*IsSigned=*/true);
}

// Double results round to f32 first and then, on store, to f16/bf16: Tensor::setDouble does the same.
llvm::Value* ElementEmitter::fromDouble(llvm::Value* v, DType t) {
  if (t == DType::F64) return v;
  return b.CreateFPTrunc(v, b.getFloatTy());
}

llvm::Value* ElementEmitter::roundTo(llvm::Value* v, DType t) {
  if (t != DType::F16 && t != DType::BF16) return v;
  return fromStorage(toStorage(v, t), t);
}

llvm::Value* ElementEmitter::toStorage(llvm::Value* v, DType t) {
  switch (t) {
    case DType::Bool: return b.CreateZExt(v, b.getInt8Ty());
    case DType::F16: return b.CreateFPTrunc(v, b.getHalfTy());
    case DType::BF16: {
      // Round to nearest even on the bits, NaN made quiet: floatToBFloat16 in ir/types.cpp.
      llvm::Value* x = b.CreateBitCast(v, b.getInt32Ty());
      llvm::Value* high = b.CreateLShr(x, 16);
      llvm::Value* isNaN = b.CreateICmpUGT(b.CreateAnd(x, 0x7fffffffu), b.getInt32(0x7f800000u));
      llvm::Value* rounding = b.CreateAdd(b.getInt32(0x7fffu), b.CreateAnd(high, 1));
      llvm::Value* rounded = b.CreateLShr(b.CreateAdd(x, rounding), 16);
      llvm::Value* bits = b.CreateSelect(isNaN, b.CreateOr(high, 0x40u), rounded);
      return b.CreateTrunc(bits, b.getInt16Ty());
    }
    default: return v;
  }
}

llvm::Value* ElementEmitter::fromStorage(llvm::Value* v, DType t) {
  switch (t) {
    case DType::Bool: return b.CreateICmpNE(v, b.getInt8(0));
    case DType::F16: return b.CreateFPExt(v, b.getFloatTy());
    case DType::BF16: return b.CreateBitCast(b.CreateShl(b.CreateZExt(v, b.getInt32Ty()), 16), b.getFloatTy());
    default: return v;
  }
}

llvm::Value* ElementEmitter::floatMax(llvm::Value* a, llvm::Value* c) {
  llvm::Value* larger = b.CreateSelect(b.CreateFCmpOLT(a, c), c, a);  // a < c ? c : a
  return b.CreateSelect(b.CreateFCmpUNO(a, c), llvm::ConstantFP::getQNaN(a->getType()), larger);
}

llvm::Value* ElementEmitter::floatMin(llvm::Value* a, llvm::Value* c) {
  llvm::Value* smaller = b.CreateSelect(b.CreateFCmpOLT(c, a), c, a);  // c < a ? c : a
  return b.CreateSelect(b.CreateFCmpUNO(a, c), llvm::ConstantFP::getQNaN(a->getType()), smaller);
}

// ---- indices ----

llvm::Value* ElementEmitter::linearize(const Index& index, const Shape& shape) {
  KILN_INTERNAL_CHECK(index.size() == shape.size(), "index rank does not match the shape");
  llvm::Value* linear = i64(0);
  int64_t stride = 1;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    if (shape[d] != 1) linear = b.CreateAdd(linear, b.CreateMul(index[d], i64(stride)));
    stride *= shape[d];
  }
  return linear;
}

Index ElementEmitter::delinearize(llvm::Value* linear, const Shape& shape) {
  int rank = static_cast<int>(shape.size());
  Index index(rank);
  int64_t inner = 1, outer = numElements(shape);
  for (int d = rank - 1; d >= 0; --d) {
    outer = shape[d] == 0 ? 0 : outer / shape[d];
    if (shape[d] == 1) {
      index[d] = i64(0);
    } else {
      llvm::Value* q = inner == 1 ? linear : b.CreateUDiv(linear, i64(inner));
      index[d] = outer == 1 ? q : b.CreateURem(q, i64(shape[d]));  // outer dims all 1: q < shape[d]
    }
    inner *= shape[d];
  }
  return index;
}

Index ElementEmitter::broadcastIndex(const Index& index, const Shape& from, const Shape& to) {
  size_t offset = to.size() - from.size();
  Index out(from.size());
  for (size_t d = 0; d < from.size(); ++d) out[d] = from[d] == 1 ? i64(0) : index[offset + d];
  return out;
}

// ---- control flow ----

Values ElementEmitter::loop(int64_t count, Values init, const LoopBody& body) {
  if (count <= 0) return init;
  if (count == 1) return body(i64(0), init);
  // count >= 2, so a bottom-tested loop: the body runs, then the latch decides.
  llvm::Function* f = b.GetInsertBlock()->getParent();
  llvm::BasicBlock* entry = b.GetInsertBlock();
  llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx(), "loop", f);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx(), "loop.end", f);
  b.CreateBr(header);
  b.SetInsertPoint(header);
  llvm::PHINode* iv = b.CreatePHI(b.getInt64Ty(), 2, "iv");
  iv->addIncoming(i64(0), entry);
  std::vector<llvm::PHINode*> phis;
  Values carried;
  for (llvm::Value* v : init) {
    phis.push_back(b.CreatePHI(v->getType(), 2));
    phis.back()->addIncoming(v, entry);
    carried.push_back(phis.back());
  }
  Values next = body(iv, carried);
  llvm::Value* ivNext = b.CreateAdd(iv, i64(1));
  llvm::BasicBlock* latch = b.GetInsertBlock();
  b.CreateCondBr(b.CreateICmpULT(ivNext, i64(count)), header, exit);
  iv->addIncoming(ivNext, latch);
  for (size_t k = 0; k < phis.size(); ++k) phis[k]->addIncoming(next[k], latch);
  b.SetInsertPoint(exit);
  return next;  // defined in blocks that dominate the latch, the exit's only predecessor
}

Values ElementEmitter::loopNest(const Shape& extents, Values init, const NestBody& body) {
  Index ivs;
  std::function<Values(size_t, Values)> level = [&](size_t d, Values carried) -> Values {
    if (d == extents.size()) return body(ivs, carried);
    return loop(extents[d], std::move(carried), [&](llvm::Value* iv, const Values& c) {
      ivs.resize(d);
      ivs.push_back(iv);
      return level(d + 1, c);
    });
  };
  return level(0, std::move(init));
}

Values ElementEmitter::ifThen(llvm::Value* cond, const std::function<Values()>& then,
                                              const Values& otherwise) {
  llvm::Function* f = b.GetInsertBlock()->getParent();
  llvm::BasicBlock* from = b.GetInsertBlock();
  llvm::BasicBlock* thenBlock = llvm::BasicBlock::Create(ctx(), "then", f);
  llvm::BasicBlock* merge = llvm::BasicBlock::Create(ctx(), "endif", f);
  b.CreateCondBr(cond, thenBlock, merge);
  b.SetInsertPoint(thenBlock);
  Values values = then();
  llvm::BasicBlock* thenEnd = b.GetInsertBlock();
  b.CreateBr(merge);
  b.SetInsertPoint(merge);
  Values out;
  for (size_t k = 0; k < values.size(); ++k) {
    llvm::PHINode* phi = b.CreatePHI(values[k]->getType(), 2);
    phi->addIncoming(values[k], thenEnd);
    phi->addIncoming(otherwise[k], from);
    out.push_back(phi);
  }
  return out;
}

llvm::Value* ElementEmitter::ifElse(llvm::Value* cond, const std::function<llvm::Value*()>& then,
                                    const std::function<llvm::Value*()>& otherwise) {
  if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(cond)) return c->isOne() ? then() : otherwise();
  llvm::Function* f = b.GetInsertBlock()->getParent();
  llvm::BasicBlock* thenBlock = llvm::BasicBlock::Create(ctx(), "then", f);
  llvm::BasicBlock* elseBlock = llvm::BasicBlock::Create(ctx(), "else", f);
  llvm::BasicBlock* merge = llvm::BasicBlock::Create(ctx(), "endif", f);
  b.CreateCondBr(cond, thenBlock, elseBlock);
  b.SetInsertPoint(thenBlock);
  llvm::Value* thenValue = then();
  llvm::BasicBlock* thenEnd = b.GetInsertBlock();
  b.CreateBr(merge);
  b.SetInsertPoint(elseBlock);
  llvm::Value* elseValue = otherwise();
  llvm::BasicBlock* elseEnd = b.GetInsertBlock();
  b.CreateBr(merge);
  b.SetInsertPoint(merge);
  llvm::PHINode* phi = b.CreatePHI(thenValue->getType(), 2);
  phi->addIncoming(thenValue, thenEnd);
  phi->addIncoming(elseValue, elseEnd);
  return phi;
}

void ElementEmitter::raiseIf(llvm::Value* cond, int error) {
  if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(cond); c && c->isZero()) return;
  ifThen(cond, [&] {
    // Atomic, so racing elements are well defined; whichever error lands first is reported.
    b.CreateAtomicCmpXchg(status_, b.getInt32(0), b.getInt32(static_cast<uint32_t>(error + 1)), llvm::MaybeAlign(4),
                          llvm::AtomicOrdering::Monotonic, llvm::AtomicOrdering::Monotonic);
    return Values{};
  }, {});
}

// ---- values and ops ----

llvm::Value* ElementEmitter::load(int input, const Index& index) {
  const Value* v = group_.inputs[static_cast<size_t>(input)];
  DType t = v->type().dtype;
  llvm::Type* storage = storageType(t);
  llvm::Value* ptr = b.CreateInBoundsGEP(storage, buffers_[static_cast<size_t>(input)], linearize(index, v->type().shape));
  return fromStorage(b.CreateLoad(storage, ptr), t);
}

llvm::Value* ElementEmitter::emit(const Value* v, const Index& index) {
  if (auto it = inputIndex_.find(v); it != inputIndex_.end()) return load(it->second, index);
  const Op* op = v->definingOp();
  KILN_INTERNAL_CHECK(op && std::find(group_.ops.begin(), group_.ops.end(), op) != group_.ops.end(),
                      "kernel " + group_.name + ": a value is neither an input nor computed in the group");
  return roundTo(emitOp(*op, v->index(), index), v->type().dtype);
}

llvm::Value* ElementEmitter::emitOp(const Op& op, unsigned result, const Index& index) {
  KILN_INTERNAL_CHECK(result == 0, "kernel ops have one result");
  switch (op.info().cls) {
    case OpClass::Elementwise:
    case OpClass::Collective: return emitElementwise(*this, op, index);
    case OpClass::Layout: return emitLayout(*this, op, index);
    case OpClass::Reduction: return emitReduction(*this, op, index);
    case OpClass::Library: return emitNN(*this, op, index);
    case OpClass::Region:
    case OpClass::Terminator: break;
  }
  internalError(__FILE__, __LINE__, "kernel " + group_.name + ": " + std::string(op.name()) + " is not a kernel op");
}

void ElementEmitter::emitOutputs(llvm::Value* linear) {
  size_t numInputs = group_.inputs.size();
  for (size_t k = 0; k < group_.outputs.size(); ++k) {
    const Value* out = group_.outputs[k];
    DType t = out->type().dtype;
    llvm::Value* value = emitOp(*out->definingOp(), out->index(), delinearize(linear, out->type().shape));
    llvm::Value* ptr = b.CreateInBoundsGEP(storageType(t), buffers_[numInputs + k], linear);
    b.CreateStore(toStorage(value, t), ptr);
  }
}

}  // namespace kiln::codegen
