// parseFlatJson: one JSON object of scalar members (RFC 8259 strings, numbers, true, false, null).
#include "tools/flat_json.h"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace kiln::cli {

namespace {

class Reader {
 public:
  Reader(const std::string& text, const std::string& source) : s_(text), source_(source) {}

  Expected<FlatJson> object() {
    FlatJson out;
    if (!take('{')) return fail("expected '{'");
    if (take('}')) return end(std::move(out));
    do {
      auto key = string();
      if (!key) return key.error();
      if (!take(':')) return fail("expected ':' after \"" + *key + "\"");
      auto value = scalar();
      if (!value) return value.error();
      out.members[*key] = std::move(*value);
    } while (take(','));
    if (!take('}')) return fail("expected ',' or '}'");
    return end(std::move(out));
  }

 private:
  Error fail(const std::string& what) const { return Error(source_ + ": " + what + " at offset " + std::to_string(i_)); }

  void skipSpace() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }

  bool take(char ch) {
    skipSpace();
    if (i_ >= s_.size() || s_[i_] != ch) return false;
    ++i_;
    return true;
  }

  bool word(const std::string& w) {
    if (s_.compare(i_, w.size(), w) != 0) return false;
    i_ += w.size();
    return true;
  }

  Expected<FlatJson> end(FlatJson out) {
    skipSpace();
    if (i_ != s_.size()) return fail("unexpected text after the object");
    return out;
  }

  Expected<std::string> string() {
    if (!take('"')) return fail("expected a string");
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      char ch = s_[i_++];
      if (ch != '\\') {
        out += ch;
        continue;
      }
      if (i_ >= s_.size()) break;
      char e = s_[i_++];
      static const std::string from = "\"\\/bfnrt", to = "\"\\/\b\f\n\r\t";
      if (auto k = from.find(e); k != std::string::npos) {
        out += to[k];
      } else if (e == 'u' && i_ + 4 <= s_.size()) {
        unsigned code = static_cast<unsigned>(std::strtoul(s_.substr(i_, 4).c_str(), nullptr, 16));
        i_ += 4;
        if (code < 0x80) {  // names and URLs are ASCII; other code points are kept as UTF-8
          out += static_cast<char>(code);
        } else if (code < 0x800) {
          out += static_cast<char>(0xC0 | (code >> 6));
          out += static_cast<char>(0x80 | (code & 0x3F));
        } else {
          out += static_cast<char>(0xE0 | (code >> 12));
          out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
          out += static_cast<char>(0x80 | (code & 0x3F));
        }
      } else {
        return fail("bad escape in a string");
      }
    }
    if (!take('"')) return fail("unterminated string");
    return out;
  }

  Expected<JsonScalar> scalar() {
    skipSpace();
    if (i_ >= s_.size()) return fail("expected a value");
    char ch = s_[i_];
    if (ch == '"') {
      auto str = string();
      if (!str) return str.error();
      return JsonScalar(std::move(*str));
    }
    if (ch == '{' || ch == '[') return fail("nested objects and arrays are not read");
    if (word("true")) return JsonScalar(true);
    if (word("false")) return JsonScalar(false);
    if (word("null")) return JsonScalar();
    const char* begin = s_.c_str() + i_;
    char* stop = nullptr;
    double v = std::strtod(begin, &stop);
    if (stop == begin) return fail("expected a value");
    i_ += static_cast<size_t>(stop - begin);
    return JsonScalar(v);
  }

  const std::string& s_;
  const std::string& source_;
  size_t i_ = 0;
};

}  // namespace

std::optional<std::string> FlatJson::string(const std::string& key) const {
  auto it = members.find(key);
  if (it == members.end() || !std::holds_alternative<std::string>(it->second)) return std::nullopt;
  return std::get<std::string>(it->second);
}

std::optional<double> FlatJson::number(const std::string& key) const {
  auto it = members.find(key);
  if (it == members.end() || !std::holds_alternative<double>(it->second)) return std::nullopt;
  return std::get<double>(it->second);
}

Expected<FlatJson> parseFlatJson(const std::string& text, const std::string& source) { return Reader(text, source).object(); }

Expected<FlatJson> readFlatJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error("cannot open '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return parseFlatJson(text.str(), path);
}

}  // namespace kiln::cli
