// Types, attribute values and constant literals: the parts of the grammar below an op.
#include "frontend/literals.h"

#include <algorithm>
#include <clocale>
#include <cstdlib>
#include <cstring>
#include <locale.h>

namespace kiln::frontend {

namespace {

// strtod/strtof in the "C" locale, whatever locale the embedding program set: the text format's
// decimal point is always '.'. strtof rounds the decimal text once, straight to float, so an f32
// printed as its shortest repr reads back to the same bits (via double it could round twice).
locale_t cLocale() {
  static locale_t loc = newlocale(LC_ALL_MASK, "C", nullptr);
  return loc;
}
double toDouble(std::string_view text) { return strtod_l(std::string(text).c_str(), nullptr, cLocale()); }
float toFloat(std::string_view text) { return strtof_l(std::string(text).c_str(), nullptr, cLocale()); }

bool isLeaf(const Token& t) { return t.is(Tok::Int) || t.is(Tok::Float) || t.isWord("true") || t.isWord("false"); }

// Collects a nested-list literal, checking that it is rectangular: at each depth, either every
// element is a list of one common length, or every element is a scalar.
class LiteralParser {
 public:
  LiteralParser(Cursor& c, Literal& lit) : c_(c), lit_(lit) {}

  Status element(int depth) {
    grow(depth);
    const Token& t = c_.peek();
    if (t.is(Tok::LBracket)) return list(depth);
    if (!isLeaf(t)) return c_.unexpected("a literal (a number, true, false or a list)");
    if (kind_[depth] == Kind::List)
      return c_.error(t, "expected '[' here: the literal is not rectangular (other elements at this depth are lists)");
    kind_[depth] = Kind::Leaf;
    lit_.leaves.push_back(&c_.next());
    return {};
  }

  Shape shape() const {
    Shape s;
    for (size_t d = 0; d < kind_.size() && kind_[d] == Kind::List; ++d) s.push_back(length_[d]);
    return s;
  }

 private:
  enum class Kind { Unknown, List, Leaf };

  void grow(int depth) {
    if (kind_.size() <= static_cast<size_t>(depth)) {
      kind_.resize(depth + 1, Kind::Unknown);
      length_.resize(depth + 1, -1);
    }
  }

  Status list(int depth) {
    const Token& open = c_.next();
    if (depth >= kMaxNesting)
      return c_.error(open, "literal is nested too deeply (the limit is " + std::to_string(kMaxNesting) + ")");
    if (kind_[depth] == Kind::Leaf)
      return c_.error(open, "expected a scalar here: the literal is not rectangular (other elements at this depth are scalars)");
    kind_[depth] = Kind::List;
    int64_t n = 0;
    if (!c_.at(Tok::RBracket)) {
      for (;;) {
        KILN_TRY(element(depth + 1));
        ++n;
        if (c_.consumeIf(Tok::Comma)) continue;
        if (c_.at(Tok::RBracket)) break;
        return c_.unexpected("',' or ']' in the list");
      }
    }
    c_.next();
    if (length_[depth] >= 0 && length_[depth] != n)
      return c_.error(open, "list has " + std::to_string(n) + " elements, but an earlier list at the same depth has " +
                                std::to_string(length_[depth]) + ": the literal is not rectangular");
    length_[depth] = n;
    return {};
  }

