// MatMul (NumPy semantics, as kiln's matmul) and Gemm: alpha op(A) op(B) + beta C, with op a
// transpose when transA/transB is set, and C broadcast to the result (optional from opset 11).
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

}  // namespace

void addLinalgConverters(ConverterTable& t) {
  t["MatMul"] = matmul;
  t["Gemm"] = gemm;
}

}  // namespace kiln::onnx_import
