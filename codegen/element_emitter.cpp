// The core of the shared element emitter: value representation and conversions, index
// arithmetic, loops and branches, kernel errors, and the recursion from a value to its op.
#include "codegen/element_emitter.h"

#include "codegen/kernel_emitter.h"
#include "codegen/loop_hints.h"
#include "passes/fusion_rules.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Instructions.h>

#include <algorithm>
#include <optional>
#include <set>

namespace kiln::codegen {

int ErrorTable::add(const Op& op, const std::string& message) {
  // check_range's message names its subject itself (`what`: "softmax_cross_entropy: label").
  std::string prefix = op.kind() == OpKind::CheckRange ? "" : std::string(op.name()) + ": ";
  errors_.push_back({prefix + message, op.loc()});
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
    case DType::I8:
    case DType::U8: return b.getInt8Ty();
    case DType::I16:
    case DType::U16: return b.getInt16Ty();
    case DType::I32:
    case DType::U32: return b.getInt32Ty();
    case DType::I64:
    case DType::U64: return b.getInt64Ty();
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
  return intConstant(t, truncateToInt(v, t));
}

llvm::Value* ElementEmitter::intConstant(DType t, int64_t v) {
  if (isFloat(t)) return llvm::ConstantFP::get(computeType(t), static_cast<double>(v));
  return llvm::ConstantInt::get(computeType(t), static_cast<uint64_t>(v), /*IsSigned=*/!isUnsigned(t));
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
      if (llvm::Value* bits = target_.roundToBFloat16(b, v)) return bits;
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
    case DType::F16: return b.CreateFPExt(v, v->getType()->getWithNewType(b.getFloatTy()));
    case DType::BF16:
      if (llvm::Value* widened = target_.widenBFloat16(b, v)) return widened;
      return widenBFloat16Bits(v);
    default: return v;
  }
}

llvm::Value* ElementEmitter::widenBFloat16Bits(llvm::Value* bits) {
  llvm::Type* type = bits->getType();
  return b.CreateBitCast(b.CreateShl(b.CreateZExt(bits, type->getWithNewType(b.getInt32Ty())), 16),
                         type->getWithNewType(b.getFloatTy()));
}

llvm::Value* ElementEmitter::floatMax(llvm::Value* a, llvm::Value* c) {
  if (a->getType()->isFloatTy() && target_.hasNaNPropagatingMinMax())
    return b.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, a, c);
  llvm::Value* larger = b.CreateSelect(b.CreateFCmpOLT(a, c), c, a);  // a < c ? c : a
  return b.CreateSelect(b.CreateFCmpUNO(a, c), llvm::ConstantFP::getQNaN(a->getType()), larger);
}

llvm::Value* ElementEmitter::floatMin(llvm::Value* a, llvm::Value* c) {
  if (a->getType()->isFloatTy() && target_.hasNaNPropagatingMinMax())
    return b.CreateBinaryIntrinsic(llvm::Intrinsic::minimum, a, c);
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
  if (linear == item_ && itemColumn_) {
    // The row's dims (loopRowLength: the last, or several trailing ones) come from the column;
    // a value that spans them all reads at the column again (LLVM folds the divisions away).
    size_t rowDims = 0;
    int64_t length = 1;
    while (rowDims < shape.size() && length < itemRowLength_) length *= shape[shape.size() - ++rowDims];
    if (rowDims > 0 && length == itemRowLength_) {
      auto split = shape.end() - static_cast<ptrdiff_t>(rowDims);
      llvm::Value* rowStart = b.CreateSub(linear, itemColumn_, "row.start", true, true);
      Index index = delinearize(b.CreateUDiv(rowStart, i64(itemRowLength_), "row", /*isExact=*/true), Shape(shape.begin(), split));
      Index columns = rowDims == 1 ? Index{itemColumn_} : delinearize(itemColumn_, Shape(split, shape.end()));
      index.insert(index.end(), columns.begin(), columns.end());
      return index;
    }
  }
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
  if (rowBlock_ && count <= kRowBlockUnrolledTrips) {
    // Straight-line code, and no latch for hints to land on (lastLoopLatch: null).
    for (int64_t iv = 0; iv < count; ++iv) init = body(i64(iv), init);
    latches_.push_back(nullptr);
    return init;
  }
  return loop(i64(count), std::move(init), body);
}

