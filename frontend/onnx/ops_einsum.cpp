// Einsum, as NumPy's einsum: every operand becomes a tensor over the equation's labels (letters,
// and one per axis that '...' stands for), all are multiplied with broadcasting, the labels the
// output lacks are summed away and the rest put in the output's order.
//
// A label repeated within a term takes the diagonal: its axes are moved together and merged into
// one of size d^r, and a slice with step 1 + d + .. + d^(r-1) keeps the positions whose
// coordinates are all equal. '...' stands for the axes a term has beyond its letters; those of
// all terms broadcast right-aligned, as NumPy's do.
#include <algorithm>
#include <map>

#include "frontend/onnx/onnx_converters.h"

namespace kiln::onnx_import {

namespace {

// Letters are labelled by their character; the axes of '...' by kEllipsis + j, j counted over the
// broadcast ellipsis axes from the left.
constexpr int kEllipsis = 256;

struct Term {
  std::string text;
  std::vector<int> labels;
};

std::string labelName(int label) {
  return label >= kEllipsis ? "... axis " + std::to_string(label - kEllipsis) : "'" + std::string(1, static_cast<char>(label)) + "'";
}

// The letters before and after '...' and whether it is there; an error for any other character.
Expected<std::pair<std::string, std::string>> splitTerm(NodeContext& c, const std::string& term, bool& ellipsis) {
  auto dots = term.find("...");
  ellipsis = dots != std::string::npos;
  std::string before = ellipsis ? term.substr(0, dots) : term;
  std::string after = ellipsis ? term.substr(dots + 3) : "";
  for (char ch : before + after)
    if (!std::isalpha(static_cast<unsigned char>(ch))) return c.error("equation term '" + term + "' has '" + std::string(1, ch) + "'; terms hold letters and one '...'");
  return std::make_pair(before, after);
}

// An operand's term as labels, its '...' spanning rank - letters axes, right-aligned within
// `ellipsisRank` broadcast ellipsis axes.
Expected<std::vector<int>> termLabels(NodeContext& c, const std::string& term, int64_t rank, int64_t& ellipsisAxes) {
  bool ellipsis = false;
  auto parts = splitTerm(c, term, ellipsis);
  if (!parts) return parts.error();
  int64_t letters = static_cast<int64_t>(parts->first.size() + parts->second.size());
  ellipsisAxes = rank - letters;
  if (ellipsisAxes < 0 || (!ellipsis && ellipsisAxes != 0))
    return c.error("term '" + term + "' does not fit an operand of rank " + std::to_string(rank));
  std::vector<int> labels;
  for (char ch : parts->first) labels.push_back(static_cast<unsigned char>(ch));
  for (int64_t j = 0; j < ellipsisAxes; ++j) labels.push_back(-1 - static_cast<int>(j));  // placed once all are known
  for (char ch : parts->second) labels.push_back(static_cast<unsigned char>(ch));
  return labels;
}

// Takes the diagonal of every label that `labels` repeats; `labels` becomes the remaining axes'.
Expected<Value*> diagonals(NodeContext& c, Value* x, std::vector<int>& labels) {
  std::vector<int> unique;
  for (int l : labels)
    if (std::find(unique.begin(), unique.end(), l) == unique.end()) unique.push_back(l);
  if (unique.size() == labels.size()) return x;
  const Shape& s = x->type().shape;
  std::vector<int64_t> perm, starts, ends, steps;
  Shape merged;
  for (int l : unique) {
    int64_t d = -1, size = 1, step = 0;
    for (size_t j = 0; j < labels.size(); ++j) {
      if (labels[j] != l) continue;
      if (d >= 0 && s[j] != d) return c.error("label " + labelName(l) + " is repeated over axes of sizes " + std::to_string(d) + " and " + std::to_string(s[j]));
      d = s[j];
      step += size;  // 1 + d + d^2 + ..
      size *= d;
      perm.push_back(static_cast<int64_t>(j));
    }
    merged.push_back(size);
    starts.push_back(0);
    ends.push_back(size);
    steps.push_back(std::max<int64_t>(step, 1));
  }
  Value* t = c.op(OpKind::Transpose, {x}, {{"perm", Attr::ints(perm)}});
  t = c.reshape(t, merged);
  labels = unique;
  return c.op(OpKind::Slice, {t}, {{"starts", Attr::ints(starts)}, {"ends", Attr::ints(ends)}, {"steps", Attr::ints(steps)}});
}

bool isIdentity(const std::vector<int64_t>& perm) {
  for (size_t j = 0; j < perm.size(); ++j)
    if (perm[j] != static_cast<int64_t>(j)) return false;
  return true;
}

Status einsum(NodeContext& c) {
  auto xs = c.inputs();
  if (!xs) return xs.error();
  std::string eq;
  for (char ch : c.stringAttr("equation", ""))
    if (ch != ' ') eq += ch;
  auto arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> texts;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    texts.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (texts.size() != xs->size()) return c.error("equation '" + eq + "' has " + std::to_string(texts.size()) + " terms for " + std::to_string(xs->size()) + " inputs");

  // Labels of every operand, the ellipsis axes placed right-aligned among all terms' E of them.
  std::vector<std::vector<int>> labels;
  std::vector<int64_t> ellipsisAxes(texts.size());
  int64_t e = 0;
  std::map<int, int> uses;  // letter -> how often the inputs name it (for the implicit output)
  for (size_t t = 0; t < texts.size(); ++t) {
    auto l = termLabels(c, texts[t], (*xs)[t]->type().rank(), ellipsisAxes[t]);
    if (!l) return l.error();
    labels.push_back(*l);
    e = std::max(e, ellipsisAxes[t]);
  }
  for (size_t t = 0; t < texts.size(); ++t)
    for (int& l : labels[t]) {
      if (l < 0) l = kEllipsis + static_cast<int>(e - ellipsisAxes[t]) + (-1 - l);
      else ++uses[l];
    }

  std::vector<int> out;
  if (arrow != std::string::npos) {
    bool ellipsis = false;
    auto parts = splitTerm(c, eq.substr(arrow + 2), ellipsis);
    if (!parts) return parts.error();
    if (!ellipsis && e > 0) return c.error("the output of '" + eq + "' has no '...' for the inputs' ellipsis axes");
    for (char ch : parts->first) out.push_back(static_cast<unsigned char>(ch));
    for (int64_t j = 0; ellipsis && j < e; ++j) out.push_back(kEllipsis + static_cast<int>(j));
    for (char ch : parts->second) out.push_back(static_cast<unsigned char>(ch));
  } else {  // implicit output: the ellipsis axes, then the letters used once, in alphabetical order
    for (int64_t j = 0; j < e; ++j) out.push_back(kEllipsis + static_cast<int>(j));
    for (auto [letter, n] : uses)
      if (n == 1) out.push_back(letter);
  }

  std::vector<int> all;  // every label, in order of first appearance
  std::map<int, int64_t> size;
  std::vector<Value*> operands;
  for (size_t t = 0; t < texts.size(); ++t) {
    auto v = diagonals(c, (*xs)[t], labels[t]);
    if (!v) return v.error();
    if (!*v) return c.result(nullptr);
    operands.push_back(*v);
    const Shape& s = (*v)->type().shape;
    for (size_t j = 0; j < s.size(); ++j) {
      int l = labels[t][j];
      if (!size.count(l)) all.push_back(l);
      int64_t& known = size[l];
      if (known > 1 && s[j] > 1 && known != s[j])
        return c.error("label " + labelName(l) + " has sizes " + std::to_string(known) + " and " + std::to_string(s[j]));
      known = std::max(known, s[j]);
    }
  }
  for (size_t j = 0; j < out.size(); ++j) {
    if (!size.count(out[j])) return c.error("output label " + labelName(out[j]) + " is in no input");
    if (std::find(out.begin(), out.begin() + static_cast<int64_t>(j), out[j]) != out.begin() + static_cast<int64_t>(j))
      return c.error("output label " + labelName(out[j]) + " appears twice");
  }

  // Each operand over all labels (size 1 where it lacks one), multiplied together.
  Value* product = nullptr;
  for (size_t t = 0; t < operands.size(); ++t) {
    std::vector<int64_t> perm;
    Shape placed;
    for (int l : all) {
      auto at = std::find(labels[t].begin(), labels[t].end(), l);
      bool has = at != labels[t].end();
      if (has) perm.push_back(at - labels[t].begin());
      placed.push_back(has ? operands[t]->type().shape[static_cast<size_t>(at - labels[t].begin())] : 1);
    }
    Value* v = isIdentity(perm) ? operands[t] : c.op(OpKind::Transpose, {operands[t]}, {{"perm", Attr::ints(perm)}});
    v = c.reshape(v, placed);
    product = product ? c.op(OpKind::Mul, {product, v}) : v;
  }
  std::vector<int64_t> summed;
  std::vector<int> kept;
  for (size_t j = 0; j < all.size(); ++j) {
    if (std::find(out.begin(), out.end(), all[j]) == out.end()) summed.push_back(static_cast<int64_t>(j));
    else kept.push_back(all[j]);
  }
  if (!summed.empty()) product = c.op(OpKind::ReduceSum, {product}, {{"axes", Attr::ints(summed)}});
  if (!product) return c.result(nullptr);
  std::vector<int64_t> perm;
  for (int l : out) perm.push_back(std::find(kept.begin(), kept.end(), l) - kept.begin());
  return c.result(isIdentity(perm) ? product : c.op(OpKind::Transpose, {product}, {{"perm", Attr::ints(perm)}}));
}

}  // namespace

void addEinsumConverters(ConverterTable& t) { t["Einsum"] = einsum; }

}  // namespace kiln::onnx_import
