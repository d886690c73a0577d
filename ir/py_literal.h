// A parser for the Python literals that .npy headers are written in: the subset of ast.literal_eval
// that can describe an array (strings, ints, True/False/None, tuples, lists, dicts).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

struct PyValue {
  enum class Kind { Str, Int, Bool, None, Tuple, List, Dict };
  Kind kind = Kind::None;
  std::string text;  // Str: the contents; Int: the digits as written (kept for messages)
  int64_t i = 0;
  bool overflow = false;       // Int: does not fit in int64
  bool b = false;              // Bool
  std::vector<PyValue> items;  // Tuple and List; Dict as key, value, key, value, ...
};

struct PyParse {
  std::optional<PyValue> value;  // empty on failure
  std::string error;             // what was expected, and at which byte
  size_t errorPos = 0;
};
// Parses `text` as one literal followed only by whitespace and comments. Never reads past `text`;
// nesting deeper than 32 levels is an error rather than deep recursion.
PyParse parsePyLiteral(std::string_view text);

// Python's repr of a value, and of a string (quoted, non-printable bytes escaped).
std::string pyRepr(const PyValue& v);
std::string pyQuote(std::string_view s);

}  // namespace kiln