  Cursor& c_;
  Literal& lit_;
  std::vector<Kind> kind_;      // per depth
  std::vector<int64_t> length_;  // per depth: the common length of its lists
};

// Past int64, only u64 constants' elements may go (up to 2^64 - 1).
constexpr const char* kBeyondInt64 = "integer literal out of range (it must fit in int64)";

// Stores one literal element at index i of t, checking it suits t's dtype.
Status setElement(const Cursor& c, Tensor& t, int64_t i, const Token& leaf) {
  DType d = t.dtype();
  std::string dtype(dtypeName(d));
  if (d == DType::Bool) {
    if (!leaf.is(Tok::Ident)) return c.error(leaf, "constant: expected true or false for bool, got " + describe(leaf));
    t.setInt(i, leaf.text == "true" ? 1 : 0);
    return {};
  }
  if (leaf.is(Tok::Ident)) return c.error(leaf, "constant: expected a number for " + dtype + ", got " + describe(leaf));
  if (isInt(d)) {
    if (!leaf.is(Tok::Int)) return c.error(leaf, "constant: expected an integer for " + dtype + ", got " + describe(leaf));
    int64_t v = leaf.intValue;
    bool inRange = d == DType::U64 ? leaf.text[0] != '-' : !leaf.beyondInt64 && wrapToInt(v, d) == v;
    if (!inRange) return c.error(leaf, "constant: integer literal " + std::string(leaf.text) + " is out of range for " + dtype);
    t.setInt(i, v);
    return {};
  }
  // Floats: f64 reads the text as double; f32, f16 and bf16 as float (then round to 16 bits).
  if (d == DType::F64) t.setDouble(i, toDouble(leaf.text));
  else t.setDouble(i, toFloat(leaf.text));
  return {};
}

}  // namespace

Expected<TensorType> parseType(Cursor& c) {
  const Token& name = c.peek();
  if (!name.is(Tok::Ident)) return c.unexpected("a type such as f32[4]");
  auto dtype = parseDType(name.text);
  if (!dtype) return c.error(name, "unknown dtype '" + std::string(name.text) + "'");
  c.next();
  if (!c.consumeIf(Tok::LBracket)) return c.unexpected("'[' and a shape after '" + std::string(name.text) + "'");
  TensorType type{*dtype, {}};
  if (!c.at(Tok::RBracket)) {
    for (;;) {
      const Token& dim = c.peek();
      if (!dim.is(Tok::Int)) return c.unexpected("a dimension (a non-negative integer)");
      if (dim.beyondInt64) return c.error(dim, kBeyondInt64);
      if (dim.intValue < 0) return c.error(dim, "dimension must not be negative, got " + std::string(dim.text));
      if (type.rank() == kMaxRank) return c.error(dim, "type has more than " + std::to_string(kMaxRank) + " dimensions");
      type.shape.push_back(dim.intValue);
      c.next();
      if (c.consumeIf(Tok::Comma)) continue;
      if (c.at(Tok::RBracket)) break;
      return c.unexpected("',' or ']' in the shape");
    }
  }
  c.next();
  if (!shapeWithinLimits(type.shape))
    return c.error(name, "type " + type.str() + " is too large (the limit is 2^48 elements)");
  return type;
}

Expected<std::vector<TensorType>> parseTypeList(Cursor& c) {
  std::vector<TensorType> types;
  do {
    auto t = parseType(c);
    if (!t) return t.error();
    types.push_back(*t);
  } while (c.consumeIf(Tok::Comma));
  return types;
}

Expected<Attr> parseAttrValue(Cursor& c, int depth) {
  const Token& t = c.peek();
  switch (t.kind) {
    case Tok::Int:
      if (t.beyondInt64) return c.error(t, kBeyondInt64);
      c.next();
      return Attr(t.intValue);
    case Tok::Float: c.next(); return Attr(toDouble(t.text));
    case Tok::String: c.next(); return Attr(t.value);
    case Tok::Ident: {
      std::optional<Attr> word;
      if (t.text == "true" || t.text == "false") word = Attr(t.text == "true");
      else if (auto d = parseDType(t.text)) word = Attr(*d);
      if (!word) break;
      c.next();
      return *word;
    }
    case Tok::LBracket: {
      c.next();
      if (depth >= kMaxNesting)
        return c.error(t, "list is nested too deeply (the limit is " + std::to_string(kMaxNesting) + ")");
      Attr::List list;
      if (c.consumeIf(Tok::RBracket)) return Attr(std::move(list));
      for (;;) {
        auto v = parseAttrValue(c, depth + 1);
        if (!v) return v.error();
        list.push_back(std::move(*v));
        if (c.consumeIf(Tok::Comma)) continue;
        if (c.consumeIf(Tok::RBracket)) return Attr(std::move(list));
        return c.unexpected("',' or ']' in the list");
      }
    }
    default: break;
  }
  return c.unexpected("an attribute value (a number, string, true, false, dtype or list)");
}

Expected<Literal> parseLiteral(Cursor& c) {
  Literal lit;
  lit.start = &c.peek();
  lit.isList = c.at(Tok::LBracket);
  LiteralParser p(c, lit);
  KILN_TRY(p.element(0));
  lit.shape = p.shape();
  return lit;
}

Expected<Tensor> buildTensor(const Cursor& c, const Literal& lit, const TensorType& type) {
  if (lit.isList) {
    // Without leaves the lists only pin down the leading dims: `[]` spells f32[0] and f32[0,3] alike.
    bool fits = lit.leaves.empty()
                    ? type.shape.size() >= lit.shape.size() && std::equal(lit.shape.begin(), lit.shape.end(), type.shape.begin())
                    : type.shape == lit.shape;
    if (!fits)
      return c.error(*lit.start, "constant: literal has shape " + shapeStr(lit.shape) + ", but the type is " + type.str());
    Tensor t(type);
    for (size_t i = 0; i < lit.leaves.size(); ++i) KILN_TRY(setElement(c, t, static_cast<int64_t>(i), *lit.leaves[i]));
    return t;
  }
  if (static_cast<int64_t>(type.byteSize()) > kMaxConstantBytes)
    return c.error(*lit.start, "constant: " + type.str() + " is too large for a constant (the limit is 1 GiB)");
  Tensor scalar(TensorType{type.dtype, {}});
  KILN_TRY(setElement(c, scalar, 0, *lit.leaves[0]));
  Tensor t(type);
  // A splat: copy the one element's bytes everywhere.
  auto* out = static_cast<uint8_t*>(t.data());
  for (size_t off = 0; off < t.byteSize(); off += scalar.byteSize()) std::memcpy(out + off, scalar.data(), scalar.byteSize());
  return t;
}

}  // namespace kiln::frontend
