// Parsing and printing of the Python literals in .npy headers.
#include "ir/py_literal.h"

namespace kiln {

namespace {

constexpr int kMaxNesting = 32;  // deeper literals are not headers; the limit keeps the parser's stack small

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  // The whole text: one value, then only whitespace (the padding).
  std::optional<PyValue> parse() {
    std::optional<PyValue> v = value(0);
    if (!v) return std::nullopt;
    skipSpace();
    if (pos_ != text_.size()) return fail("unexpected text after the dict");
    return v;
  }
  // Set when parse() fails: what was expected, and where.
  const std::string& error() const { return error_; }
  size_t errorPos() const { return errorPos_; }

 private:
  std::nullopt_t fail(const std::string& what) {
    if (error_.empty()) {
      error_ = what + " at byte " + std::to_string(pos_) + " of the header";
      errorPos_ = pos_;
    }
    return std::nullopt;
  }
  bool atEnd() const { return pos_ >= text_.size(); }
  char peek() const { return atEnd() ? '\0' : text_[pos_]; }
  void skipSpace() {
    while (!atEnd()) {
      char c = text_[pos_];
      if (c == '#') {  // a comment runs to the end of the line
        while (!atEnd() && text_[pos_] != '\n') ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
        ++pos_;
      } else {
        return;
      }
    }
  }
  bool eat(char c) {
    skipSpace();
    if (peek() != c) return false;
    ++pos_;
    return true;
  }

  std::optional<PyValue> value(int depth) {
    if (depth > kMaxNesting) return fail("literal nested too deeply");
    skipSpace();
    if (atEnd()) return fail("unexpected end of the header");
    char c = peek();
    if (c == '{') return sequence(depth, PyValue::Kind::Dict, '}');
    if (c == '(') return sequence(depth, PyValue::Kind::Tuple, ')');
    if (c == '[') return sequence(depth, PyValue::Kind::List, ']');
    if (c == '\'' || c == '"') return string();
    if ((c == 'u' || c == 'U') && pos_ + 1 < text_.size() && (text_[pos_ + 1] == '\'' || text_[pos_ + 1] == '"')) {
      ++pos_;  // u'...' from Python 2 writers
      return string();
    }
    if (c == '-' || c == '+' || (c >= '0' && c <= '9')) return integer();
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') return name();
    return fail("unexpected character " + pyQuote(std::string_view(&text_[pos_], 1)));
  }

  // {k: v, ...}, (a, b, ...), [a, b, ...]; trailing commas allowed; (x) without a comma is x itself.
  std::optional<PyValue> sequence(int depth, PyValue::Kind kind, char close) {
    ++pos_;  // the opening bracket
    PyValue out;
    out.kind = kind;
    bool sawComma = false;
    while (!eat(close)) {
      if (!out.items.empty() && !sawComma) return fail(std::string("expected ',' or '") + close + "'");
      std::optional<PyValue> item = value(depth + 1);
      if (!item) return std::nullopt;
      out.items.push_back(std::move(*item));
      if (kind == PyValue::Kind::Dict) {
        if (!eat(':')) return fail("expected ':' after a dict key");
        std::optional<PyValue> v = value(depth + 1);
        if (!v) return std::nullopt;
        out.items.push_back(std::move(*v));
      }
      sawComma = eat(',');
      if (atEnd()) return fail(std::string("expected '") + close + "' before the end of the header");
    }
    if (kind == PyValue::Kind::Tuple && out.items.size() == 1 && !sawComma) return std::move(out.items[0]);
    return out;
  }

  std::optional<PyValue> string() {
    char quote = text_[pos_++];
    PyValue out;
    out.kind = PyValue::Kind::Str;
    while (true) {
      if (atEnd() || peek() == '\n') return fail("unterminated string");
      char c = text_[pos_++];
      if (c == quote) return out;
      if (c != '\\') {
        out.text += c;
        continue;
      }
      if (atEnd()) return fail("unterminated string");
      char e = text_[pos_++];
      switch (e) {
        case 'n': out.text += '\n'; break;
        case 't': out.text += '\t'; break;
        case 'r': out.text += '\r'; break;
        case '0': out.text += '\0'; break;
        case '\\': case '\'': case '"': out.text += e; break;
        default: out.text += '\\', out.text += e; break;  // Python keeps unknown escapes as written
      }
    }
  }

