// Element emitters for layout ops: each maps the output index to the index of the source element
// (ir/interp/layout.cpp computes the same maps). Loads that are only in bounds on one side of a
// condition (concat, pad, gather) sit behind a branch, never a select.
#include <llvm/IR/Constants.h>

#include "codegen/element_emitter.h"
#include "ir/shape_rules.h"

namespace kiln::codegen {

namespace {

// Row-major order keeps the elements of a run of output dims and of the run of source dims with
// the same element count together, so a reshape maps run to run: each source run's index comes from
// its output run alone. A run that only merges dims (out [16,4096] <- x [65536]) needs no division
// at all, and neighbouring output elements stay visibly neighbouring source elements, which lets
// LLVM merge their loads into vectors; a whole-tensor linearize-delinearize would hide that behind
// divisions by the other dims' extents.
llvm::Value* reshape(ElementEmitter& e, const Op& op, const Index& index) {
  const Value* x = op.operand(0);
  const Shape &out = op.result()->type().shape, &in = x->type().shape;
  if (numElements(out) == 0) return e.emit(x, e.delinearize(e.linearize(index, out), in));
  Index source;
  size_t i = 0, j = 0;
  while (i < out.size() || j < in.size()) {
    const size_t firstOut = i, firstIn = j;
    int64_t outCount = 1, inCount = 1;
    if (i < out.size()) outCount *= out[i++];
    else inCount *= in[j++];
    while (outCount != inCount) {
      if (outCount < inCount) outCount *= out[i++];
      else inCount *= in[j++];
    }
    const Shape outRun(out.begin() + static_cast<ptrdiff_t>(firstOut), out.begin() + static_cast<ptrdiff_t>(i));
    const Shape inRun(in.begin() + static_cast<ptrdiff_t>(firstIn), in.begin() + static_cast<ptrdiff_t>(j));
    const Index outIndex(index.begin() + static_cast<ptrdiff_t>(firstOut), index.begin() + static_cast<ptrdiff_t>(i));
    Index inIndex = e.delinearize(e.linearize(outIndex, outRun), inRun);
    source.insert(source.end(), inIndex.begin(), inIndex.end());
  }
  return e.emit(x, source);
}

// out[i_0, .., i_r] = x[j] with j[perm[d]] = i_d.
llvm::Value* transpose(ElementEmitter& e, const Op& op, const Index& index) {
  std::vector<int64_t> perm = op.intsAttr("perm");
  Index source(index.size());
  for (size_t d = 0; d < perm.size(); ++d) source[static_cast<size_t>(perm[d])] = index[d];
  return e.emit(op.operand(0), source);
}

// Operand k holds positions [offset_k, offset_k + size_k) along the axis: a chain of branches.
llvm::Value* concat(ElementEmitter& e, const Op& op, const Index& index) {
  int rank = op.result()->type().rank();
  size_t axis = static_cast<size_t>(*normalizeAxis(op.intAttr("axis"), rank));
  std::vector<size_t> parts;  // operands that hold elements along the axis
  std::vector<int64_t> offsets;
  int64_t offset = 0;
  for (size_t k = 0; k < op.numOperands(); ++k) {
    int64_t size = op.operand(k)->type().shape[axis];
    if (size == 0) continue;
    parts.push_back(k);
    offsets.push_back(offset);
    offset += size;
  }
  if (parts.empty()) return llvm::Constant::getNullValue(e.computeType(op.result()->type().dtype));  // no elements
  std::function<llvm::Value*(size_t)> part = [&](size_t p) -> llvm::Value* {
    auto read = [&] {
      Index source = index;
      source[axis] = e.b.CreateSub(index[axis], e.i64(offsets[p]));
      return e.emit(op.operand(parts[p]), source);
    };
    if (p + 1 == parts.size()) return read();
    llvm::Value* inside = e.b.CreateICmpULT(index[axis], e.i64(offsets[p + 1]));
    return e.ifElse(inside, read, [&] { return part(p + 1); });
  };
  return part(0);
}

// ONNX Slice: element k along an axis reads start + k * step.
llvm::Value* slice(ElementEmitter& e, const Op& op, const Index& index) {
  const Value* x = op.operand(0);
  auto axes = resolveSlice(x->type().shape, op.intsAttr("starts"), op.intsAttr("ends"), optionalIntsAttr(op, "axes"),
                           optionalIntsAttr(op, "steps"));
  KILN_INTERNAL_CHECK(axes.ok(), "slice: attributes were not verified");
  Index source(index.size());
  for (size_t d = 0; d < index.size(); ++d) {
    const SliceAxis& a = (*axes)[d];
    source[d] = a.step == 1 ? index[d] : e.b.CreateMul(index[d], e.i64(a.step));
    if (a.start != 0) source[d] = e.b.CreateAdd(source[d], e.i64(a.start));
  }
  return e.emit(x, source);
}

// ONNX Gather: out[o.., j.., i..] = x[o.., indices[j..], i..]; negative indices count from the
// end; an index outside [-n, n) raises an error and reads nothing (the result is 0).
llvm::Value* gather(ElementEmitter& e, const Op& op, const Index& index) {
  auto& b = e.b;
  const Value* x = op.operand(0);
  const Value* indices = op.operand(1);
  size_t axis = static_cast<size_t>(*normalizeAxis(op.intAttr("axis"), x->type().rank()));
  size_t q = static_cast<size_t>(indices->type().rank());
  int64_t n = x->type().shape[axis];
  Index at(index.begin() + static_cast<ptrdiff_t>(axis), index.begin() + static_cast<ptrdiff_t>(axis + q));
  llvm::Value* i = e.toI64(e.emit(indices, at), indices->type().dtype);
  llvm::Value* bad = b.CreateOr(b.CreateICmpSLT(i, e.i64(-n)), b.CreateICmpSGE(i, e.i64(n)));
  e.raiseIf(bad, e.addError(op, "index out of range [" + std::to_string(-n) + ", " + std::to_string(n) +
                                    ") for axis " + std::to_string(axis)));
  llvm::Value* resolved = b.CreateSelect(b.CreateICmpSLT(i, e.i64(0)), b.CreateAdd(i, e.i64(n)), i);
  DType t = op.result()->type().dtype;
  return e.ifElse(
      bad, [&] { return llvm::Constant::getNullValue(e.computeType(t)); },
      [&] {
        Index source(index.begin(), index.begin() + static_cast<ptrdiff_t>(axis));
        source.push_back(resolved);
        source.insert(source.end(), index.begin() + static_cast<ptrdiff_t>(axis + q), index.end());
        return e.emit(x, source);
      });
}

// The fill value as the interpreter stores it: an int attribute exactly (wrapping), a float one
// converted like Tensor::setDouble (truncated and saturated for ints, != 0 for bool).
llvm::Value* padValue(ElementEmitter& e, const Op& op) {
  DType t = op.result()->type().dtype;
  Attr value = op.attr("value");
  Tensor fill(TensorType{t, {}});
  if (value.isInt()) fill.setInt(0, value.getInt());
  else fill.setDouble(0, value.getNumber());
  if (isFloat(t)) return e.constant(t, fill.getDouble(0));
  return e.intConstant(t, fill.getInt(0));
}

// out[i] = x[i - begin] where that lies inside x, else the fill value. Negative pads crop.
llvm::Value* pad(ElementEmitter& e, const Op& op, const Index& index) {
  auto& b = e.b;
  const Value* x = op.operand(0);
  const Shape& shape = x->type().shape;
  std::vector<int64_t> pads = op.intsAttr("pads");
  size_t rank = shape.size();
  Index source(rank);
  llvm::Value* inside = b.getTrue();
  bool always = true;  // no condition yet
  auto require = [&](llvm::Value* c) {
    inside = always ? c : b.CreateAnd(inside, c);
    always = false;
  };
  for (size_t d = 0; d < rank; ++d) {
    int64_t begin = pads[d], end = pads[d + rank];
    source[d] = begin == 0 ? index[d] : b.CreateSub(index[d], e.i64(begin));
    // Only positive pads can put an output position outside x.
    if (begin > 0) require(b.CreateICmpSGE(source[d], e.i64(0)));
    if (end > 0) require(b.CreateICmpSLT(source[d], e.i64(shape[d])));
  }
  return e.ifElse(inside, [&] { return e.emit(x, source); }, [&] { return padValue(e, op); });
}

}  // namespace

llvm::Value* emitLayout(ElementEmitter& e, const Op& op, const Index& index) {
  switch (op.kind()) {
    case OpKind::Reshape: return reshape(e, op, index);
    case OpKind::Transpose: return transpose(e, op, index);
    case OpKind::BroadcastTo:
      return e.emit(op.operand(0), e.broadcastIndex(index, op.operand(0)->type().shape, op.result()->type().shape));
    case OpKind::Concat: return concat(e, op, index);
    case OpKind::Slice: return slice(e, op, index);
    case OpKind::Gather: return gather(e, op, index);
    case OpKind::Pad: return pad(e, op, index);
    default: break;
  }
  internalError(__FILE__, __LINE__, "not a layout op: " + std::string(op.name()));
}

}  // namespace kiln::codegen
