// The .kiln lexer: splits source text into tokens that carry their 1-based line and column.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::frontend {

enum class Tok {
  Eof,
  Error,     // a lexical error; `value` holds the message and lexing stops here
  Ident,     // bare word: keywords, op names, dtypes, attribute names, true/false
  Global,    // @name
  ValueRef,  // %name or %123
  Int,       // -?[0-9]+, range-checked to int64 (`intValue`), or to u64 for u64 literals (`beyondInt64`)
  Float,     // -?[0-9]+(.[0-9]+)?([eE][+-]?[0-9]+)? with a '.' or exponent, or inf, -inf, nan
  String,    // "..."; `value` holds the decoded contents
  LParen,
  RParen,
  LBrace,
  RBrace,
  LBracket,
  RBracket,
  Comma,
  Colon,
  Equal,
  Arrow,  // ->
};

struct Token {
  Tok kind = Tok::Eof;
  std::string_view text;  // the spelling in the source, sigils included
  int line = 1;
  int col = 1;
  int64_t intValue = 0;
  // An Int in (2^63, 2^64): only a u64 constant may hold it. `intValue` has its bits.
  bool beyondInt64 = false;
  std::string value;  // decoded string contents, or an Error token's message

  bool is(Tok k) const { return kind == k; }
  bool isWord(std::string_view w) const { return kind == Tok::Ident && text == w; }
};

// Tokenises all of `text`. The last token is Eof, or Error at the first lexical error (the parser
// reports it when it gets there, so errors still come out in source order).
std::vector<Token> lex(std::string_view text);

// How a token reads in "expected X, got Y" messages: 'text' (shortened if long), a string, or
// "end of file".
std::string describe(const Token& t);

}  // namespace kiln::frontend
