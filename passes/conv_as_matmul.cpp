// conv-as-matmul: a 1x1 convolution over a 1x1 image becomes a matmul. See the header.
#include "passes/conv_as_matmul.h"

#include <vector>

#include "ir/shape_rules.h"
#include "passes/rewrite.h"

namespace kiln::passes {

namespace {

bool isMatrixProduct(const Op& conv) {
  if (conv.kind() != OpKind::Conv2d || conv.intAttr("groups") != 1) return false;
  const TensorType& x = conv.operand(0)->type();
  const TensorType& w = conv.operand(1)->type();
  if (x.dtype != DType::F32 && x.dtype != DType::F64) return false;
  for (int64_t pad : conv.intsAttr("pads"))
    if (pad != 0) return false;
  // The image's height and width: dims 2 and 3 channels-first, 1 and 2 channels-last.
  size_t height = isChannelsLast(conv) ? 1 : 2;
  return x.shape[height] == 1 && x.shape[height + 1] == 1 && w.shape[2] == 1 && w.shape[3] == 1;
}

// weights [O,C,1,1] as [C,O].
template <class T>
void transposeWeights(const Tensor& weights, Tensor& transposed) {
  const int64_t outputs = weights.shape()[0], inputs = weights.shape()[1];
  const T* in = static_cast<const T*>(weights.data());
  T* out = static_cast<T*>(transposed.data());
  for (int64_t o = 0; o < outputs; ++o)
    for (int64_t c = 0; c < inputs; ++c) out[c * outputs + o] = in[o * inputs + c];
}

// The conv's weight as the matmul's right operand [C,O].
Value* rightOperand(Op& conv) {
  Value* w = conv.operand(1);
  const TensorType& type = w->type();
  const int64_t outputs = type.shape[0], inputs = type.shape[1];
  std::string name = w->name().empty() ? "" : w->name() + ".as_matrix";
  const Op* def = w->definingOp();
  if (def && def->kind() == OpKind::Constant) {
    const Tensor& weights = def->attr("value").getDense();
    Tensor transposed = Tensor::uninitialized(TensorType{type.dtype, {inputs, outputs}});
    if (type.dtype == DType::F32) transposeWeights<float>(weights, transposed);
    else transposeWeights<double>(weights, transposed);
    return insertConstantBefore(conv, std::move(transposed), name);
  }
  Value* matrix = insertOpBefore(conv, OpKind::Reshape, {w}, {{"shape", Attr::ints({outputs, inputs})}});
  return insertOpBefore(conv, OpKind::Transpose, {matrix}, {{"perm", Attr::ints({1, 0})}}, name);
}

bool rewriteIn(Block& block) {
  bool changed = false;
  std::vector<Op*> convs;
  for (const auto& op : block.ops()) {
    for (size_t r = 0; r < op->numRegions(); ++r) changed |= rewriteIn(*op->region(r));
    if (isMatrixProduct(*op)) convs.push_back(op.get());
  }
  for (Op* conv : convs) {
    const TensorType& x = conv->operand(0)->type();
    const TensorType& y = conv->result()->type();
    Op* weightDef = conv->operand(1)->definingOp();
    Value* product;
    if (isChannelsLast(*conv)) {
      // [N,1,1,C] x [C,O] is [N,1,1,O] as it stands (the leading dims are the matmul's batch, which
      // the library call folds into rows): no reshape, so no copy kernel, on either side.
      product = insertOpBefore(*conv, OpKind::Matmul, {conv->operand(0), rightOperand(*conv)}, {}, conv->result()->name());
    } else {
      Value* rows = insertOpBefore(*conv, OpKind::Reshape, {conv->operand(0)}, {{"shape", Attr::ints({x.shape[0], x.shape[1]})}});
      Value* matrix = insertOpBefore(*conv, OpKind::Matmul, {rows, rightOperand(*conv)});
      product = insertOpBefore(*conv, OpKind::Reshape, {matrix}, {{"shape", Attr::ints(y.shape)}}, conv->result()->name());
    }
    replaceOp(*conv, product);
    // The constant weight, now held transposed, goes unless something else reads it.
    if (weightDef && weightDef->kind() == OpKind::Constant && weightDef->result()->uses().empty())
      weightDef->parentBlock()->erase(weightDef);
    changed = true;
  }
  return changed;
}

}  // namespace

PassResult rewriteConvAsMatmul(Module& module, PassContext&) {
  bool changed = false;
  for (const auto& f : module.functions()) changed |= rewriteIn(f->body());
  return changed;
}

}  // namespace kiln::passes
