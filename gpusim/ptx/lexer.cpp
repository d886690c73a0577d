// The PTX lexer: one pass over the text, no allocation per token (tokens view the text).
#include "gpusim/ptx/lexer.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <string>

namespace gpusim::ptx {
namespace {

bool isIdentStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%' || c == '.';
}
bool isIdentChar(char c) { return isIdentStart(c) || std::isdigit(static_cast<unsigned char>(c)); }

int hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    out.reserve(text_.size() / 4);
    for (;;) {
      skipSpaceAndComments();
      Token t;
      t.line = line_;
      if (pos_ >= text_.size()) {
        out.push_back(t);
        return out;
      }
      char c = text_[pos_];
      if (std::isdigit(static_cast<unsigned char>(c)) ||
          (c == '-' && pos_ + 1 < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_ + 1])))) {
        t = number();
      } else if (isIdentStart(c)) {
        size_t start = pos_;
        while (pos_ < text_.size() && isIdentChar(text_[pos_])) ++pos_;
        t.kind = Token::Kind::Ident;
        t.text = text_.substr(start, pos_ - start);
      } else if (c == '"') {
        size_t start = ++pos_;
        while (pos_ < text_.size() && text_[pos_] != '"' && text_[pos_] != '\n') ++pos_;
        t.kind = pos_ < text_.size() && text_[pos_] == '"' ? Token::Kind::String : Token::Kind::Error;
        t.text = text_.substr(start, pos_ - start);
        if (t.kind == Token::Kind::String) ++pos_;
      } else {
        t.kind = std::strchr(",;:{}[]()|!+-=<>@", c) ? Token::Kind::Punct : Token::Kind::Error;
        t.text = text_.substr(pos_++, 1);
      }
      t.line = line_;
      out.push_back(t);
    }
  }

 private:
  void skipSpaceAndComments() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == '\n') {
        ++line_;
        ++pos_;
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        ++pos_;
      } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '/') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '*') {
        pos_ += 2;
        while (pos_ < text_.size() && !(text_[pos_] == '*' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '/')) {
          if (text_[pos_] == '\n') ++line_;
          ++pos_;
        }
        pos_ = std::min(pos_ + 2, text_.size());
      } else {
        return;
      }
    }
  }

  // Integer, 0f/0d bit-pattern float, or decimal float. A malformed literal is an Error token.
  Token number() {
    Token t;
    size_t start = pos_;
    bool negative = text_[pos_] == '-';
    if (negative) ++pos_;
    size_t digits = pos_;
    auto fail = [&] {
      while (pos_ < text_.size() && isIdentChar(text_[pos_])) ++pos_;
      t.kind = Token::Kind::Error;
      t.text = text_.substr(start, pos_ - start);
      return t;
    };
    auto rest = text_.substr(digits);
    if (rest.size() >= 2 && rest[0] == '0' && (rest[1] == 'f' || rest[1] == 'F' || rest[1] == 'd' || rest[1] == 'D')) {
      size_t want = (rest[1] == 'f' || rest[1] == 'F') ? 8 : 16;
      pos_ = digits + 2;
      uint64_t bits = 0;
      size_t n = 0;
      for (; pos_ < text_.size() && hexDigit(text_[pos_]) >= 0; ++pos_, ++n) bits = bits << 4 | hexDigit(text_[pos_]);
      if (negative || n != want || (pos_ < text_.size() && isIdentChar(text_[pos_]))) return fail();
      t.kind = want == 8 ? Token::Kind::F32 : Token::Kind::F64;
      t.bits = bits;
      t.text = text_.substr(start, pos_ - start);
      return t;
    }
    // Decimal float: digits '.' digits, or with an exponent.
    size_t scan = digits;
    while (scan < text_.size() && std::isdigit(static_cast<unsigned char>(text_[scan]))) ++scan;
    if (scan < text_.size() && (text_[scan] == '.' || text_[scan] == 'e' || text_[scan] == 'E') &&
        !(rest.size() >= 2 && rest[0] == '0' && (rest[1] == 'x' || rest[1] == 'X'))) {
      std::string s(text_.substr(start, text_.size() - start > 64 ? 64 : text_.size() - start));
      char* end = nullptr;
      double v = std::strtod(s.c_str(), &end);
      pos_ = start + static_cast<size_t>(end - s.c_str());
      if (pos_ < text_.size() && isIdentChar(text_[pos_])) return fail();
      t.kind = Token::Kind::F64;
      std::memcpy(&t.bits, &v, 8);
      t.text = text_.substr(start, pos_ - start);
      return t;
    }
    uint64_t value = 0;
    unsigned base = 10;
    pos_ = digits;
    if (rest.size() >= 2 && rest[0] == '0' && (rest[1] == 'x' || rest[1] == 'X')) {
      base = 16;
      pos_ += 2;
    } else if (rest.size() >= 2 && rest[0] == '0' && (rest[1] == 'b' || rest[1] == 'B')) {
      base = 2;
      pos_ += 2;
    } else if (rest.size() >= 2 && rest[0] == '0' && std::isdigit(static_cast<unsigned char>(rest[1]))) {
      base = 8;
      pos_ += 1;
    }
    size_t first = pos_;
    bool overflow = false;
    for (; pos_ < text_.size(); ++pos_) {
      int d = hexDigit(text_[pos_]);
      if (d < 0 || static_cast<unsigned>(d) >= base) break;
      if (value > (UINT64_MAX - d) / base) overflow = true;
      value = value * base + d;
    }
    if (pos_ == first || overflow) return fail();
    if (pos_ < text_.size() && text_[pos_] == 'U') ++pos_;
    if (pos_ < text_.size() && isIdentChar(text_[pos_])) return fail();
    t.kind = Token::Kind::Int;
    t.bits = negative ? 0 - value : value;
    t.text = text_.substr(start, pos_ - start);
    return t;
  }

  std::string_view text_;
  size_t pos_ = 0;
  uint32_t line_ = 1;
};

}  // namespace

std::vector<Token> tokenize(std::string_view text) { return Lexer(text).run(); }

}  // namespace gpusim::ptx
