// The .kiln lexer: one pass over the bytes, tracking line and column (a tab is one column).
#include "frontend/lexer.h"

#include <cstdio>

namespace kiln::frontend {

namespace {

bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isNameChar(char c) { return isNameStart(c) || isDigit(c) || c == '.'; }

// A byte as it should appear in a message: 'x', or '\xNN' for anything not printable ASCII.
std::string quoteChar(char c) {
  auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return std::string("'") + c + "'";
  char buf[8];
  std::snprintf(buf, sizeof buf, "'\\x%02x'", u);
  return buf;
}

class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}

  std::vector<Token> run() {
    std::vector<Token> tokens;
    for (;;) {
      skipSpaceAndComments();
      tokens.push_back(next());
      if (tokens.back().is(Tok::Eof) || tokens.back().is(Tok::Error)) return tokens;
    }
  }

 private:
  char peek(size_t k = 0) const { return pos_ + k < text_.size() ? text_[pos_ + k] : '\0'; }
  bool atEnd() const { return pos_ >= text_.size(); }

  void advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }

  void skipSpaceAndComments() {
    while (!atEnd()) {
      char c = peek();
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        advance();
      } else if (c == '#') {
        // Comments may hold any bytes (UTF-8 prose included); they end at the newline.
        while (!atEnd() && peek() != '\n') advance();
      } else {
        return;
      }
    }
  }

  Token start(Tok kind) {
    Token t;
    t.kind = kind;
    t.line = line_;
    t.col = col_;
    startPos_ = pos_;
    return t;
  }

  Token finish(Token t) {
    t.text = text_.substr(startPos_, pos_ - startPos_);
    return t;
  }

  Token error(Token t, std::string message) {
    t.kind = Tok::Error;
    t.value = std::move(message);
    return finish(std::move(t));
  }

  Token punct(Tok kind, int length) {
    Token t = start(kind);
    for (int i = 0; i < length; ++i) advance();
    return finish(std::move(t));
  }

  Token next() {
    if (atEnd()) return start(Tok::Eof);
    char c = peek();
    switch (c) {
      case '(': return punct(Tok::LParen, 1);
      case ')': return punct(Tok::RParen, 1);
      case '{': return punct(Tok::LBrace, 1);
      case '}': return punct(Tok::RBrace, 1);
      case '[': return punct(Tok::LBracket, 1);
      case ']': return punct(Tok::RBracket, 1);
      case ',': return punct(Tok::Comma, 1);
      case ':': return punct(Tok::Colon, 1);
      case '=': return punct(Tok::Equal, 1);
      case '"': return string();
      case '@': return sigilName(Tok::Global, "a function name after '@'");
      case '%': return sigilName(Tok::ValueRef, "a value name after '%'");
      default: break;
    }
    // '-' only ever starts a negative number, -inf, or the arrow.
    if (c == '-' && peek(1) == '>') return punct(Tok::Arrow, 2);
    if (isDigit(c) || (c == '-' && isDigit(peek(1)))) return number();
    if (c == '-' && text_.substr(pos_ + 1, 3) == "inf" && !isNameChar(peek(4))) return punct(Tok::Float, 4);
    if (isNameStart(c)) return word();
    Token t = start(Tok::Error);
    return error(std::move(t), "unexpected character " + quoteChar(c));
  }

  Token word() {
    Token t = start(Tok::Ident);
    while (!atEnd() && isNameChar(peek())) advance();
    t = finish(std::move(t));
    if (t.text == "inf" || t.text == "nan") t.kind = Tok::Float;
    return t;
  }

  // @name / %name: NAME := [A-Za-z_][A-Za-z0-9_.]*; values may also be numbered (%0).
  Token sigilName(Tok kind, const char* what) {
    Token t = start(kind);
    advance();
    size_t nameStart = pos_;
    while (!atEnd() && isNameChar(peek())) advance();
    std::string_view name = text_.substr(nameStart, pos_ - nameStart);
    if (name.empty()) return error(std::move(t), std::string("expected ") + what + ", got " + describeNext());
    bool numbered = kind == Tok::ValueRef && name.find_first_not_of("0123456789") == std::string_view::npos;
    if (!numbered && !isNameStart(name[0]))
      return error(std::move(t), "invalid name '" + std::string(text_.substr(startPos_, pos_ - startPos_)) +
                                     "': a name starts with a letter or '_'" +
                                     (kind == Tok::ValueRef ? " or is all digits" : ""));
    return finish(std::move(t));
  }

  std::string describeNext() const {
    if (atEnd()) return "end of file";
    return quoteChar(peek());
  }

  Token number() {
    Token t = start(Tok::Int);
    bool negative = peek() == '-';
    if (negative) advance();
    // Accumulate the magnitude as unsigned so the most negative int64 is representable.
    uint64_t magnitude = 0;
    bool overflow = false;
    while (isDigit(peek())) {
      uint64_t digit = static_cast<uint64_t>(peek() - '0');
      if (magnitude > (UINT64_MAX - digit) / 10) overflow = true;
      else magnitude = magnitude * 10 + digit;
      advance();
    }
    if (peek() == '.') {
      t.kind = Tok::Float;
      advance();
      if (!isDigit(peek())) return error(std::move(t), "expected a digit after '.' in a number");
      while (isDigit(peek())) advance();
    }
    if (peek() == 'e' || peek() == 'E') {
      t.kind = Tok::Float;
      advance();
      if (peek() == '+' || peek() == '-') advance();
      if (!isDigit(peek())) return error(std::move(t), "expected a digit in the exponent of a number");
      while (isDigit(peek())) advance();
    }
    if (isNameChar(peek())) {
      while (isNameChar(peek())) advance();
      return error(std::move(t), "invalid number '" + std::string(text_.substr(startPos_, pos_ - startPos_)) + "'");
    }
    if (t.kind == Tok::Int) {
      if (overflow || (negative && magnitude > uint64_t{1} << 63))
        return error(std::move(t), "integer literal out of range (it must fit in 64 bits)");
      t.beyondInt64 = !negative && magnitude > uint64_t{INT64_MAX};
      t.intValue = negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
    }
    return finish(std::move(t));
  }

  // "..." with the escapes \" \\ \n; a string ends on its line.
  Token string() {
    Token t = start(Tok::String);
    advance();
    for (;;) {
      if (atEnd() || peek() == '\n') {
        pos_ = startPos_;  // report at the opening quote
        return error(std::move(t), "unterminated string");
      }
      char c = peek();
      if (c == '"') {
        advance();
        return finish(std::move(t));
      }
      if (c == '\\') {
        char e = peek(1);
        if (pos_ + 1 >= text_.size() || e == '\n') {
          advance();  // the loop then reports the string as unterminated
          continue;
        }
        if (e != '"' && e != '\\' && e != 'n') {
          Token bad = start(Tok::Error);
          advance();
          advance();
          return error(std::move(bad), "unknown escape sequence '\\" + quoteChar(e).substr(1) +
                                           " in string (use \\\", \\\\ or \\n)");
        }
        t.value += e == 'n' ? '\n' : e;
        advance();
        advance();
        continue;
      }
      auto u = static_cast<unsigned char>(c);
      if ((u < 0x20 && c != '\t') || u >= 0x7f) {
        Token bad = start(Tok::Error);
        advance();
        return error(std::move(bad), "unexpected character " + quoteChar(c) + " in string");
      }
      t.value += c;
      advance();
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
  size_t startPos_ = 0;
  int line_ = 1;
  int col_ = 1;
};

}  // namespace

std::vector<Token> lex(std::string_view text) { return Lexer(text).run(); }

std::string describe(const Token& t) {
  if (t.is(Tok::Eof)) return "end of file";
  constexpr size_t kMax = 32;
  std::string_view s = t.text;
  std::string shown = s.size() > kMax ? std::string(s.substr(0, kMax)) + "..." : std::string(s);
  if (t.is(Tok::String)) return "string " + shown;
  return "'" + shown + "'";
}

}  // namespace kiln::frontend
