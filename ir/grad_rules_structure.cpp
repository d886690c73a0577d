// Derivative rules of matmul, the layout ops and the windowed ops (conv2d, pooling). Layout ops
// move cotangents back where their elements came from; conv2d, pooling and gather use their
// backward ops (docs/ir.md), which the GPU runs as cuDNN calls or generated kernels.
#include "ir/grad_rules.h"
#include "ir/shape_rules.h"

namespace kiln::grad {

namespace {

using Grads = Expected<std::vector<Value*>>;

// transpose's perm swapping the last two axes of a rank-r value.
std::vector<int64_t> swapLastTwo(int rank) {
  std::vector<int64_t> perm;
  for (int i = 0; i < rank; ++i) perm.push_back(i);
  std::swap(perm[rank - 2], perm[rank - 1]);
  return perm;
}

Value* transposeLastTwo(Context& ctx, Value* v) {
  return ctx.op(OpKind::Transpose, {v}, {{"perm", Attr::ints(swapLastTwo(v->type().rank()))}});
}

// The forward op's attributes (window and layout: the backward ops take conv2d's and pooling's
// layout) plus one more (a backward op's input or filter shape).
AttrList withAttr(const Op& op, std::string name, Attr value) {
  AttrList attrs = op.attrs();
  attrs.emplace_back(std::move(name), std::move(value));
  return attrs;
}

}  // namespace

// NumPy matmul, with a 1-D a read as [1,K] and a 1-D b as [K,1]:
//   da = dy b^T, db = a^T dy, each summed over the batch dims its operand was broadcast along
KILN_GRAD_RULE(matmul) {
  Value* a = op.operand(0);
  Value* b = op.operand(1);
  const Shape& as = a->type().shape;
  const Shape& bs = b->type().shape;
  Shape a2 = as.size() == 1 ? Shape{1, as[0]} : as;
  Shape b2 = bs.size() == 1 ? Shape{bs[0], 1} : bs;
  Shape out = *broadcastShapes(Shape(a2.begin(), a2.end() - 2), Shape(b2.begin(), b2.end() - 2));
  out.push_back(a2[a2.size() - 2]);
  out.push_back(b2.back());
  Value* dy = ctx.reshape(dys[0], out);
  Value* da = ctx.op(OpKind::Matmul, {dy, transposeLastTwo(ctx, ctx.reshape(b, b2))});
  Value* db = ctx.op(OpKind::Matmul, {transposeLastTwo(ctx, ctx.reshape(a, a2)), dy});
  return std::vector<Value*>{ctx.reshape(ctx.sumToShape(da, a2), as), ctx.reshape(ctx.sumToShape(db, b2), bs)};
}
// dx = reshape(dy, x's shape)
KILN_GRAD_RULE(reshape) { return std::vector<Value*>{ctx.reshape(dys[0], op.operand(0)->type().shape)}; }
// dx = transpose(dy, perm^-1)
KILN_GRAD_RULE(transpose) {
  std::vector<int64_t> perm = op.intsAttr("perm"), inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
  return std::vector<Value*>{ctx.op(OpKind::Transpose, {dys[0]}, {{"perm", Attr::ints(inverse)}})};
}
// dx = dy summed over the broadcast dims
KILN_GRAD_RULE(broadcastTo) { return std::vector<Value*>{ctx.sumToShape(dys[0], op.operand(0)->type().shape)}; }
// dx_i = dy's slice along the axis where x_i was put
KILN_GRAD_RULE(concat) {
  int axis = *normalizeAxis(op.intAttr("axis"), op.result()->type().rank());
  std::vector<Value*> grads;
  int64_t offset = 0;
  for (Value* x : op.operands()) {
    int64_t length = x->type().shape[axis];
    grads.push_back(ctx.op(OpKind::Slice, {dys[0]},
                           {{"starts", Attr::ints({offset})}, {"ends", Attr::ints({offset + length})},
                            {"axes", Attr::ints({axis})}}));
    offset += length;
  }
  return grads;
}
// Unit steps: dx = dy padded with zeros back to x's shape. Other steps: gather_backward puts
// each element of dy back at the index it was read from, one axis at a time.
KILN_GRAD_RULE(slice) {
  const Shape& xs = op.operand(0)->type().shape;
  std::optional<std::vector<int64_t>> axes, steps;
  if (const Attr* a = op.findAttr("axes")) axes = a->getIntList();
  if (const Attr* a = op.findAttr("steps")) steps = a->getIntList();
  std::vector<SliceAxis> resolved = *resolveSlice(xs, op.intsAttr("starts"), op.intsAttr("ends"), axes, steps);
  int rank = static_cast<int>(xs.size());
  for (const SliceAxis& s : resolved)
    if (s.count == 0) return std::vector<Value*>{ctx.zeros(op.operand(0)->type())};
  std::vector<int64_t> pads(2 * rank, 0);
  for (int d = 0; d < rank; ++d) {
    if (resolved[d].step != 1) continue;
    pads[d] = resolved[d].start;
    pads[d + rank] = xs[d] - resolved[d].start - resolved[d].count;
  }
  Value* g = dys[0];
  if (std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; }))
    g = ctx.op(OpKind::Pad, {g}, {{"pads", Attr::ints(pads)}});
  for (int d = 0; d < rank; ++d) {
    if (resolved[d].step == 1) continue;
    Tensor indices({DType::I64, {resolved[d].count}});
    for (int64_t k = 0; k < resolved[d].count; ++k) indices.setInt(k, resolved[d].start + k * resolved[d].step);
    Shape full = g->type().shape;
    full[d] = xs[d];
    g = ctx.op(OpKind::GatherBackward, {g, ctx.b.constant(std::move(indices))},
               {{"axis", Attr(int64_t{d})}, {"input_shape", Attr::ints(full)}});
  }
  return std::vector<Value*>{g};
}
// dx = gather_backward(dy, indices): dy's slices added up at the rows they were gathered from
KILN_GRAD_RULE(gather) {
  Value* dx = ctx.op(OpKind::GatherBackward, {dys[0], op.operand(1)},
                     withAttr(op, "input_shape", Attr::ints(op.operand(0)->type().shape)));
  return std::vector<Value*>{dx, nullptr};
}
// dx = the part of dy that came from x: a slice where x was padded, zeros where it was cropped
// (negative pads)
KILN_GRAD_RULE(pad) {
  const Shape& xs = op.operand(0)->type().shape;
  int rank = static_cast<int>(xs.size());
  std::vector<int64_t> pads = op.intsAttr("pads"), starts, ends, axes, refill(2 * rank, 0);
  for (int d = 0; d < rank; ++d) {
    int64_t before = pads[d], after = pads[d + rank];
    int64_t kept = xs[d] - std::max<int64_t>(-before, 0) - std::max<int64_t>(-after, 0);
    starts.push_back(std::max<int64_t>(before, 0));
    ends.push_back(starts.back() + kept);
    axes.push_back(d);
    refill[d] = std::max<int64_t>(-before, 0);
    refill[d + rank] = std::max<int64_t>(-after, 0);
  }
  Value* g = ctx.op(OpKind::Slice, {dys[0]}, {{"starts", Attr::ints(starts)}, {"ends", Attr::ints(ends)}, {"axes", Attr::ints(axes)}});
  if (std::any_of(refill.begin(), refill.end(), [](int64_t p) { return p != 0; }))
    g = ctx.op(OpKind::Pad, {g}, {{"pads", Attr::ints(refill)}});
  return std::vector<Value*>{g};
}
// dx = conv2d_backward_data(dy, w), dw = conv2d_backward_filter(x, dy), same window attributes
// and layout.
KILN_GRAD_RULE(conv2d) {
  Value* x = op.operand(0);
  Value* w = op.operand(1);
  Value* dx = ctx.op(OpKind::Conv2dBackwardData, {dys[0], w}, withAttr(op, "input_shape", Attr::ints(x->type().shape)));
  Value* dw = ctx.op(OpKind::Conv2dBackwardFilter, {x, dys[0]}, withAttr(op, "filter_shape", Attr::ints(w->type().shape)));
  return std::vector<Value*>{dx, dw};
}
// Each window's dy goes to the window's first maximal element.
KILN_GRAD_RULE(maxPool2d) {
  return std::vector<Value*>{ctx.op(OpKind::MaxPool2dBackward, {op.operand(0), dys[0]}, op.attrs())};
}
// Each window's dy is shared among the window's in-bounds elements.
KILN_GRAD_RULE(avgPool2d) {
  Shape inputShape = op.operand(0)->type().shape;
  return std::vector<Value*>{ctx.op(OpKind::AvgPool2dBackward, {dys[0]}, withAttr(op, "input_shape", Attr::ints(inputShape)))};
}

}  // namespace kiln::grad