  // A decimal integer: optional sign, digits with optional '_' separators, an optional Python 2 'L'.
  std::optional<PyValue> integer() {
    PyValue out;
    out.kind = PyValue::Kind::Int;
    bool negative = false;
    while (peek() == '-' || peek() == '+') {
      if (peek() == '-') negative = !negative;
      ++pos_;
      skipSpace();
    }
    if (!(peek() >= '0' && peek() <= '9')) return fail("expected a number");
    uint64_t magnitude = 0;
    while (!atEnd()) {
      char c = peek();
      if (c == '_' && pos_ + 1 < text_.size() && text_[pos_ + 1] >= '0' && text_[pos_ + 1] <= '9') {
        ++pos_;
        continue;
      }
      if (c < '0' || c > '9') break;
      out.text += c;
      uint64_t digit = static_cast<uint64_t>(c - '0');
      out.overflow |= magnitude > (UINT64_MAX - digit) / 10;
      if (!out.overflow) magnitude = magnitude * 10 + digit;
      ++pos_;
    }
    if (peek() == 'L' || peek() == 'l') ++pos_;
    if (peek() == '.' || peek() == 'e' || peek() == 'E' || peek() == 'x' || peek() == 'j')
      return fail("expected an integer");
    // |INT64_MIN| is one more than INT64_MAX; negate in unsigned arithmetic, where wrapping is defined.
    uint64_t limit = static_cast<uint64_t>(INT64_MAX) + (negative ? 1 : 0);
    out.overflow |= magnitude > limit;
    if (negative) out.text = "-" + out.text;
    if (!out.overflow) out.i = static_cast<int64_t>(negative ? ~magnitude + 1 : magnitude);
    return out;
  }

  std::optional<PyValue> name() {
    size_t start = pos_;
    while (!atEnd()) {
      char c = peek();
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) break;
      ++pos_;
    }
    std::string_view word = text_.substr(start, pos_ - start);
    PyValue out;
    if (word == "True" || word == "False") {
      out.kind = PyValue::Kind::Bool;
      out.b = word == "True";
      return out;
    }
    if (word == "None") return out;
    pos_ = start;
    return fail("unexpected name " + pyQuote(word) + " (expected a string, a number, True, False or a tuple)");
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::string error_;
  size_t errorPos_ = 0;
};

}  // namespace

PyParse parsePyLiteral(std::string_view text) {
  Parser parser(text);
  PyParse out;
  out.value = parser.parse();
  out.error = parser.error();
  out.errorPos = parser.errorPos();
  return out;
}

// Python's repr of a string: quoted ('...', or "..." when it holds a ' but no "), with non-printable bytes
// escaped (header bytes may be anything).
std::string pyQuote(std::string_view s) {
  static const char* kHex = "0123456789abcdef";
  char quote = s.find('\'') != std::string_view::npos && s.find('"') == std::string_view::npos ? '"' : '\'';
  std::string out(1, quote);
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == quote || c == '\\') {
      out += '\\';
      out += c;
    } else if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out + quote;
}

std::string pyRepr(const PyValue& v) {
  switch (v.kind) {
    case PyValue::Kind::Str: return pyQuote(v.text);
    case PyValue::Kind::Int: return v.text;
    case PyValue::Kind::Bool: return v.b ? "True" : "False";
    case PyValue::Kind::None: return "None";
    case PyValue::Kind::Tuple:
    case PyValue::Kind::List: {
      bool tuple = v.kind == PyValue::Kind::Tuple;
      std::string out = tuple ? "(" : "[";
      for (size_t k = 0; k < v.items.size(); ++k) out += (k ? ", " : "") + pyRepr(v.items[k]);
      if (tuple && v.items.size() == 1) out += ",";
      return out + (tuple ? ")" : "]");
    }
    case PyValue::Kind::Dict: {
      std::string out = "{";
      for (size_t k = 0; k + 1 < v.items.size(); k += 2)
        out += (k ? ", " : "") + pyRepr(v.items[k]) + ": " + pyRepr(v.items[k + 1]);
      return out + "}";
    }
  }
  return "?";
}

}  // namespace kiln
