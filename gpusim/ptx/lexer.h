// PTX text -> tokens with 1-based line numbers. Comments (// and /* */) are skipped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpusim::ptx {

struct Token {
  enum class Kind : uint8_t {
    End,     // end of input
    Ident,   // directives (.reg), opcodes with modifiers (ld.global.nc.f32), registers (%r1, %tid.x),
             // labels ($L__BB0_2) and names (__cudart_i2opi_d): letters, digits, _ $ % .
    Int,     // integer literal (decimal, 0x hex, 0 octal, 0b binary; optional U suffix; a leading
             // '-' is part of the literal): `bits` holds its two's complement value
    F32,     // 0fXXXXXXXX: `bits` holds the f32 bit pattern
    F64,     // 0dXXXXXXXXXXXXXXXX, or a decimal literal such as 1.5: `bits` holds the f64 bit pattern
    String,  // "..." (text without the quotes)
    Punct,   // one of , ; : { } [ ] ( ) | ! + - = < > @
    Error,   // a character PTX does not use; text holds it
  };
  Kind kind = Kind::End;
  std::string_view text;
  uint64_t bits = 0;
  uint32_t line = 0;

  bool is(char c) const { return kind == Kind::Punct && text.size() == 1 && text[0] == c; }
};

// Splits the whole text; the last token is End.
std::vector<Token> tokenize(std::string_view text);

}  // namespace gpusim::ptx
