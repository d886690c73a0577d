// MatMul (NumPy semantics, as kiln's matmul), Gemm: alpha op(A) op(B) + beta C, with op a
// transpose when transA/transB is set, and C broadcast to the result (optional from opset 11),
// and Det by Gaussian elimination.
#include "frontend/onnx/onnx_converters.h"

namespace kiln::onnx_import {

namespace {

Status matmul(NodeContext& c) {
  auto a = c.input(0);
  if (!a) return a.error();
  auto b = c.input(1);
  if (!b) return b.error();
  return c.result(c.op(OpKind::Matmul, {*a, *b}));
}

Value* transpose2d(NodeContext& c, Value* v) { return c.op(OpKind::Transpose, {v}, {{"perm", Attr::ints({1, 0})}}); }

Status gemm(NodeContext& c) {
  auto a = c.input(0);
  if (!a) return a.error();
  auto b = c.input(1);
  if (!b) return b.error();
  if ((*a)->type().rank() != 2 || (*b)->type().rank() != 2)
    return c.error("A and B must be 2-D, got " + (*a)->type().str() + " and " + (*b)->type().str());
  double alpha = c.floatAttr("alpha", 1.0f), beta = c.floatAttr("beta", 1.0f);
  Value* A = c.intAttr("transA", 0) ? transpose2d(c, *a) : *a;
  Value* B = c.intAttr("transB", 0) ? transpose2d(c, *b) : *b;
  Value* y = c.op(OpKind::Matmul, {A, B});
  if (alpha != 1.0) y = c.op(OpKind::Mul, {y, c.scalarLike(y, alpha)});
  if (!c.hasInput(2)) return c.result(y);
  auto cv = c.input(2);
  if (!cv) return cv.error();
  Value* C = *cv;
  if (beta != 1.0) C = c.op(OpKind::Mul, {C, c.scalarLike(C, beta)});
  return c.result(c.op(OpKind::Add, {y, C}));
}

// Det of [.., n, n]: Gaussian elimination with partial pivoting (as LAPACK's getrf, which NumPy's
// det uses), unrolled over the static n and batched over the leading dims, in f64. At step k the
// pivot is the first largest |a| of the remaining column (an argmax), its row is picked with a
// one-hot mask and swapped with the top row (each swap flips the sign), and the rows below are
// reduced. det = sign * the product of the pivots. A zero pivot means a zero column: its factors
// are 0 rather than 0/0, and the determinant comes out 0.
Status det(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  const TensorType& t = (*x)->type();
  if (t.rank() < 2 || t.shape[t.shape.size() - 1] != t.shape[t.shape.size() - 2] || !isFloat(t.dtype))
    return c.error("needs float square matrices [.., n, n], got " + t.str());
  int64_t n = t.shape.back();
  Shape batch(t.shape.begin(), t.shape.end() - 2);
  int64_t b = numElements(batch);
  if (n == 0) return c.result(c.op(OpKind::BroadcastTo, {c.scalarLike(*x, 1)}, {{"shape", Attr::ints(batch)}}));
  auto cut = [&](Value* v, int64_t axis, int64_t start, int64_t end) {
    return c.op(OpKind::Slice, {v}, {{"starts", Attr::ints({start})}, {"ends", Attr::ints({end})}, {"axes", Attr::ints({axis})}});
  };
  Value* s = c.reshape(c.cast(*x, DType::F64), {b, n, n});
  Value* product = nullptr;
  Value* negate = nullptr;
  for (int64_t m = n; m > 1; --m) {
    Value* column = c.reshape(cut(s, 2, 0, 1), {b, m});
    Value* p = c.op(OpKind::Argmax, {c.op(OpKind::Abs, {column})}, {{"axis", Attr(int64_t{1})}, {"keepdims", Attr(true)}});
    Value* isPivot = c.op(OpKind::Eq, {c.b().iota({DType::I64, {b, m}}, 1), p});
    Value* pivotRow = c.op(OpKind::ReduceSum, {c.op(OpKind::Select, {c.reshape(isPivot, {b, m, 1}), s, c.scalar(DType::F64, 0)})},
                           {{"axes", Attr::ints({1})}});
    // The pivot's row (1 or below) takes the old top row; the top row is now the pivot's.
    Value* below = c.op(OpKind::Select, {c.reshape(cut(isPivot, 1, 1, m), {b, m - 1, 1}), cut(s, 1, 0, 1), cut(s, 1, 1, m)});
    Value* pivot = cut(pivotRow, 1, 0, 1);  // [b, 1]
    Value* zero = c.scalar(DType::F64, 0);
    Value* factor = c.op(OpKind::Select, {c.reshape(c.op(OpKind::Eq, {pivot, zero}), {b, 1, 1}), zero,
                                          c.op(OpKind::Div, {cut(below, 2, 0, 1), c.reshape(pivot, {b, 1, 1})})});
    s = c.op(OpKind::Sub, {cut(below, 2, 1, m), c.op(OpKind::Mul, {factor, c.reshape(cut(pivotRow, 1, 1, m), {b, 1, m - 1})})});
    product = product ? c.op(OpKind::Mul, {product, pivot}) : pivot;
    Value* swapped = c.op(OpKind::Ne, {p, c.scalar(DType::I64, 0)});
    negate = negate ? c.op(OpKind::Xor, {negate, swapped}) : swapped;
  }
  Value* last = c.reshape(s, {b, 1});
  product = product ? c.op(OpKind::Mul, {product, last}) : last;
  if (negate) product = c.op(OpKind::Select, {negate, c.op(OpKind::Neg, {product}), product});
  return c.result(c.cast(c.reshape(product, batch), t.dtype));
}

}  // namespace

void addLinalgConverters(ConverterTable& t) {
  t["Det"] = det;
  t["MatMul"] = matmul;
  t["Gemm"] = gemm;
}

}  // namespace kiln::onnx_import
