// A cursor over the lexer's tokens, with the "expected X, got Y" error helpers the parser shares.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "frontend/lexer.h"
#include "ir/status.h"

namespace kiln::frontend {

class Cursor {
 public:
  Cursor(std::string_view text, std::string file) : tokens_(lex(text)), file_(std::move(file)) {}

  // The token k places ahead; the final Eof/Error token repeats past the end.
  const Token& peek(size_t k = 0) const {
    size_t i = pos_ + k;
    return i < tokens_.size() ? tokens_[i] : tokens_.back();
  }
  // Consumes the current token. The final Eof/Error token is never consumed.
  const Token& next() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool at(Tok k) const { return peek().is(k); }
  bool atWord(std::string_view w) const { return peek().isWord(w); }
  bool consumeIf(Tok k) {
    if (!at(k)) return false;
    next();
    return true;
  }

  SourceLoc loc(const Token& t) const { return {file_, t.line, t.col}; }
  static std::string lineCol(const Token& t) { return std::to_string(t.line) + ":" + std::to_string(t.col); }
  Error error(const Token& t, std::string message) const { return Error(std::move(message), loc(t)); }

  // "expected WHAT, got TOKEN" at the current token. A lexical error there is reported instead:
  // it is the real problem, and it keeps errors in source order.
  Error unexpected(std::string_view what) const {
    const Token& t = peek();
    if (t.is(Tok::Error)) return error(t, t.value);
    return error(t, "expected " + std::string(what) + ", got " + describe(t));
  }
  // Consumes a token of kind k, or fails with unexpected(what).
  Expected<const Token*> expect(Tok k, std::string_view what) {
    if (!at(k)) return unexpected(what);
    return &next();
  }

 private:
  std::vector<Token> tokens_;  // never modified after construction, so Token pointers stay valid
  size_t pos_ = 0;
  std::string file_;
};

}  // namespace kiln::frontend