Values ElementEmitter::loop(llvm::Value* count, Values init, const LoopBody& body) {
  // count >= 1, so a bottom-tested loop: the body runs, then the latch decides.
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
  latches_.push_back(b.CreateCondBr(b.CreateICmpULT(ivNext, count), header, exit));
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

llvm::Value* ElementEmitter::accumulateRun(const Accumulation& acc, llvm::Value* init, int64_t count,
                                           const std::function<llvm::Value*(llvm::Value* k)>& element) {
  int64_t mathBefore = target_.inlineMathEmitted();
  llvm::Value* total =
      loop(count, {init}, [&](llvm::Value* k, const Values& c) { return Values{acc.add(c[0], element(k))}; })[0];
  int lanes = target_.floatSumLanes();
  if (!acc.summedFloats || lanes == 0 || count <= 1) return total;
  if (*acc.summedFloats == DType::F64) {
    // f64 sums are not widened, so reassociating them changes their bits. Runs of fewer than two
    // vectors gain nothing from lanes along them and keep their order (LLVM unrolls them whole
    // and vectorises across rows, one lane per row); longer ones split across the lanes, as
    // LLVM's own cost model splits any long run: rows of 64 f64, 2.1 -> 0.7 ms over [65536,64].
    lanes /= 2;
    if (count < 2 * lanes) return total;
  }
  hintVectorLoop(count, lanes, mathBefore);
  return total;
}

void ElementEmitter::hintVectorLoop(int64_t count, int lanes, int64_t mathBefore) {
  if (!lastLoopLatch()) return;  // unrolled (a row block's)
  int interleave = target_.loopInterleave(count, mathBefore);
  // Kept rolled only where the body is one block: a loop with a branch in it (a check that
  // raises a kernel error) LLVM may not vectorise at all, and kept rolled it would only lose its
  // full unrolling.
  auto* latch = llvm::cast<llvm::BranchInst>(lastLoopLatch());
  bool shortLoop = count <= kMaxFullyUnrolledTrips && latch->getSuccessor(0) == latch->getParent();
  if (shortLoop && interleave == 0) interleave = shortLoopInterleave(count, lanes);
  setLoopHints(latch, lanes, interleave, /*rolledUntilVectorised=*/shortLoop);
}

llvm::Value* ElementEmitter::rowBlockSlot(const Value* v, llvm::Value* k) {
  auto it = rowBlock_->tiles.find(v);
  if (it == rowBlock_->tiles.end()) return nullptr;
  llvm::Value* slot = b.CreateAdd(b.CreateMul(k, i64(rowBlock_->rows)), rowBlock_->lane);
  return b.CreateInBoundsGEP(storageType(v->type().dtype), it->second, slot);
}

llvm::Instruction* ElementEmitter::lastLoopLatch() {
  KILN_INTERNAL_CHECK(!latches_.empty(), "a loop was emitted before its latch is asked for");
  return latches_.back();
}

Values ElementEmitter::mergedLoopNest(const std::vector<Shape>& runs, Values init, const NestBody& body) {
  Shape products;
  for (const Shape& run : runs) products.push_back(numElements(run));
  return loopNest(products, std::move(init), [&](const Index& flat, const Values& carried) {
    Index ivs;
    for (size_t r = 0; r < runs.size(); ++r) {
      Index part(runs[r].size());
      llvm::Value* rest = flat[r];
      for (size_t d = runs[r].size(); d-- > 1;) {  // row-major: the last dim varies fastest
        part[d] = b.CreateURem(rest, i64(runs[r][d]));
        rest = b.CreateUDiv(rest, i64(runs[r][d]));
      }
      if (!part.empty()) part[0] = rest;
      ivs.insert(ivs.end(), part.begin(), part.end());
    }
    return body(ivs, carried);
  });
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
  if (rowBlock_) {
    // A row block's lanes note their first error in a slot of their own, with no branch, which
    // would keep the vectoriser from the loop over the lanes; emitRowBlock raises them after it.
    llvm::Value* slot = b.CreateInBoundsGEP(b.getInt32Ty(), rowBlock_->errors, rowBlock_->lane);
    llvm::Value* first = b.CreateLoad(b.getInt32Ty(), slot);
    llvm::Value* code = b.CreateSelect(cond, b.getInt32(static_cast<uint32_t>(error + 1)), b.getInt32(0));
    b.CreateStore(b.CreateSelect(b.CreateICmpNE(first, b.getInt32(0)), first, code), slot);
    rowBlock_->raises = true;
    return;
  }
  raiseCode(cond, b.getInt32(static_cast<uint32_t>(error + 1)));
}

void ElementEmitter::raiseCode(llvm::Value* cond, llvm::Value* code) {
  ifThen(cond, [&] {
    // Atomic, so racing elements are well defined; whichever error lands first is reported.
    b.CreateAtomicCmpXchg(status_, b.getInt32(0), code, llvm::MaybeAlign(4), llvm::AtomicOrdering::Monotonic,
                          llvm::AtomicOrdering::Monotonic);
    return Values{};
  }, {});
}

// ---- values and ops ----

llvm::Value* ElementEmitter::load(int input, const Index& index) {
  const Value* v = group_.inputs[static_cast<size_t>(input)];
  DType t = v->type().dtype;
  llvm::Type* storage = storageType(t);
  // (Preloaded values were found by emit() before it came here.) An input of the current element's
  // shape read at the current element: its linear index is the element's own, which keeps
  // neighbouring elements' loads visibly contiguous.
  bool current = currentLinear_ && v->type().shape == currentShape_ && index == currentIndex_;
  llvm::Value* ptr = nullptr;
  // In a row block, an input with a tile read in the current row: from the tile.
  const size_t rowRank = group_.rows.size();
  if (rowBlock_ && index.size() == rowRank + group_.inner.size() &&
      std::equal(rowBlock_->rowIndex.begin(), rowBlock_->rowIndex.end(), index.begin()))
    ptr = rowBlockSlot(v, linearize(Index(index.begin() + static_cast<ptrdiff_t>(rowRank), index.end()), group_.inner));
  if (!ptr) {
    llvm::Value* linear = current ? currentLinear_ : linearize(index, v->type().shape);
    ptr = b.CreateInBoundsGEP(storage, buffers_[static_cast<size_t>(input)], linear);
  }
  llvm::Value* loaded = b.CreateLoad(storage, ptr);
  // A bf16 load widened by integer code stays an i16 load: widened by the target's conversion,
  // InstCombine would make it a bfloat load, and NVPTX splits the vectors of those that the
  // load-store vectoriser makes of neighbouring elements into 32-bit loads.
  return t == DType::BF16 ? widenBFloat16Bits(loaded) : fromStorage(loaded, t);
}

llvm::Value* ElementEmitter::emit(const Value* v, const Index& index) {
  if (auto it = rowCache_.find(v); it != rowCache_.end()) return it->second;
  // A value a tile computed for this element (a tiled matmul's sum), or an input it preloaded.
  for (const auto& [key, value] : preloaded_)
    if (key.first == v && key.second == index) return value;
  if (auto it = inputIndex_.find(v); it != inputIndex_.end()) return load(it->second, index);
  const Op* op = v->definingOp();
  KILN_INTERNAL_CHECK(op && std::find(group_.ops.begin(), group_.ops.end(), op) != group_.ops.end(),
                      "kernel " + group_.name + ": a value is neither an input nor computed in the group");
  // A value read several times at one index (x * x, a chain whose ops each read their operand
  // twice) is emitted once: re-emitting would grow the IR exponentially in the chain's length.
  // Reuse is limited to the block the value was finished in, where it dominates what follows.
  EmittedKey key{b.GetInsertBlock(), v, index};
  if (auto it = emitted_.find(key); it != emitted_.end()) return it->second;
  llvm::Value* value = roundTo(emitOp(*op, v->index(), index), v->type().dtype);
  emitted_[{b.GetInsertBlock(), v, index}] = value;
  return value;
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

void ElementEmitter::setCurrent(const Index& index, llvm::Value* linear, const Shape& shape) {
  currentIndex_ = index;
  currentLinear_ = linear;
  currentShape_ = shape;
}

void ElementEmitter::setItemPart(const ItemPart& part, llvm::Value* item, llvm::Value* column) {
  int64_t k = itemColumns_ = part.columnsPerItem;
  item_ = k == 1 ? item : b.CreateMul(item, i64(k), "first", true, true);
  itemColumn_ = !column || k == 1 ? column : b.CreateMul(column, i64(k), "column.first", true, true);
  itemRowLength_ = part.rowLength * k;
}

void ElementEmitter::emitSegmentItem(size_t segment, llvm::Value* item) {
  emitSegmentItem(group_.segments[segment], itemColumns_ == 1 ? item : item_, itemColumns_);
}

void ElementEmitter::emitLoopItem(llvm::Value* item) {
  int64_t width = elementsPerItem(group_, target_);
  if (group_.segments.size() == 1)
    return emitSegmentItem(group_.segments[0], width == 1 ? item : b.CreateMul(item, i64(width)), width);
  // Segments one after another in item space; each item lies in exactly one.
  int64_t begin = 0;
  for (const Segment& segment : group_.segments) {
    int64_t items = (numElements(segment.shape) + width - 1) / width;
    llvm::Value* inside = b.CreateAnd(b.CreateICmpUGE(item, i64(begin)), b.CreateICmpULT(item, i64(begin + items)));
    ifThen(inside, [&] {
      emitSegmentItem(segment, b.CreateMul(b.CreateSub(item, i64(begin)), i64(width)), width);
      return Values{};
    }, {});
    begin += items;
  }
}

void ElementEmitter::emitSegmentItem(const Segment& segment, llvm::Value* first, int64_t width) {
  const Shape& shape = segment.shape;
  int64_t n = numElements(shape);
  // The index of element first + j. When the last dim is a multiple of the width, an item never
  // crosses a row: one delinearisation, then the last index plus j (contiguous for broadcast
  // inputs too).
  bool sameRow = !shape.empty() && shape.back() % width == 0;
  Index firstIndex = sameRow ? delinearize(first, shape) : Index{};
  auto elementIndex = [&](int64_t j, llvm::Value* linear) {
    if (!sameRow) return delinearize(linear, shape);
    Index index = firstIndex;
    if (j) index.back() = b.CreateAdd(index.back(), i64(j), "", /*HasNUW=*/true, /*HasNSW=*/true);
    return index;
  };
  auto compute = [&](size_t k, const Index& index, llvm::Value* linear) {
    setCurrent(index, linear, shape);
    return emit(group_.outputs[k], currentIndex_);
  };
  auto whole = [&] {
    // One index per element, made once: preloaded inputs are found again by these very values.
    std::vector<Index> indices;
    std::vector<llvm::Value*> linears;
    for (int64_t j = 0; j < width; ++j) {
      linears.push_back(j ? b.CreateAdd(first, i64(j)) : first);
      indices.push_back(elementIndex(j, linears.back()));
    }
    // (The GPU's vector loads; a CPU loop of window columns is widened by the loop vectoriser.)
    if (width > 1 && itemColumns_ == 1) preloadInputs(shape, indices, linears, sameRow);
    // Every element's values first, then every store: neighbouring stores end up adjacent.
    std::vector<std::pair<size_t, std::pair<llvm::Value*, llvm::Value*>>> stores;
    for (size_t j = 0; j < indices.size(); ++j)
      for (size_t k : segment.outputs) stores.push_back({k, {linears[j], compute(k, indices[j], linears[j])}});
    for (auto& [k, s] : stores) storeOutput(k, s.first, s.second);
    preloaded_.clear();
    return Values{};
  };
  auto tail = [&] {
    for (int64_t j = 0; j < width; ++j) {
      llvm::Value* linear = j ? b.CreateAdd(first, i64(j)) : first;
      ifThen(b.CreateICmpULT(linear, i64(n)), [&] {
        storeElement(segment, elementIndex(j, linear), linear);
        return Values{};
      }, {});
    }
    return Values{};
  };
  if (n % width == 0) {
    whole();
  } else {
    llvm::Value* complete = b.CreateICmpULE(b.CreateAdd(first, i64(width)), i64(n));
    ifThen(complete, whole, {});
    ifThen(b.CreateNot(complete), tail, {});
  }
  currentLinear_ = nullptr;
}

void ElementEmitter::emitColumnTileItem(size_t segmentIndex, const ColumnTiles& tiles, llvm::Value* item) {
  const Segment& segment = group_.segments[segmentIndex];
  const Shape& shape = segment.shape;
  llvm::Value* perRow = i64(tiles.tilesPerRow());
  llvm::Value* row = b.CreateUDiv(item, perRow);
  llvm::Value* first = b.CreateMul(b.CreateURem(item, perRow), i64(tiles.tile), "column.first", true, true);
  llvm::Value* left = b.CreateSub(i64(tiles.columns), first);
  llvm::Value* count = atMost(left, tiles.tile);
  Index rowIndex = delinearize(row, Shape(shape.begin(), shape.end() - 1));
  auto indexAt = [&](llvm::Value* q) {
    Index index = rowIndex;
    index.push_back(b.CreateAdd(first, q, "column", true, true));
    return index;
  };
  // One accumulator array per reduction, in the kernel's entry block (a fixed stack slot).
  // Per reduction, its value at column q of the tile once the walk is done.
  std::vector<std::function<llvm::Value*(llvm::Value* q)>> results;
  for (const Op* op : tiles.reductions) {
    ReducedAxes reduced = reducedAxesOf(*op);
    int rank = op->operand(0)->type().rank();
    if (op->kind() == OpKind::Argmax || op->kind() == OpKind::Argmin) {
      // Each column's best key and its index, walking the axis in order: a strictly better key
      // takes over, so the first occurrence (and the first NaN) stays.
      ArgKeys keys = argKeysFor(*this, *op);
      llvm::Type* indexType = reduced.count <= INT32_MAX ? b.getInt32Ty() : b.getInt64Ty();
      llvm::Value* best = stackArray(keys.keyType, tiles.tile, "column.best");
      llvm::Value* at = stackArray(indexType, tiles.tile, "column.index");
      auto bestOf = [&](llvm::Value* q) { return b.CreateInBoundsGEP(keys.keyType, best, q); };
      auto atOf = [&](llvm::Value* q) { return b.CreateInBoundsGEP(indexType, at, q); };
      loop(count, {}, [&](llvm::Value* q, const Values&) {
        b.CreateStore(keys.worst, bestOf(q));
        b.CreateStore(llvm::ConstantInt::get(indexType, 0), atOf(q));
        return Values{};
      });
      loop(reduced.count, {}, [&](llvm::Value* k, const Values&) {
        llvm::Value* kIndex = b.CreateTrunc(k, indexType);
        loop(count, {}, [&](llvm::Value* q, const Values&) {
          llvm::Value* key = keys.key(emit(op->operand(0), reducedSource(indexAt(q), reduced, {k}, rank)));
          llvm::Value* held = b.CreateLoad(keys.keyType, bestOf(q));
          llvm::Value* better = keys.beats(key, held);
          b.CreateStore(b.CreateSelect(better, key, held), bestOf(q));
          b.CreateStore(b.CreateSelect(better, kIndex, b.CreateLoad(indexType, atOf(q))), atOf(q));
          return Values{};
        });
        return Values{};
      });
      results.push_back([this, at, indexType](llvm::Value* q) {
        return b.CreateZExt(b.CreateLoad(indexType, b.CreateInBoundsGEP(indexType, at, q)), b.getInt64Ty());
      });
      continue;
    }
    Accumulation acc = accumulationFor(*this, *op, reduced.count);
    llvm::Type* type = acc.init->getType();
    llvm::Value* array = stackArray(type, tiles.tile, "column.sums");
    auto slot = [&](llvm::Value* q) { return b.CreateInBoundsGEP(type, array, q); };
    loop(count, {}, [&](llvm::Value* q, const Values&) {
      b.CreateStore(acc.init, slot(q));
      return Values{};
    });
    loopNest(reduced.extents, {}, [&](const Index& ivs, const Values&) {
      loop(count, {}, [&](llvm::Value* q, const Values&) {
        llvm::Value* x = emit(op->operand(0), reducedSource(indexAt(q), reduced, ivs, rank));
        b.CreateStore(acc.add(b.CreateLoad(type, slot(q)), x), slot(q));
        return Values{};
      });
      return Values{};
    });
    DType t = op->result()->type().dtype;
    results.push_back([this, acc, type, array, t](llvm::Value* q) {
      return roundTo(acc.finish(b.CreateLoad(type, b.CreateInBoundsGEP(type, array, q))), t);
    });
  }
  loop(count, {}, [&](llvm::Value* q, const Values&) {
    Index index = indexAt(q);
    for (size_t r = 0; r < results.size(); ++r) preloaded_.push_back({{tiles.reductions[r]->result(), index}, results[r](q)});
    storeElement(segment, index, b.CreateAdd(b.CreateMul(row, i64(tiles.columns)), index.back()));
    preloaded_.clear();
    return Values{};
  });
  currentLinear_ = nullptr;
}

void ElementEmitter::storeElement(const Segment& segment, const Index& index, llvm::Value* linear) {
  setCurrent(index, linear, segment.shape);
  // Every output's value before any store: a result written over a donated input
  // (runtime/donation.h) must not be read back by another output of the element.
  std::vector<llvm::Value*> values;
  for (size_t k : segment.outputs) values.push_back(emit(group_.outputs[k], currentIndex_));
  for (size_t i = 0; i < segment.outputs.size(); ++i) storeOutput(segment.outputs[i], linear, values[i]);
}

void ElementEmitter::storeOutput(size_t k, llvm::Value* linear, llvm::Value* value) {
  DType t = group_.outputs[k]->type().dtype;
  llvm::Value* buffer = buffers_[group_.inputs.size() + k];
  b.CreateStore(toStorage(value, t), b.CreateInBoundsGEP(storageType(t), buffer, linear));
}

void ElementEmitter::preloadInputs(const Shape& shape, const std::vector<Index>& indices,
                                   const std::vector<llvm::Value*>& linears, bool sameRow) {
  for (size_t input = 0; input < group_.inputs.size(); ++input) {
    const Value* v = group_.inputs[input];
    const Shape& from = v->type().shape;
    // Read by an elementwise op of the segment's shape, and broadcastable to it.
    bool readElementwise = false;
    for (const Use& use : v->uses())
      if (std::find(group_.ops.begin(), group_.ops.end(), use.user) != group_.ops.end() &&
          use.user->info().cls == OpClass::Elementwise && use.user->result()->type().shape == shape)
        readElementwise = true;
    bool broadcasts = from.size() <= shape.size();
    for (size_t d = 0; broadcasts && d < from.size(); ++d)
      broadcasts = from[d] == 1 || from[d] == shape[shape.size() - from.size() + d];
    if (!readElementwise || !broadcasts || v->type().numElements() == 0) continue;
    DType t = v->type().dtype;
    llvm::Type* storage = storageType(t);
    // Consecutive elements of this input: one vector load, as wide as the work item (its first
    // element's offset is a multiple of the width), where the buffer is aligned to the vector's size
    // (a map's slice may not be: then one load per element).
    bool contiguous = from == shape || (sameRow && !from.empty() && from.back() == shape.back());
    auto width = static_cast<unsigned>(indices.size());
    uint64_t bytes = std::min<uint64_t>(16, width * storage->getPrimitiveSizeInBits() / 8);
    if (contiguous && storage->getPrimitiveSizeInBits() >= 8 && bufferAlignment(v) >= bytes) {
      Index first = broadcastIndex(indices[0], from, shape);
      llvm::Value* ptr = b.CreateInBoundsGEP(storage, buffers_[input], from == shape ? linears[0] : linearize(first, from));
      llvm::Value* vector = target_.loadVector(b, storage, ptr, width, bytes);
      for (unsigned j = 0; j < width; ++j)
        preloaded_.push_back({{v, broadcastIndex(indices[j], from, shape)}, fromStorage(b.CreateExtractElement(vector, j), t)});
      continue;
    }
    for (size_t j = 0; j < indices.size(); ++j) {
      Index at = broadcastIndex(indices[j], from, shape);
      llvm::Value* linear = from == shape ? linears[j] : linearize(at, from);
      llvm::Value* ptr = b.CreateInBoundsGEP(storage, buffers_[input], linear);
      preloaded_.push_back({{v, at}, fromStorage(b.CreateLoad(storage, ptr), t)});
    }
  }
}

namespace {

// A kTile x (kTile + 1) array of one element type in shared memory: rows padded by one so that a
// warp reading a column touches 32 different banks. Elements narrower than a 32-bit bank word
// are held widened, so threads never share a word and a column read stays conflict-free.
class SharedTile {
 public:
  SharedTile(llvm::IRBuilder<>& b, TargetHooks& target, llvm::Type* storage, const std::string& what)
      : b_(b), storage_(storage), bits_(storage->getPrimitiveSizeInBits()),
        held_(bits_ < 32 ? b.getInt32Ty() : storage),
        array_(target.sharedArray(b, held_, kTile * (kTile + 1), what)) {}

  void store(llvm::Value* row, llvm::Value* column, llvm::Value* value) {
    if (bits_ < 32) value = b_.CreateZExt(b_.CreateBitCast(value, b_.getIntNTy(bits_)), held_);
    b_.CreateStore(value, slot(row, column));
  }
  llvm::Value* load(llvm::Value* row, llvm::Value* column) {
    llvm::Value* v = b_.CreateLoad(held_, slot(row, column));
    return bits_ < 32 ? b_.CreateBitCast(b_.CreateTrunc(v, b_.getIntNTy(bits_)), storage_) : v;
  }

 private:
  llvm::Value* slot(llvm::Value* row, llvm::Value* column) {
    llvm::Value* offset = b_.CreateAdd(b_.CreateMul(row, b_.getInt64(kTile + 1)), column);
    return b_.CreateInBoundsGEP(array_->getValueType(), array_, {b_.getInt64(0), offset});
  }
  llvm::IRBuilder<>& b_;
  llvm::Type* storage_;
  unsigned bits_;
  llvm::Type* held_;
  llvm::GlobalVariable* array_;
};

}  // namespace

void ElementEmitter::storeTileElement(const Index& index, const Shape& shape) { storeTileElements({index}, shape); }

void ElementEmitter::storeTileElements(const std::vector<Index>& indices, const Shape& shape) {
  // Every output at every element before any store, as emitSegmentItem does: a result written over
  // a donated input must not be read back by another.
  std::vector<llvm::Value*> linears;
  std::vector<std::vector<llvm::Value*>> values(group_.outputs.size());
  for (const Index& index : indices) {
    linears.push_back(linears.empty() ? linearize(index, shape) : b.CreateAdd(linears[0], i64(static_cast<int64_t>(linears.size()))));
    setCurrent(index, linears.back(), shape);
    for (size_t j = 0; j < group_.outputs.size(); ++j) values[j].push_back(emit(group_.outputs[j], currentIndex_));
  }
  size_t numInputs = group_.inputs.size();
  const auto width = static_cast<unsigned>(indices.size());
  for (size_t j = 0; j < values.size(); ++j) {
    DType t = group_.outputs[j]->type().dtype;
    llvm::Type* storage = storageType(t);
    llvm::Value* ptr = b.CreateInBoundsGEP(storage, buffers_[numInputs + j], linears[0]);
    if (width == 1) {
      b.CreateStore(toStorage(values[j][0], t), ptr);
      continue;
    }
    // Neighbours along the output's innermost axis: one vector store.
    llvm::Value* vector = llvm::PoisonValue::get(llvm::FixedVectorType::get(storage, width));
    for (unsigned q = 0; q < width; ++q) vector = b.CreateInsertElement(vector, toStorage(values[j][q], t), q);
    uint64_t bytes = std::min<uint64_t>(width * storage->getPrimitiveSizeInBits() / 8, bufferAlignment(group_.outputs[j]));
    b.CreateAlignedStore(vector, ptr, llvm::Align(std::min<uint64_t>(bytes, 16)));
  }
  preloaded_.clear();
  currentLinear_ = nullptr;
}

Index ElementEmitter::tileOrigin(const TransposeTile& tile, llvm::Value* item) {
  const auto a = static_cast<size_t>(tile.inputInnerAxis), last = tile.shape.size() - 1;
  Shape grid = tile.shape;
  grid[a] = (grid[a] + kTile - 1) / kTile;
  grid[last] = (grid[last] + kTile - 1) / kTile;
  Index origin = delinearize(item, grid);
  origin[a] = b.CreateMul(origin[a], i64(kTile));
  origin[last] = b.CreateMul(origin[last], i64(kTile));
  return origin;
}

Index ElementEmitter::transposeSource(const TransposeTile& tile, const Index& index) {
  const std::vector<int64_t> perm = tile.transpose->intsAttr("perm");
  Index source(index.size());
  for (size_t d = 0; d < perm.size(); ++d) source[static_cast<size_t>(perm[d])] = index[d];
  return source;
}

void ElementEmitter::emitTileItem(const TransposeTile& tile, llvm::Value* item, llvm::Value* lane) {
  const Shape& shape = tile.shape;
  const size_t a = static_cast<size_t>(tile.inputInnerAxis), last = shape.size() - 1;
  const Index where = tileOrigin(tile, item);
  DType t = tile.stacked->type().dtype;
  llvm::Type* storage = storageType(t);
  // Each thread moves `width` neighbours at once, read as one vector along a (the input's
  // innermost axis) and written as one along the output's: 4 where both axes are a whole number
  // of vectors (so a vector is wholly inside or outside the tensor, and aligned), else 1.
  const uint64_t vectorBytes = std::min<uint64_t>(16, 4 * storage->getPrimitiveSizeInBits() / 8);
  const int64_t width = shape[a] % 4 == 0 && shape[last] % 4 == 0 && bufferAlignment(tile.buffer) >= vectorBytes ? 4 : 1;
  const int64_t threadsPerRow = kTile / width, rowsPerPass = kTile * kTileRows / threadsPerRow;
  llvm::Value* column = b.CreateMul(b.CreateURem(lane, i64(threadsPerRow)), i64(width));
  llvm::Value* rowInPass = b.CreateUDiv(lane, i64(threadsPerRow));
  llvm::Value* firstA = where[a];
  llvm::Value* firstLast = where[last];
  auto outputIndex = [&](llvm::Value* alongA, llvm::Value* alongLast) {
    Index o = where;
    o[a] = alongA;
    o[last] = alongLast;
    return o;
  };
  auto sourceIndex = [&](const Index& o) { return transposeSource(tile, o); };
  auto inside = [&](llvm::Value* alongA, llvm::Value* alongLast) {
    return b.CreateAnd(b.CreateICmpULT(alongA, i64(shape[a])), b.CreateICmpULT(alongLast, i64(shape[last])));
  };
  // tile[l][k]: the element at (firstA + k, firstLast + l).
  SharedTile smem(b, target_, storage, "tile");
  llvm::Value* input = buffers_[static_cast<size_t>(inputIndex_.at(tile.buffer))];
  const Shape& inputShape = tile.input->type().shape;
  // Reads: a warp covers consecutive elements along a, the input's innermost axis.
  for (int64_t r = 0; r < kTile; r += rowsPerPass) {
    llvm::Value* l = b.CreateAdd(rowInPass, i64(r));
    llvm::Value* alongA = b.CreateAdd(firstA, column), *alongLast = b.CreateAdd(firstLast, l);
    ifThen(inside(alongA, alongLast), [&] {
      llvm::Value* ptr = b.CreateInBoundsGEP(storage, input, linearize(sourceIndex(outputIndex(alongA, alongLast)), inputShape));
      if (width == 1) {
        smem.store(l, column, b.CreateLoad(storage, ptr));
        return Values{};
      }
      llvm::Value* vector = target_.loadVector(b, storage, ptr, static_cast<unsigned>(width), vectorBytes);
      for (int64_t q = 0; q < width; ++q)
        smem.store(l, b.CreateAdd(column, i64(q)), b.CreateExtractElement(vector, static_cast<uint64_t>(q)));
      return Values{};
    }, {});
  }
  target_.syncBlock(b);
  // Writes: a warp covers consecutive elements along the output's innermost axis.
  for (int64_t r = 0; r < kTile; r += rowsPerPass) {
    llvm::Value* k = b.CreateAdd(rowInPass, i64(r));
    llvm::Value* alongA = b.CreateAdd(firstA, k), *alongLast = b.CreateAdd(firstLast, column);
    ifThen(inside(alongA, alongLast), [&] {
      std::vector<Index> indices;
      for (int64_t q = 0; q < width; ++q) {
        llvm::Value* l = q ? b.CreateAdd(column, i64(q)) : column;
        indices.push_back(outputIndex(alongA, q ? b.CreateAdd(alongLast, i64(q)) : alongLast));
        preloaded_.push_back({{tile.stacked, sourceIndex(indices.back())}, fromStorage(smem.load(l, k), t)});
      }
      storeTileElements(indices, shape);
      return Values{};
    }, {});
  }
  target_.syncBlock(b);  // the next tile's writes to shared memory wait for this tile's reads
}

void ElementEmitter::emitMatmulTileItem(const MatmulTile& tile, llvm::Value* item, llvm::Value* lane) {
  const Shape& shape = tile.shape;
  const size_t rank = shape.size();
  const int64_t m = shape[rank - 2], n = shape[rank - 1], k = tile.k;
  const Value* a = tile.matmul->operand(0);
  const Value* c = tile.matmul->operand(1);
  const Shape batch = tile.batch(), batchA = tile.operandBatch(0), batchB = tile.operandBatch(1);
  const Index where = matmulBlock(tile, item, kTile, kTile);
  const Index batchIndex(where.begin(), where.end() - 2);
  llvm::Value* tx = b.CreateURem(lane, i64(kTile));
  llvm::Value* ty = b.CreateUDiv(lane, i64(kTile));
  llvm::Value* firstM = b.CreateMul(where[rank - 2], i64(kTile));
  llvm::Value* firstN = b.CreateMul(where[rank - 1], i64(kTile));
  const bool ints = isInt(a->type().dtype);
  DType at = a->type().dtype, ct = c->type().dtype;
  SharedTile tileA(b, target_, storageType(at), "tile_a"), tileB(b, target_, storageType(ct), "tile_b");
  // Element (row, col) of operand i's matrix as stored (transposed: the operand's (col, row)), or
  // zero outside it.
  auto fetch = [&](size_t i, const Shape& operandBatch, llvm::Value* row, llvm::Value* col) {
    const Value* stored = tile.stored[i];
    const Shape& shape = stored->type().shape;
    llvm::Value* buffer = buffers_[static_cast<size_t>(inputIndex_.at(stored))];
    llvm::Type* storage = storageType(stored->type().dtype);
    llvm::Value* in = b.CreateAnd(b.CreateICmpULT(row, i64(shape[shape.size() - 2])), b.CreateICmpULT(col, i64(shape.back())));
    return ifThen(in, [&] {
      Index index = broadcastIndex(batchIndex, operandBatch, batch);
      index.push_back(row);
      index.push_back(col);
      llvm::Value* ptr = b.CreateInBoundsGEP(storage, buffer, linearize(index, shape));
      return Values{b.CreateLoad(storage, ptr)};
    }, {llvm::Constant::getNullValue(storage)})[0];
  };
  // Operand i's tile element (r, tx) of the tile at (firstRow, firstCol) in the operand: a warp
  // reads 32 neighbours of the stored matrix either way; stored transposed, it reads the stored
  // (firstCol + r, firstRow + tx) and writes it to the tile at (tx, r), the padded tile's other
  // direction, so the tile always holds the operand untransposed.
  auto fill = [&](size_t i, SharedTile& to, const Shape& operandBatch, llvm::Value* firstRow, llvm::Value* firstCol,
                  llvm::Value* r) {
    if (tile.transposed[i]) to.store(tx, r, fetch(i, operandBatch, b.CreateAdd(firstCol, r), b.CreateAdd(firstRow, tx)));
    else to.store(r, tx, fetch(i, operandBatch, b.CreateAdd(firstRow, r), b.CreateAdd(firstCol, tx)));
  };
  const int64_t rowsPerThread = kTile / kTileRows;
  Values zeros(static_cast<size_t>(rowsPerThread), ints ? i64(0) : f64(0.0));
  // Each thread: outputs (firstM + ty + 8i, firstN + tx), i < 4, summed over k in order.
  Values sums = loop((k + kTile - 1) / kTile, zeros, [&](llvm::Value* step, const Values& acc) {
    llvm::Value* firstK = b.CreateMul(step, i64(kTile));
    for (int64_t r = 0; r < kTile; r += kTileRows) {
      llvm::Value* row = b.CreateAdd(ty, i64(r));
      // A[firstM + row][firstK + tx] and B[firstK + row][firstN + tx]: a warp reads 32 neighbours.
      fill(0, tileA, batchA, firstM, firstK, row);
      fill(1, tileB, batchB, firstK, firstN, row);
    }
    target_.syncBlock(b);
    // Past K both tiles hold zeros, which add nothing (0 * 0).
    Values inner = loop(kTile, acc, [&](llvm::Value* p, const Values& s) {
      llvm::Value* y = fromStorage(tileB.load(p, tx), ct);
      Values next;
      for (int64_t i = 0; i < rowsPerThread; ++i) {
        llvm::Value* x = fromStorage(tileA.load(b.CreateAdd(ty, i64(i * kTileRows)), p), at);
        llvm::Value* si = s[static_cast<size_t>(i)];
        next.push_back(ints ? multiplyAdd(si, toI64(x, at), toI64(y, ct)) : multiplyAdd(si, toDouble(x), toDouble(y)));
      }
      return next;
    });
    target_.syncBlock(b);  // the next step's tiles wait for every thread's reads of these
    return inner;
  });
  // The epilogue: the group's outputs at each of the thread's elements, the matmul's value there
  // being the sum (found by emit through the preloaded values).
  DType t = tile.matmul->result()->type().dtype;
  llvm::Value* column = b.CreateAdd(firstN, tx);
  for (int64_t i = 0; i < rowsPerThread; ++i) {
    llvm::Value* row = b.CreateAdd(firstM, b.CreateAdd(ty, i64(i * kTileRows)));
    llvm::Value* sum = sums[static_cast<size_t>(i)];
    ifThen(b.CreateAnd(b.CreateICmpULT(row, i64(m)), b.CreateICmpULT(column, i64(n))), [&] {
      Index index = batchIndex;
      index.push_back(row);
      index.push_back(column);
      llvm::Value* value = contractionResult(sum, t);
      preloaded_.push_back({{tile.matmul->result(), index}, value});
      storeTileElement(index, shape);
      return Values{};
    }, {});
  }
}

Index ElementEmitter::matmulBlock(const MatmulTile& tile, llvm::Value* item, int64_t rows, int64_t columns) {
  const Shape& shape = tile.shape;
  Shape grid = tile.batch();
  grid.push_back((shape[shape.size() - 2] + rows - 1) / rows);
  grid.push_back((shape.back() + columns - 1) / columns);
  return delinearize(item, grid);
}

void ElementEmitter::emitCpuMatmulItem(const MatmulTile& tile, llvm::Value* item) {
  const Shape& shape = tile.shape;
  const size_t rank = shape.size();
  const int64_t m = shape[rank - 2], n = shape[rank - 1], k = tile.k;
  const int64_t rowsPerItem = cpuMatmulItemRows(tile), columnsPerItem = kCpuMatmulColumns;
  const Value* a = tile.matmul->operand(0);
  const Value* c = tile.matmul->operand(1);
  const Shape batch = tile.batch(), batchA = tile.operandBatch(0), batchB = tile.operandBatch(1);
  const Index where = matmulBlock(tile, item, rowsPerItem, columnsPerItem);
  const Index batchIndex(where.begin(), where.end() - 2);
  llvm::Value* firstRow = b.CreateMul(where[rank - 2], i64(rowsPerItem), "row.first", true, true);
  llvm::Value* rows = atMost(b.CreateSub(i64(m), firstRow), rowsPerItem);
  llvm::Value* first = b.CreateMul(where[rank - 1], i64(columnsPerItem), "column.first", true, true);
  llvm::Value* count = atMost(b.CreateSub(i64(n), first), columnsPerItem);
  // Where element (r, col) of operand i's matrix is stored (transposed: at (col, r)).
  auto address = [&](size_t i, const Shape& operandBatch, llvm::Value* r, llvm::Value* col) {
    const Value* stored = tile.stored[i];
    Index index = broadcastIndex(batchIndex, operandBatch, batch);
    index.push_back(tile.transposed[i] ? col : r);
    index.push_back(tile.transposed[i] ? r : col);
    llvm::Value* buffer = buffers_[static_cast<size_t>(inputIndex_.at(stored))];
    return b.CreateInBoundsGEP(storageType(stored->type().dtype), buffer, linearize(index, stored->type().shape));
  };
  auto element = [&](size_t i, const Shape& operandBatch, llvm::Value* r, llvm::Value* col) {
    DType t = tile.stored[i]->type().dtype;
    return fromStorage(b.CreateLoad(storageType(t), address(i, operandBatch, r, col)), t);
  };
  const bool ints = isInt(a->type().dtype);
  DType at = a->type().dtype, ct = c->type().dtype;
  llvm::Type* accType = ints ? b.getInt64Ty() : b.getDoubleTy();
  auto widen = [&](llvm::Value* v, DType t) { return ints ? toI64(v, t) : toDouble(v); };
  // The accumulators, rowsPerItem rows of columnsPerItem, in the kernel's entry block (a fixed
  // stack slot), zeroed.
  llvm::Value* sums = stackArray(accType, rowsPerItem * columnsPerItem, "matmul.sums");
  auto slot = [&](llvm::Value* r, llvm::Value* q) {
    return b.CreateInBoundsGEP(accType, sums, b.CreateAdd(b.CreateMul(r, i64(columnsPerItem)), q));
  };
  loop(rowsPerItem * columnsPerItem, {}, [&](llvm::Value* q, const Values&) {
    b.CreateStore(llvm::Constant::getNullValue(accType), b.CreateInBoundsGEP(accType, sums, q));
    return Values{};
  });
  // acc[r][q] += A[firstRow + r][p] * B[p][first + q] for the rows `rowList`: each output's sum
  // runs in k order, as the interpreter's; the columns are independent lanes, and every B element
  // loaded serves all the rows.
  auto accumulate = [&](const std::vector<llvm::Value*>& rowList) {
    loop(k, {}, [&](llvm::Value* p, const Values&) {
      std::vector<llvm::Value*> xs;
      for (llvm::Value* r : rowList) xs.push_back(widen(element(0, batchA, b.CreateAdd(firstRow, r), p), at));
      loop(count, {}, [&](llvm::Value* q, const Values&) {
        llvm::Value* y = widen(element(1, batchB, p, b.CreateAdd(first, q)), ct);
        for (size_t i = 0; i < rowList.size(); ++i) {
          llvm::Value* sum = b.CreateLoad(accType, slot(rowList[i], q));
          b.CreateStore(multiplyAdd(sum, xs[i], y), slot(rowList[i], q));
        }
        return Values{};
      });
      return Values{};
    });
  };
  // `body` for r in [from, to) (from <= to; loop() wants a count of at least one).
  auto forRows = [&](llvm::Value* from, llvm::Value* to, const std::function<void(llvm::Value*)>& body) {
    ifThen(b.CreateICmpSLT(from, to), [&] {
      loop(b.CreateSub(to, from), {}, [&](llvm::Value* r, const Values&) {
        body(b.CreateAdd(from, r));
        return Values{};
      });
      return Values{};
    }, {});
  };
  // The item's whole groups of kCpuMatmulMicroRows rows, and where the rest begins.
  constexpr int64_t microRows = kCpuMatmulMicroRows;
  llvm::Value* microBlocks = b.CreateUDiv(rows, i64(microRows));
  llvm::Value* restFrom = b.CreateMul(microBlocks, i64(microRows));
  // Whole columns: kVectors vectors of `lanes` at a time, and K in blocks of kCpuMatmulPackedK
  // rows of B, whose columns there are first packed, widened, into a stack strip (B's rows are N
  // elements apart, and at a power of two bytes they share the L1 and L2 cache sets: B was read
  // from L3 for every 4 rows); then each whole group of 4 rows runs over the strip with its 4 x
  // kVectors vector sums in registers, loaded from the stack sums before the block and stored
  // after it. Every output's sum still runs in k order: the same products and sums, the same bits.
  constexpr int64_t kVectors = 2;
  const int64_t lanes = std::max(2, target_.floatSumLanes() / 2);  // f64 or i64 lanes of a vector
  const int64_t chunk = kVectors * lanes;
  auto* vectorType = llvm::FixedVectorType::get(accType, static_cast<unsigned>(lanes));
  const int64_t packedK = std::max<int64_t>(1, std::min(k, kCpuMatmulPackedK));
  // Floats are packed widened (f16 and bf16 then convert once per strip, not per use); integers
  // as stored, so that LLVM still sees the products' operands sign- or zero-extended and
  // multiplies them in one instruction (AVX2 has no 64-bit vector multiply).
  DType bt = tile.stored[1]->type().dtype;
  llvm::Type* bStorage = storageType(bt);
  auto* packedType = ints ? llvm::FixedVectorType::get(bStorage, static_cast<unsigned>(lanes)) : vectorType;
  llvm::Value* packed = stackArray(packedType, packedK * kVectors, "matmul.packed");
  auto packedAt = [&](llvm::Value* p, int64_t v) {
    return b.CreateInBoundsGEP(packedType, packed, b.CreateAdd(b.CreateMul(p, i64(kVectors)), i64(v)));
  };
  const llvm::Align sumAlign(8);
  ifThen(b.CreateAnd(b.CreateICmpEQ(count, i64(columnsPerItem)), b.CreateICmpSGT(i64(k), i64(0))), [&] {
    // B's `lanes` neighbouring elements of row p from column `col`, as packed: one vector load, or
    // `lanes` loads where B is stored transposed.
    auto widened = [&](llvm::Value* stored) { return widen(fromStorage(stored, bt), bt); };
    auto rowOfB = [&](llvm::Value* p, llvm::Value* col) {
      llvm::Value* v = llvm::PoisonValue::get(llvm::FixedVectorType::get(bStorage, static_cast<unsigned>(lanes)));
      if (!tile.transposed[1]) {
        const llvm::Align align(bStorage->getPrimitiveSizeInBits() / 8);
        v = b.CreateAlignedLoad(v->getType(), address(1, batchB, p, col), align);
      } else {
        for (int64_t q = 0; q < lanes; ++q)
          v = b.CreateInsertElement(v, b.CreateLoad(bStorage, address(1, batchB, p, b.CreateAdd(col, i64(q)))), q);
      }
      return ints ? v : widened(v);
    };
    const int64_t chunks = columnsPerItem / chunk, blocks = (k + packedK - 1) / packedK;
    loop(chunks, {}, [&](llvm::Value* chunkIndex, const Values&) {
      llvm::Value* q0 = b.CreateMul(chunkIndex, i64(chunk));
      loop(blocks, {}, [&](llvm::Value* block, const Values&) {
        llvm::Value* p0 = b.CreateMul(block, i64(packedK));
        llvm::Value* depth = atMost(b.CreateSub(i64(k), p0), packedK);
        loop(depth, {}, [&](llvm::Value* p, const Values&) {
          for (int64_t v = 0; v < kVectors; ++v)
            b.CreateStore(rowOfB(b.CreateAdd(p0, p), b.CreateAdd(first, b.CreateAdd(q0, i64(v * lanes)))), packedAt(p, v));
          return Values{};
        });
        forRows(i64(0), microBlocks, [&](llvm::Value* micro) {
          llvm::Value* r0 = b.CreateMul(micro, i64(microRows));
          auto sumAt = [&](int64_t r, int64_t v) { return slot(b.CreateAdd(r0, i64(r)), b.CreateAdd(q0, i64(v * lanes))); };
          Values acc;
          for (int64_t r = 0; r < microRows; ++r)
            for (int64_t v = 0; v < kVectors; ++v) acc.push_back(b.CreateAlignedLoad(vectorType, sumAt(r, v), sumAlign));
          Values sums = loop(depth, acc, [&](llvm::Value* p, const Values& carried) {
            std::vector<llvm::Value*> ys;
            for (int64_t v = 0; v < kVectors; ++v) {
              llvm::Value* y = b.CreateLoad(packedType, packedAt(p, v));
              ys.push_back(ints ? widened(y) : y);
            }
            Values next;
            for (int64_t r = 0; r < microRows; ++r) {
              llvm::Value* row = b.CreateAdd(firstRow, b.CreateAdd(r0, i64(r)));
              llvm::Value* x = b.CreateVectorSplat(static_cast<unsigned>(lanes), widen(element(0, batchA, row, b.CreateAdd(p0, p)), at));
              for (int64_t v = 0; v < kVectors; ++v) {
                llvm::Value* sum = carried[static_cast<size_t>(r * kVectors + v)];
                llvm::Value* y = ys[static_cast<size_t>(v)];
                next.push_back(multiplyAdd(sum, x, y));
              }
            }
            return next;
          });
          for (int64_t r = 0; r < microRows; ++r)
            for (int64_t v = 0; v < kVectors; ++v) b.CreateAlignedStore(sums[static_cast<size_t>(r * kVectors + v)], sumAt(r, v), sumAlign);
        });
        return Values{};
      });
      if (blocks > 1) keepRolled(lastLoopLatch());
      return Values{};
    });
    if (chunks > 1) keepRolled(lastLoopLatch());
    return Values{};
  }, {});
  // Fewer columns (the last block of them): groups of 4 rows share each B load.
  ifThen(b.CreateICmpNE(count, i64(columnsPerItem)), [&] {
    forRows(i64(0), microBlocks, [&](llvm::Value* micro) {
      llvm::Value* r0 = b.CreateMul(micro, i64(microRows));
      std::vector<llvm::Value*> group;
      for (int64_t r = 0; r < microRows; ++r) group.push_back(b.CreateAdd(r0, i64(r)));
      accumulate(group);
    });
    return Values{};
  }, {});
  // Either way, the rows past the last whole group one at a time.
  forRows(restFrom, rows, [&](llvm::Value* r) { accumulate({r}); });
  storeSumBlock(*tile.matmul, sums, accType, columnsPerItem, rows, count, [&](llvm::Value* r, llvm::Value* q) {
    Index index = batchIndex;
    index.push_back(b.CreateAdd(firstRow, r));
    index.push_back(b.CreateAdd(first, q));
    return index;
  }, shape);
}

void ElementEmitter::storeSumBlock(const Op& hero, llvm::Value* sums, llvm::Type* accType, int64_t stride, llvm::Value* rows,
                                   llvm::Value* count, const std::function<Index(llvm::Value*, llvm::Value*)>& indexOf,
                                   const Shape& shape) {
  DType t = hero.result()->type().dtype;
  loop(rows, {}, [&](llvm::Value* r, const Values&) {
    loop(count, {}, [&](llvm::Value* q, const Values&) {
      Index index = indexOf(r, q);
      llvm::Value* sum = b.CreateLoad(accType, b.CreateInBoundsGEP(accType, sums, b.CreateAdd(b.CreateMul(r, i64(stride)), q)));
      preloaded_.push_back({{hero.result(), index}, contractionResult(sum, t)});
      storeTileElement(index, shape);
      return Values{};
    });
    return Values{};
  });
}

Index ElementEmitter::rowValueIndex(const Index& rowIndex, const Shape& shape) {
  Index index = rowIndex;
  while (index.size() < shape.size()) index.push_back(i64(0));
  return index;
}

int64_t ElementEmitter::rowElementsPerStep() const {
  // Several lanes per row (the GPU): each lane takes neighbouring elements per step (as many as
  // fill 128 bits, else 4), which the backend merges into one vector load, when the row is a whole
  // number of them and long enough to give every lane some (a row of 64 on a warp's 32 lanes
  // keeps one element each).
  int64_t n = group_.rowLength(), lanes = target_.rowLanes(group_);
  if (lanes == 1) return 1;
  for (int64_t width : {vectorWidth(group_, target_), int64_t{4}})
    if (n % width == 0 && n >= width * lanes) return width;
  return 1;
}

Values ElementEmitter::mathLoop(int64_t count, Values init, const LoopBody& body) {
  int64_t mathBefore = target_.inlineMathEmitted();
  Values out = loop(count, std::move(init), body);
  if (count > 1 && lastLoopLatch())
    if (int interleave = target_.loopInterleave(count, mathBefore)) setLoopHints(lastLoopLatch(), 0, interleave);
  return out;
}

Values ElementEmitter::rowSteps(Values init, const LoopBody& body) {
  int64_t n = group_.rowLength(), span = target_.rowLanes(group_) * rowElementsPerStep();
  int64_t steps = (n + span - 1) / span;
  if (n % span != 0 || steps > kUnrolledRowSteps) {
    // A pass that computes an inline exp or tanh (a softmax's output over rows too long to keep
    // its exponentials) takes several vectors an iteration on the CPU, as the sums do.
    return mathLoop(steps, std::move(init), body);
  }
  for (int64_t s = 0; s < steps; ++s) init = body(i64(s), init);
  return init;
}

void ElementEmitter::forEachInRow(llvm::Value* lane, const std::function<void(llvm::Value* k)>& body) {
  int64_t n = group_.rowLength(), lanes = target_.rowLanes(group_), width = rowElementsPerStep();
  int64_t span = lanes * width;
  rowSteps({}, [&](llvm::Value* iv, const Values&) {
    llvm::Value* first = lanes == 1 ? iv : b.CreateMul(b.CreateAdd(lane, b.CreateMul(iv, i64(lanes))), i64(width));
    auto all = [&] {
      for (int64_t j = 0; j < width; ++j) body(j ? b.CreateAdd(first, i64(j)) : first);
      return Values{};
    };
    // The row is a whole number of steps' widths, so a step is wholly inside or outside it.
    if (n % span == 0) all();
    else ifThen(b.CreateICmpULT(first, i64(n)), all, {});
    return Values{};
  });
}

namespace {

// A value's bits in an i64 (the partials' slots are 64 bits wide), and back.
llvm::Value* toBits(llvm::IRBuilder<>& b, llvm::Value* v) {
  unsigned bits = v->getType()->getPrimitiveSizeInBits();
  llvm::Value* asInt = b.CreateBitCast(v, b.getIntNTy(bits));
  return bits == 64 ? asInt : b.CreateZExt(asInt, b.getInt64Ty());
}

llvm::Value* fromBits(llvm::IRBuilder<>& b, llvm::Value* bits, llvm::Type* type) {
  unsigned width = type->getPrimitiveSizeInBits();
  return b.CreateBitCast(width == 64 ? bits : b.CreateTrunc(bits, b.getIntNTy(width)), type);
}

}  // namespace

namespace {

// x = a * b in double of two values widened from f32, f16 or bf16 (24 significant bits at most):
// the product is exact (48 bits of 53), so adding it in one fused step gives the same sum. The
// factors, or nothing.
std::optional<std::pair<llvm::Value*, llvm::Value*>> exactWidenedProduct(llvm::Value* x) {
  auto* product = llvm::dyn_cast<llvm::BinaryOperator>(x);
  if (!product || product->getOpcode() != llvm::Instruction::FMul || !x->getType()->getScalarType()->isDoubleTy())
    return std::nullopt;
  auto narrow = [](llvm::Value* v) {
    auto* ext = llvm::dyn_cast<llvm::FPExtInst>(v);
    return ext && ext->getSrcTy()->getScalarType()->getFPMantissaWidth() <= 24;
  };
  if (!narrow(product->getOperand(0)) || !narrow(product->getOperand(1))) return std::nullopt;
  return std::make_pair(product->getOperand(0), product->getOperand(1));
}

}  // namespace

llvm::Value* ElementEmitter::accumulate(llvm::Value* sum, llvm::Value* x) {
  // A product of widened values (matvec-as-rows' rows) adds as one fmuladd: the same bits, one
  // instruction fewer per vector (f32[4096,4096] x [4096]: 1.95-2.26 -> 1.84-2.07 ms, better in
  // five of six alternations on the 2-core Sapphire Rapids).
  llvm::Value* next;
  if (auto factors = exactWidenedProduct(x))
    next = b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {sum->getType()}, {factors->first, factors->second, sum});
  else
    next = b.CreateFAdd(sum, x);
  if (auto* add = llvm::dyn_cast<llvm::Instruction>(next); add && target_.reassociatesSums()) add->setHasAllowReassoc(true);
  return next;
}

llvm::Value* ElementEmitter::multiplyAdd(llvm::Value* sum, llvm::Value* x, llvm::Value* y) {
  llvm::Type* type = sum->getType();
  if (type->isIntOrIntVectorTy()) return b.CreateAdd(sum, b.CreateMul(x, y));
  KILN_INTERNAL_CHECK(type->getScalarType()->isDoubleTy(), "contractions sum floats in double");
  return b.CreateIntrinsic(llvm::Intrinsic::fma, {type}, {x, y, sum});
}

Values ElementEmitter::combineWarps(llvm::Value* lane, int64_t lanes, const Values& values,
                                    const std::function<Values(const Values&, const Values&)>& combine) {
  KILN_INTERNAL_CHECK(lanes > kWarpSize && lanes % kWarpSize == 0, "combineWarps needs whole warps, more than one");
  const uint64_t warps = static_cast<uint64_t>(lanes / kWarpSize);
  llvm::Function* kernel = b.GetInsertBlock()->getParent();
  // partials[v * warps + w]: value v of warp w, as 64 bits.
  llvm::GlobalVariable* partials = target_.sharedArray(b, b.getInt64Ty(), values.size() * warps, "partials");
  auto slot = [&](size_t v, llvm::Value* warp) {
    llvm::Value* index = b.CreateAdd(i64(static_cast<int64_t>(v * warps)), warp);
    return b.CreateInBoundsGEP(partials->getValueType(), partials, {i64(0), index});
  };
  auto* write = llvm::BasicBlock::Create(ctx(), "warps.write", kernel);
  auto* written = llvm::BasicBlock::Create(ctx(), "warps.written", kernel);
  llvm::Value* warp = b.CreateUDiv(lane, i64(kWarpSize));
  b.CreateCondBr(b.CreateICmpEQ(b.CreateURem(lane, i64(kWarpSize)), i64(0)), write, written);
  b.SetInsertPoint(write);
  for (size_t v = 0; v < values.size(); ++v) b.CreateStore(toBits(b, values[v]), slot(v, warp));
  b.CreateBr(written);
  b.SetInsertPoint(written);
  target_.syncBlock(b);
  auto read = [&](uint64_t w) {
    Values out;
    for (size_t v = 0; v < values.size(); ++v)
      out.push_back(fromBits(b, b.CreateLoad(b.getInt64Ty(), slot(v, i64(static_cast<int64_t>(w)))), values[v]->getType()));
    return out;
  };
  Values total = read(0);
  for (uint64_t w = 1; w < warps; ++w) total = combine(total, read(w));
  target_.syncBlock(b);
  return total;
}

Values ElementEmitter::reduceRow(llvm::Value* lane, const Values& init,
                                 const std::function<Values(llvm::Value* k, const Values&)>& add,
                                 const std::function<Values(const Values&, const Values&)>& combine) {
  int64_t n = group_.rowLength(), lanes = target_.rowLanes(group_), width = rowElementsPerStep();
  int64_t span = lanes * width;
  Values acc = rowSteps(init, [&](llvm::Value* iv, const Values& c) {
    llvm::Value* first = lanes == 1 ? iv : b.CreateMul(b.CreateAdd(lane, b.CreateMul(iv, i64(lanes))), i64(width));
    auto all = [&] {
      Values sum = c;
      for (int64_t j = 0; j < width; ++j) sum = add(j ? b.CreateAdd(first, i64(j)) : first, sum);
      return sum;
    };
    if (n % span == 0) return all();
    return ifThen(b.CreateICmpULT(first, i64(n)), all, c);
  });
  // Butterfly within each warp: after log2 steps every lane holds its warp's combination.
  for (int64_t mask = std::min<int64_t>(lanes, kWarpSize) / 2; mask >= 1; mask /= 2) {
    Values other;
    for (llvm::Value* v : acc) other.push_back(target_.shuffleXor(b, v, static_cast<int>(mask)));
    acc = combine(acc, other);
  }
  // A row wider than a warp: the warps' values, in warp order.
  if (lanes > kWarpSize) acc = combineWarps(lane, lanes, acc, combine);
  return acc;
}

llvm::Value* ElementEmitter::rowScratchFor(const Value* operand) {
  // Worth keeping: computed in the kernel (an input is a load either way), at every element of
  // the row (not broadcast along it), and the row short enough for the stack.
  int64_t n = group_.rowLength();
  if (rowBlock_ || inputIndex_.count(operand) || !operand->definingOp() || n > kRowScratchElements ||
      !group_.spansRows(operand))
    return nullptr;
  for (const auto& [v, scratch] : rowScratch_)
    if (v == operand) return nullptr;  // kept already: the first reduction's loop stores it
  llvm::Value* scratch = stackArray(computeType(operand->type().dtype), n, "row.scratch");
  rowScratch_.push_back({operand, scratch});
  return scratch;
}

std::vector<ElementEmitter::RowInvariantLoads> ElementEmitter::loadRowInvariantInputs(
    llvm::Value* lane, const std::function<Index(llvm::Value*)>& fullIndex, const Shape& full) {
  std::vector<RowInvariantLoads> invariant;
  int64_t n = group_.rowLength(), span = target_.rowLanes(group_) * rowElementsPerStep();
  // Only where the lanes share rows (the GPU) and the passes are straight-line code, whose every
  // pass visits the same elements in the same order.
  if (target_.rowLanes(group_) == 1 || n % span != 0 || n / span > kUnrolledRowSteps) return invariant;
  const int64_t perLane = n / target_.rowLanes(group_);
  const size_t rowRank = group_.rows.size();
  for (const Value* v : group_.inputs) {
    const Shape& from = v->type().shape;
    // Broadcast along every row axis (absent or 1 there), whole along the inner ones.
    bool invariantAlongRows = from.size() <= full.size() && v->type().numElements() > 0;
    for (size_t d = 0; invariantAlongRows && d < from.size(); ++d) {
      size_t at = full.size() - from.size() + d;
      invariantAlongRows = at < rowRank ? from[d] == 1 : from[d] == full[at];
    }
    bool readElementwise = false;
    for (const Use& use : v->uses())
      readElementwise |= std::find(group_.ops.begin(), group_.ops.end(), use.user) != group_.ops.end() &&
                         use.user->info().cls == OpClass::Elementwise && use.user->result()->type().shape == full;
    if (!invariantAlongRows || !readElementwise) continue;
    // Registers: a lane keeps n / lanes elements of each such input for the whole kernel.
    if (static_cast<int64_t>(invariant.size() + 1) * perLane > kRowInvariantRegisters) break;
    invariant.push_back({v, {}});
  }
  if (invariant.empty()) return invariant;
  forEachInRow(lane, [&](llvm::Value* k) {
    Index index = fullIndex(k);
    for (RowInvariantLoads& loads : invariant)
      loads.values.push_back(emit(loads.input, broadcastIndex(index, loads.input->type().shape, full)));
  });
  return invariant;
}

void ElementEmitter::emitRow(llvm::Value* row, llvm::Value* lane) {
  rowCache_.clear();  // a row block's last rows come after its lanes' code (emitRowBlock)
  Index rowIndex = delinearize(row, group_.rows);
  int64_t n = group_.rowLength();
  auto fullIndex = [&](llvm::Value* k) {
    Index index = rowIndex;
    Index innerIndex = delinearize(k, group_.inner);
    index.insert(index.end(), innerIndex.begin(), innerIndex.end());
    return index;
  };
  Shape full = group_.rows;
  full.insert(full.end(), group_.inner.begin(), group_.inner.end());
  std::vector<RowInvariantLoads> invariant = loadRowInvariantInputs(lane, fullIndex, full);
  // The CPU's second pass over the row also fetches the next row's inputs (row_prefetch.h).
  std::optional<RowPrefetch> prefetch = target_.prefetchesNextRow() && !rowBlock_ ? rowPrefetchFor(group_) : std::nullopt;
  if (rowBlock_) rowBlock_->rowIndex = rowIndex;
  int passes = 0;
  auto prefetchingPass = [&] { return ++passes == 2 && prefetch; };
  // The row values, in program order, so each finds the ones it reads already cached.
  for (const Op* op : group_.rowOps) {
    const Value* v = op->result();
    llvm::Value* value;
    bool argReduction = op->kind() == OpKind::Argmax || op->kind() == OpKind::Argmin;
    if (argReduction && target_.rowLanes(group_) == 1) {
      // One lane per row (the CPU): the sequential scan from element 0, as a loop kernel's.
      ++passes;
      value = emit(v, rowValueIndex(rowIndex, v->type().shape));
    } else if (argReduction) {
      auto better = [&](const Values& a, const Values& c) { return argBetter(*this, *op, a, c); };
      Values best = reduceRow(
          lane, argIdentity(*this, *op, n),
          [&](llvm::Value* k, const Values& c) { return better(c, argCandidate(*this, *op, k, emit(op->operand(0), fullIndex(k)))); },
          better);
      value = best[0];
    } else if (op->info().cls == OpClass::Reduction) {
      Accumulation acc = accumulationFor(*this, *op, n);
      auto element = [&](llvm::Value* k) { return emit(op->operand(0), fullIndex(k)); };
      llvm::Value* total;
      if (target_.rowLanes(group_) == 1) {
        auto elementAt = [&](const Index& inner) {
          Index index = rowIndex;
          index.insert(index.end(), inner.begin(), inner.end());
          return emit(op->operand(0), index);
        };
        total = reduceRowOnOneLane(*op, acc, row, prefetchingPass() ? &*prefetch : nullptr, element, elementAt);
      } else {
        total = reduceRow(
            lane, {acc.init}, [&](llvm::Value* k, const Values& c) { return Values{acc.add(c[0], element(k))}; },
            [&](const Values& x, const Values& y) { return Values{acc.combine(x[0], y[0])}; })[0];
      }
      value = roundTo(acc.finish(total), v->type().dtype);
    } else {
      value = emit(v, rowValueIndex(rowIndex, v->type().shape));
    }
    rowCache_[v] = value;
  }
  std::vector<size_t> fullOutputs, rowOutputs;
  for (size_t k = 0; k < group_.outputs.size(); ++k)
    (group_.spansRows(group_.outputs[k]) ? fullOutputs : rowOutputs).push_back(k);
  if (!rowOutputs.empty()) {
    ifThen(b.CreateICmpEQ(lane, i64(0)), [&] {
      for (size_t k : rowOutputs) {
        const Value* out = group_.outputs[k];
        storeOutput(k, row, emit(out, rowValueIndex(rowIndex, out->type().shape)));
      }
      return Values{};
    }, {});
  }
  if (fullOutputs.empty()) return;
  size_t step = 0;  // the how-manieth element of this lane's share: forEachInRow's order
  auto storeOutputs = [&](llvm::Value* k) {
    llvm::Value* linear = b.CreateAdd(b.CreateMul(row, i64(n)), k);
    Index index = fullIndex(k);
    setCurrent(index, linear, full);
    size_t preloaded = preloaded_.size();
    for (const RowInvariantLoads& loads : invariant)
      preloaded_.push_back({{loads.input, broadcastIndex(index, loads.input->type().shape, full)}, loads.values[step]});
    ++step;
    for (const auto& [v, scratch] : rowScratch_) {
      llvm::Type* type = computeType(v->type().dtype);
      preloaded_.push_back({{v, index}, b.CreateLoad(type, b.CreateInBoundsGEP(type, scratch, k))});
    }
    for (size_t k2 : fullOutputs) {
      llvm::Value* value = emit(group_.outputs[k2], currentIndex_);
      if (llvm::Value* slot = rowBlock_ ? rowBlockSlot(group_.outputs[k2], k) : nullptr)
        b.CreateStore(toStorage(value, group_.outputs[k2]->type().dtype), slot);
      else
        storeOutput(k2, linear, value);
    }
    preloaded_.resize(preloaded);
  };
  if (prefetchingPass()) {
    passPrefetchingNextRow(*prefetch, row, {}, [&](llvm::Value* first, int64_t count, const Values&) {
      return mathLoop(count, {}, [&](llvm::Value* k, const Values&) {
        storeOutputs(b.CreateAdd(first, k));
        return Values{};
      });
    });
  } else {
    forEachInRow(lane, storeOutputs);
  }
  currentLinear_ = nullptr;
}

llvm::Value* ElementEmitter::reduceRowOnOneLane(const Op& op, const Accumulation& acc, llvm::Value* row,
                                               const RowPrefetch* prefetch,
                                               const std::function<llvm::Value*(llvm::Value* k)>& element,
                                               const std::function<llvm::Value*(const Index& inner)>& elementAt) {
  const Value* operand = op.operand(0);
  llvm::Value* scratch = rowScratchFor(operand);
  llvm::Type* type = computeType(operand->type().dtype);
  auto kept = [&](llvm::Value* k) {
    llvm::Value* x = element(k);
    if (scratch) b.CreateStore(x, b.CreateInBoundsGEP(type, scratch, k));
    return x;
  };
  // An operand of expensive math (softmax's exp) is computed and kept in a loop of its own, then
  // summed from the stack: in one loop, its chains (four vectors of them an iteration:
  // loop_hints.h) and the sum's double accumulators (eight vectors) outgrow AVX2's 16 registers,
  // and the loop spilled and reloaded them. Cheap operands (a layer norm's squared deviations)
  // stay in one loop: kept apart they only add a pass over the stack (0.80 -> 1.0 ms over
  // f32[2048,2048]).
  bool apart = scratch && computesExpensiveMath(operand);
  // A row of several dims whose last is long (a split sum's chunk of [128,1024]) sums a loop per
  // run of its last dim (sumInnerRuns), not one loop over the flattened row: where the runs are
  // whole vectors, or long enough that their remainders cost little. Short uneven runs stay one
  // loop (a batch norm's [56,56] rows: 56 is 3.5 vectors, and a loop per run took 2.5x as long),
  // where LLVM folds k / 56 * 56 + k % 56 back into k.
  const Shape& inner = group_.inner;
  const int64_t lanes = std::max(1, target_.floatSumLanes());
  const int64_t last = inner.empty() ? 0 : inner.back();
  bool nestsRow = inner.size() > 1 && (last % lanes == 0 ? last >= 2 * lanes : last >= 8 * lanes);
  auto sumRange = [&](llvm::Value* first, int64_t count, llvm::Value* init) {
    auto at = [&](llvm::Value* k) { return first ? b.CreateAdd(first, k) : k; };
    if (!apart && !first && nestsRow) return sumInnerRuns(acc, init, scratch, type, elementAt);
    if (!apart) return accumulateRun(acc, init, count, [&](llvm::Value* k) { return kept(at(k)); });
    // As wide as the sum's vectors and, in short rows of two vectors or more, kept rolled until
    // vectorised, as the sum's loop is (log_softmax over rows of 32 f32: 2.55 -> 2.31 ms; unrolled
    // whole first, 2.79). Rows of fewer LLVM unrolls whole and widens as straight-line code (rows of
    // 10: 0.74 ms so, 1.0 kept rolled).
    int64_t mathBefore = target_.inlineMathEmitted();
    // At the width of the floats summed: a split sum's f32 elements cast to f64 (summedFloats
    // F32) are computed 16 wide, as an f32 sum's are.
    bool doubles = acc.summedFloats ? *acc.summedFloats == DType::F64 : type->isDoubleTy();
    int lanes = target_.floatSumLanes() / (doubles ? 2 : 1);
    if (!first && nestsRow) {
      // A row of several dims: computed into the stack a run of the last dim at a time, as
      // sumInnerRuns sums (consecutive loads; over the flattened row they were gathers).
      forEachInnerRun({}, [&](const Index& run, llvm::Value* runStart, const Values&) {
        loop(last, {}, [&](llvm::Value* j, const Values&) {
          b.CreateStore(elementAt(withLast(run, j)), b.CreateInBoundsGEP(type, scratch, b.CreateAdd(runStart, j)));
          return Values{};
        });
        if (last >= 2 * lanes) hintVectorLoop(last, lanes, mathBefore);
        return Values{};
      });
    } else {
      loop(count, {}, [&](llvm::Value* k, const Values&) {
        kept(at(k));
        return Values{};
      });
      if (count >= 2 * lanes) hintVectorLoop(count, lanes, mathBefore);
    }
    return accumulateRun(acc, init, count,
                         [&](llvm::Value* k) { return b.CreateLoad(type, b.CreateInBoundsGEP(type, scratch, at(k))); });
  };
  if (!prefetch) return sumRange(nullptr, group_.rowLength(), acc.init);
  return passPrefetchingNextRow(*prefetch, row, {acc.init}, [&](llvm::Value* first, int64_t count, const Values& c) {
    return Values{sumRange(first, count, c[0])};
  })[0];
}

llvm::Value* ElementEmitter::sumInnerRuns(const Accumulation& acc, llvm::Value* init, llvm::Value* scratch,
                                         llvm::Type* type,
                                         const std::function<llvm::Value*(const Index& inner)>& elementAt) {
  // Each run's elements are at consecutive addresses, so the loop vectoriser loads them as vectors:
  // over the flattened row, the index's k / 1024 and k % 1024 become masks that LLVM does not fold
  // back into k, and every load was a gather (a gelu's loss over f32[4096,1024] in 32 chunks: 1.8 ms).
  return forEachInnerRun({init}, [&](const Index& run, llvm::Value* runStart, const Values& c) {
    return Values{accumulateRun(acc, c[0], group_.inner.back(), [&](llvm::Value* j) {
      llvm::Value* x = elementAt(withLast(run, j));
      if (scratch) b.CreateStore(x, b.CreateInBoundsGEP(type, scratch, b.CreateAdd(runStart, j)));
      return x;
    })};
  })[0];
}

Values ElementEmitter::forEachInnerRun(Values init, const InnerRunBody& body) {
  const Shape& inner = group_.inner;
  const Shape outer(inner.begin(), inner.end() - 1);
  return mergedLoopNest({outer}, std::move(init), [&](const Index& run, const Values& c) {
    return body(run, b.CreateMul(linearize(run, outer), i64(inner.back())), c);
  });
}

Index ElementEmitter::withLast(Index index, llvm::Value* last) {
  index.push_back(last);
  return index;
}

bool ElementEmitter::computesExpensiveMath(const Value* v) const {
  std::set<const Value*> seen;
  std::function<bool(const Value*)> visit = [&](const Value* x) {
    if (rowCache_.count(x) || inputIndex_.count(x) || !seen.insert(x).second) return false;
    const Op* op = x->definingOp();
    if (!op || std::find(group_.ops.begin(), group_.ops.end(), op) == group_.ops.end()) return false;
    if (op->info().cls == OpClass::Elementwise && passes::isExpensive(*op)) return true;
    for (const Value* operand : op->operands())
      if (visit(operand)) return true;
    return false;
  };
  return visit(v);
}

Values ElementEmitter::passPrefetchingNextRow(const RowPrefetch& prefetch, llvm::Value* row, Values init,
                                              const RangeBody& run) {
  int64_t n = group_.rowLength(), block = prefetch.blockElements;
  // The last row fetches itself again: past it the buffers end.
  llvm::Value* next = b.CreateSelect(b.CreateICmpULT(row, i64(group_.numRows() - 1)), b.CreateAdd(row, i64(1)), row);
  llvm::Value* nextRowStart = b.CreateMul(next, i64(n));
  auto fetchThenRun = [&](llvm::Value* first, int64_t count, const Values& carried) {
    for (size_t input : prefetch.inputs) {
      DType t = group_.inputs[input]->type().dtype;
      llvm::Value* start = b.CreateInBoundsGEP(storageType(t), buffers_[input], b.CreateAdd(nextRowStart, first));
      int64_t bytes = count * static_cast<int64_t>(dtypeSize(t));
      for (int64_t offset = 0; offset < bytes; offset += kCpuCacheLineBytes)
        b.CreateIntrinsic(llvm::Intrinsic::prefetch, {start->getType()},
                          {b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), start, static_cast<uint64_t>(offset)),
                           b.getInt32(0) /*read*/, b.getInt32(3) /*into every cache level*/, b.getInt32(1) /*data*/});
    }
    // The block's loops run a constant `block` trips; vectorised, LLVM would unroll each whole
    // (a sum of 1024 f32 in 16 vector trips): 25 -> 22 ms of compile for softmax over rows of
    // 2048 f32, in the same run time.
    size_t loopsBefore = latches_.size();
    Values result = run(first, count, carried);
    for (size_t k = loopsBefore; k < latches_.size(); ++k)
      if (latches_[k]) keepVectorLoopRolled(latches_[k]);  // (null: a loop unrolled in a row block)
    return result;
  };
  int64_t blocks = n / block;
  init = loop(blocks, std::move(init), [&](llvm::Value* iv, const Values& c) { return fetchThenRun(b.CreateMul(iv, i64(block)), block, c); });
  // Unrolled, the blocks would each be a copy of the pass's vectorised loop: compile time for nothing.
  if (blocks > 1) keepRolled(lastLoopLatch());
  if (n % block) init = fetchThenRun(i64(blocks * block), n % block, init);
  return init;
}

}  // namespace kiln::codegen
