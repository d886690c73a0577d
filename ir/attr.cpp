// Attribute printing and comparison, and the shortest round-trip spelling of numbers.
#include "ir/attr.h"

#include <fmt/format.h>

#include <cmath>

namespace kiln {

std::string_view attrKindName(AttrKind k) {
  switch (k) {
    case AttrKind::Int: return "integer";
    case AttrKind::Float: return "float";
    case AttrKind::Bool: return "boolean";
    case AttrKind::String: return "string";
    case AttrKind::DType: return "dtype";
    case AttrKind::List: return "list";
    case AttrKind::Dense: return "tensor literal";
  }
  return "?";
}

Attr Attr::ints(const std::vector<int64_t>& v) {
  List l;
  l.reserve(v.size());
  for (int64_t x : v) l.emplace_back(x);
  return Attr(std::move(l));
}

std::optional<std::vector<int64_t>> Attr::getIntList() const {
  if (kind() != AttrKind::List) return std::nullopt;
  std::vector<int64_t> out;
  for (const Attr& a : getList()) {
    if (!a.isInt()) return std::nullopt;
    out.push_back(a.getInt());
  }
  return out;
}

namespace {
std::string withFloatMarker(std::string s) {
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // 'n' covers inf and nan
  return s;
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}
}  // namespace

std::string formatFloat(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  return withFloatMarker(fmt::format("{}", v));
}

std::string formatFloatAs(double v, DType t) {
  if (t == DType::F64 || std::isnan(v) || std::isinf(v)) return formatFloat(v);
  return withFloatMarker(fmt::format("{}", static_cast<float>(v)));
}

namespace {
std::string formatElement(const Tensor& t, int64_t i) {
  DType d = t.dtype();
  if (d == DType::Bool) return t.getBool(i) ? "true" : "false";
  if (isInt(d)) return formatInt(t.getInt(i), d);
  return formatFloatAs(t.getDouble(i), d);
}

void formatNested(const Tensor& t, int dim, int64_t& index, std::string& out) {
  if (dim == t.rank()) {
    out += formatElement(t, index++);
    return;
  }
  out += "[";
  for (int64_t i = 0; i < t.shape()[dim]; ++i) {
    if (i) out += ", ";
    formatNested(t, dim + 1, index, out);
  }
  out += "]";
}
}  // namespace

std::string formatDense(const Tensor& t) {
  int64_t n = t.numElements();
  bool splat = n > 0;
  for (int64_t i = 1; i < n && splat; ++i) splat = formatElement(t, i) == formatElement(t, 0);
  if (splat) return formatElement(t, 0);
  std::string out;
  int64_t index = 0;
  formatNested(t, 0, index, out);
  return out;
}

std::string Attr::str() const {
  switch (kind()) {
    case AttrKind::Int: return std::to_string(getInt());
    case AttrKind::Float: return formatFloat(std::get<double>(v_));
    case AttrKind::Bool: return getBool() ? "true" : "false";
    case AttrKind::String: return quote(getString());
    case AttrKind::DType: return std::string(dtypeName(getDType()));
    case AttrKind::Dense: return formatDense(getDense());
    case AttrKind::List: {
      std::string out = "[";
      const List& l = getList();
      for (size_t i = 0; i < l.size(); ++i) {
        if (i) out += ", ";
        out += l[i].str();
      }
      return out + "]";
    }
  }
  return "?";
}

bool Attr::operator==(const Attr& o) const {
  if (kind() != o.kind()) return false;
  if (kind() == AttrKind::Dense) return getDense() == o.getDense();
  return v_ == o.v_;
}

}  // namespace kiln
