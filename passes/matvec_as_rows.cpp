// matvec-as-rows: a matrix times a vector becomes a row reduction. See the header.
#include "passes/matvec_as_rows.h"

#include <vector>

#include "passes/rewrite.h"

namespace kiln::passes {

namespace {

bool isMatrixTimesVector(const Op& op) {
  if (op.kind() != OpKind::Matmul) return false;
  const TensorType& a = op.operand(0)->type();
  const TensorType& v = op.operand(1)->type();
  // A column [K, 1] is a vector too (an RNN's W h as a matrix product): its result is reshaped.
  bool vector = v.rank() == 1 || (v.rank() == 2 && v.shape[1] == 1);
  return isFloat(a.dtype) && a.rank() >= 2 && vector && a.numElements() > 0;
}

void rewrite(Op& matmul) {
  const DType dtype = matmul.result()->type().dtype;
  const bool column = matmul.operand(1)->type().rank() == 2;
  // f16 and bf16 are summed as f32 (a product of two of their values is exact in f32), f32 and
  // f64 as they are.
  const DType summed = dtype == DType::F64 ? DType::F64 : DType::F32;
  auto widen = [&](Value* x) {
    return x->type().dtype == summed ? x : insertOpBefore(matmul, OpKind::Cast, {x}, {{"to", Attr(summed)}});
  };
  Value* v = matmul.operand(1);
  if (column) v = insertOpBefore(matmul, OpKind::Reshape, {v}, {{"shape", Attr::ints({v->type().shape[0]})}});
  // The last op takes the matmul's name.
  const std::string name = matmul.result()->name();
  const bool last = summed == dtype && !column;
  Value* products = insertOpBefore(matmul, OpKind::Mul, {widen(matmul.operand(0)), widen(v)});
  AttrList attrs = {{"axes", Attr::ints({-1})}};
  if (summed == DType::F32) attrs.emplace_back("accumulate", Attr(DType::F32));
  Value* sums = insertOpBefore(matmul, OpKind::ReduceSum, {products}, attrs, last ? name : "");
  if (summed != dtype) sums = insertOpBefore(matmul, OpKind::Cast, {sums}, {{"to", Attr(dtype)}}, column ? "" : name);
  if (column)
    sums = insertOpBefore(matmul, OpKind::Reshape, {sums}, {{"shape", Attr::ints(matmul.result()->type().shape)}}, name);
  replaceOp(matmul, sums);
}

}  // namespace

PassResult rewriteMatvecAsRows(Module& module, PassContext&) {
  std::vector<Op*> products;
  for (const auto& f : module.functions())
    walkOps(f->body(), [&](Op* op) {
      if (isMatrixTimesVector(*op)) products.push_back(op);
    });
  for (Op* matmul : products) rewrite(*matmul);
  return !products.empty();
}

}  // namespace kiln::passes
