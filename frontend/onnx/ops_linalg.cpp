// MatMul (NumPy semantics, as kiln's matmul), Gemm: alpha op(A) op(B) + beta C, with op a
// transpose when transA/transB is set, and C broadcast to the result (optional from opset 11),
// and Einsum as a broadcast product summed over the contracted letters.
#include <algorithm>
#include <map>

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

// Einsum without ellipses or repeated letters within a term: every operand is transposed and
// reshaped onto the equation's letters (1 where it lacks one), all are multiplied, the letters
// missing from the output are summed away and the rest put in output order.
Status einsum(NodeContext& c) {
  auto xs = c.inputs();
  if (!xs) return xs.error();
  std::string eq;
  for (char ch : c.stringAttr("equation", ""))
    if (ch != ' ') eq += ch;
  if (eq.find('.') != std::string::npos) return c.unsupported("ellipses ('...')");
  auto arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != xs->size()) return c.error("equation '" + eq + "' has " + std::to_string(terms.size()) + " terms for " + std::to_string(xs->size()) + " inputs");
  std::string letters;  // every letter, in order of first appearance
  std::map<char, int64_t> size, count;
  for (size_t t = 0; t < terms.size(); ++t) {
    const Shape& s = (*xs)[t]->type().shape;
    if (terms[t].size() != s.size()) return c.error("term '" + terms[t] + "' does not match operand " + (*xs)[t]->type().str());
    for (size_t j = 0; j < s.size(); ++j) {
      char l = terms[t][j];
      if (terms[t].find(l) != j) return c.unsupported("repeated letters within a term (diagonals)");
      if (!size.count(l)) letters += l;
      if (size.count(l) && size[l] != s[j] && size[l] != 1 && s[j] != 1) return c.error("letter '" + std::string(1, l) + "' has sizes " + std::to_string(size[l]) + " and " + std::to_string(s[j]));
      size[l] = std::max(size.count(l) ? size[l] : 1, s[j]);
      ++count[l];
    }
  }
  std::string out;
  if (arrow != std::string::npos) {
    out = eq.substr(arrow + 2);
  } else {  // implicit output: the letters used once, in alphabetical order
    for (char l : letters)
      if (count[l] == 1) out += l;
    std::sort(out.begin(), out.end());
  }
  Value* product = nullptr;
  for (size_t t = 0; t < terms.size(); ++t) {
    std::vector<int64_t> perm;
    Shape placed;
    for (char l : letters) {
      auto at = terms[t].find(l);
      if (at != std::string::npos) perm.push_back(static_cast<int64_t>(at));
      placed.push_back(at == std::string::npos ? 1 : (*xs)[t]->type().shape[at]);
    }
    Value* v = (*xs)[t];
    bool identity = true;
    for (size_t j = 0; j < perm.size(); ++j) identity = identity && perm[j] == static_cast<int64_t>(j);
    if (!identity) v = c.op(OpKind::Transpose, {v}, {{"perm", Attr::ints(perm)}});
    v = c.reshape(v, placed);
    product = product ? c.op(OpKind::Mul, {product, v}) : v;
  }
  std::vector<int64_t> summed;
  std::string kept;
  for (size_t j = 0; j < letters.size(); ++j) {
    if (out.find(letters[j]) == std::string::npos) summed.push_back(static_cast<int64_t>(j));
    else kept += letters[j];
  }
  for (char l : out)
    if (kept.find(l) == std::string::npos) return c.error("output letter '" + std::string(1, l) + "' is in no input");
  if (!summed.empty()) product = c.op(OpKind::ReduceSum, {product}, {{"axes", Attr::ints(summed)}});
  if (product && product->type().shape.size() != kept.size()) return c.error("equation '" + eq + "' does not fit its operands");
  std::vector<int64_t> perm;
  for (char l : out) perm.push_back(static_cast<int64_t>(kept.find(l)));
  bool identity = true;
  for (size_t j = 0; j < perm.size(); ++j) identity = identity && perm[j] == static_cast<int64_t>(j);
  return c.result(identity ? product : c.op(OpKind::Transpose, {product}, {{"perm", Attr::ints(perm)}}));
}

}  // namespace

void addLinalgConverters(ConverterTable& t) {
  t["Einsum"] = einsum;
  t["MatMul"] = matmul;
  t["Gemm"] = gemm;
}

}  // namespace kiln::onnx_import
