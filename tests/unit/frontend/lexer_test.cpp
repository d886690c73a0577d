// The lexer: token kinds, positions, number and string forms, and the error token.
#include <gtest/gtest.h>

#include "frontend/lexer.h"

namespace kiln::frontend {
namespace {

std::string kinds(std::string_view text) {
  static const char* names[] = {"eof", "error", "ident", "global", "value", "int",   "float", "string", "(",
                                ")",   "{",     "}",     "[",      "]",     ",",     ":",     "=",      "->"};
  std::string out;
  for (const Token& t : lex(text)) out += std::string(out.empty() ? "" : " ") + names[static_cast<int>(t.kind)];
  return out;
}

// The one token `text` holds: followed by Eof, or an Error token, which ends the stream itself.
Token single(std::string_view text) {
  auto tokens = lex(text);
  EXPECT_EQ(tokens.size(), tokens[0].is(Tok::Error) ? 1u : 2u) << text;
  return tokens[0];
}

TEST(Lexer, TokenKinds) {
  EXPECT_EQ(kinds("func @main(%x: f32[2,3]) -> () {}"),
            "ident global ( value : ident [ int , int ] ) -> ( ) { } eof");
  EXPECT_EQ(kinds("%y = add %0, %a.b_1 {axis = -1, eps = 1e-5, s = \"x\"}"),
            "value = ident value , value { ident = int , ident = float , ident = string } eof");
  EXPECT_EQ(kinds("inf -inf nan infinity"), "float float float ident eof");
  EXPECT_EQ(kinds(""), "eof");
  EXPECT_EQ(kinds("# only a comment \xff\x00 with any bytes"), "eof");
}

TEST(Lexer, PositionsAreOneBasedAndTabsCountOne) {
  auto tokens = lex("a\n\tb  c\r\n  # note\n d");
  ASSERT_EQ(tokens.size(), 5u);
  EXPECT_EQ((std::pair{tokens[0].line, tokens[0].col}), (std::pair{1, 1}));
  EXPECT_EQ((std::pair{tokens[1].line, tokens[1].col}), (std::pair{2, 2}));
  EXPECT_EQ((std::pair{tokens[2].line, tokens[2].col}), (std::pair{2, 5}));
  EXPECT_EQ((std::pair{tokens[3].line, tokens[3].col}), (std::pair{4, 2}));
  EXPECT_EQ((std::pair{tokens[4].line, tokens[4].col}), (std::pair{4, 3}));  // end of file
}

TEST(Lexer, Integers) {
  EXPECT_EQ(single("0").intValue, 0);
  EXPECT_EQ(single("-42").intValue, -42);
  EXPECT_EQ(single("007").intValue, 7);
  EXPECT_EQ(single("9223372036854775807").intValue, INT64_MAX);
  EXPECT_EQ(single("-9223372036854775808").intValue, INT64_MIN);
  // Beyond int64 only up to 2^64 - 1, for u64 constants: the parser checks where it is used.
  EXPECT_TRUE(single("9223372036854775808").beyondInt64);
  EXPECT_EQ(single("18446744073709551615").intValue, -1);
  EXPECT_FALSE(single("9223372036854775807").beyondInt64);
  for (const char* huge : {"18446744073709551616", "-9223372036854775809", "99999999999999999999999"}) {
    Token t = single(huge);
    EXPECT_EQ(t.kind, Tok::Error) << huge;
    EXPECT_EQ(t.value, "integer literal out of range (it must fit in 64 bits)");
  }
}

TEST(Lexer, Floats) {
  for (const char* f : {"1.5", "-2.0e3", "1e-5", "2E+10", "0.0", "-0.5"}) {
    Token t = single(f);
    EXPECT_EQ(t.kind, Tok::Float) << f;
    EXPECT_EQ(t.text, f);
  }
  EXPECT_EQ(single("1.").value, "expected a digit after '.' in a number");
  EXPECT_EQ(single("1e+").value, "expected a digit in the exponent of a number");
  EXPECT_EQ(single("12ab").value, "invalid number '12ab'");
  EXPECT_EQ(single("1.5.2").value, "invalid number '1.5.2'");
}

TEST(Lexer, Strings) {
  Token t = single(R"("a\"b\\c\nd	e")");
  EXPECT_EQ(t.kind, Tok::String);
  EXPECT_EQ(t.value, "a\"b\\c\nd\te");
  EXPECT_EQ(single("\"abc").value, "unterminated string");
  EXPECT_EQ(single("\"abc\\").value, "unterminated string");
  auto newline = lex("\"ab\ncd\"");
  EXPECT_EQ(newline[0].value, "unterminated string");
  EXPECT_EQ(newline[0].col, 1);
  Token esc = single(R"("a\tb")");
  EXPECT_EQ(esc.value, "unknown escape sequence '\\t' in string (use \\\", \\\\ or \\n)");
  EXPECT_EQ(esc.col, 3);
  EXPECT_EQ(single("\"\xc3\xa9\"").value, "unexpected character '\\xc3' in string");
}

TEST(Lexer, ErrorsStopTheTokenStream) {
  auto tokens = lex("%x = neg $y %z");
  ASSERT_EQ(tokens.size(), 4u);
  EXPECT_EQ(tokens[3].kind, Tok::Error);
  EXPECT_EQ(tokens[3].value, "unexpected character '$'");
  EXPECT_EQ(tokens[3].col, 10);
  EXPECT_EQ(single(std::string_view("\0", 1)).value, "unexpected character '\\x00'");
  EXPECT_EQ(single("\x80").value, "unexpected character '\\x80'");
  EXPECT_EQ(single("%").value, "expected a value name after '%', got end of file");
  EXPECT_EQ(single("@ main").value, "expected a function name after '@', got ' '");
  EXPECT_EQ(single("%1x").value, "invalid name '%1x': a name starts with a letter or '_' or is all digits");
  EXPECT_EQ(single("@1").value, "invalid name '@1': a name starts with a letter or '_'");
  EXPECT_EQ(single("-").value, "unexpected character '-'");
}

TEST(Lexer, DescribeShortensLongTokens) {
  EXPECT_EQ(describe(lex("")[0]), "end of file");
  EXPECT_EQ(describe(lex("{")[0]), "'{'");
  EXPECT_EQ(describe(lex("\"s\"")[0]), "string \"s\"");
  EXPECT_EQ(describe(lex(std::string(40, 'x'))[0]), "'" + std::string(32, 'x') + "...'");
}

}  // namespace
}  // namespace kiln::frontend
