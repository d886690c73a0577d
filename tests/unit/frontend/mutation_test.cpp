// Robustness: thousands of seeded random edits of valid programs. Each must either parse (and then
// print and reparse to the same text) or fail with a located, lower-case message; never crash,
// hang or trip a sanitizer (CI runs this under ASan and UBSan).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <random>

#include "frontend/parser.h"
#include "ir/printer.h"

namespace kiln {
namespace {

const char* kSeeds[] = {
    // Broadcasting, attributes of every kind, constants of several dtypes.
    "# an mlp\n"
    "func @main(%x: f32[4,8], %w: f32[8,3], %b: f32[3], %i: i64[4]) -> (f32[4,3], i64[4,1]) {\n"
    "  %h = matmul %x, %w\n"
    "  %y = add %h, %b : f32[4,3]\n"
    "  %s = softmax %y {axis = -1}\n"
    "  %g = gelu %s {approximate = \"tanh\"}\n"
    "  %c = constant [[1.5, -2.0, 1e-5], [inf, 0.0, -3]] : f32[2,3]\n"
    "  %r = reduce_sum %c {axes = [0], keepdims = true}\n"
    "  %m = constant true : bool[4,3]\n"
    "  %t = select %m, %g, %r\n"
    "  %k = cast %t {to = i32}\n"
    "  %q = reshape %i {shape = [4, -1]}\n"
    "  return %t, %q\n"
    "}\n",
    // Regions: while and map, with values from outside.
    "func @loop(%i0: i32[], %x0: f32[3], %limit: i32[], %xs: f32[8,16], %ss: f32[8]) -> (i32[], f32[8,16]) {\n"
    "  %n, %y = while %i0, %x0 (%i: i32[], %x: f32[3]) cond {\n"
    "    %c = lt %i, %limit\n"
    "    yield %c\n"
    "  } body {\n"
    "    %one = constant 1 : i32[]\n"
    "    %i1 = add %i, %one\n"
    "    %x1 = sqrt %x\n"
    "    yield %i1, %x1\n"
    "  } : i32[], f32[3]\n"
    "  %ys = map %xs, %ss (%v: f32[16], %s: f32[]) {\n"
    "    %t = mul %v, %s\n"
    "    yield %t\n"
    "  }\n"
    "  return %n, %ys\n"
    "}\n",
    // Layout and library ops with list attributes, several functions.
    "func @cnn(%x: f32[1,2,8,8], %w: f32[4,2,3,3]) -> f32[1,4,3,3] {\n"
    "  %c = conv2d %x, %w {strides = [1, 1], pads = [1, 1, 1, 1]}\n"
    "  %p = max_pool2d %c {kernel = [2, 2]}\n"
    "  %s = slice %p {starts = [0, 0, 0, 0], ends = [1, 4, 3, 3], steps = [1, 1, 1, 1]}\n"
    "  return %s\n"
    "}\n"
    "func @main(%a: f32[2,3], %e: i64[2]) -> (f32[3,2], f32[4,3], f32[2,3]) {\n"
    "  %t = transpose %a {perm = [1, 0]}\n"
    "  %c = concat %a, %a {axis = 0}\n"
    "  %g = gather %a, %e {axis = 0}\n"
    "  %p = pad %g {pads = [0, 0, 0, 0], value = 0.5}\n"
    "  %i = iota {axis = 1} : f32[2,3]\n"
    "  %z = add %p, %i\n"
    "  return %t, %c, %z\n"
    "}\n",
    // Every dtype in a constant, numbered names, parenthesised operands, no results.
    "func @consts() -> (bool[2], i8[2], i32[], i64[2], f16[2], bf16[], f64[]) {\n"
    "  %0 = constant [true, false] : bool[2]\n"
    "  %1 = constant [-128, 127] : i8[2]\n"
    "  %2 = constant 7 : i32[]\n"
    "  %3 = constant [-9223372036854775808, 9223372036854775807] : i64[2]\n"
    "  %4 = constant [0.1, 65504.0] : f16[2]\n"
    "  %5 = constant -2.5e3 : bf16[]\n"
    "  %6 = constant nan : f64[]\n"
    "  %7 = add (%2, %2)\n"
    "  return %0, %1, %7, %3, %4, %5, %6\n"
    "}\n"
    "func @empty() -> () {\n"
    "  return\n"
    "}\n",
};

// Fragments worth inserting: they reach deeper into the grammar than random bytes do.
const char* kFragments[] = {
    "%x",    "%0",    "%ys",   "@main", "func", "return", "yield", "map",  "while", "cond",  "body",   "constant",
    "iota",  "add",   "neg",   "f32",   "i8",   "bool",   "[",     "]",    "{",     "}",     "(",      ")",
    ",",     ":",     "=",     "->",    "#",    "\n",     "\"",    "\\",   "-",     "1e999", "-inf",   "nan",
    "0",     "-1",    "1.5",   "true",  "[]",   "f32[]",  " ",     "\t",   "\xff",  "\0",    "99999999999999999999",
    "{axis = 0}", "(%q: f32[])", ": f32[4,3]", "[[1, 2], [3, 4]]", "reduce_sum", "keepdims", "axes",
    "9223372036854775807", "-9223372036854775808", "4611686018427387904", "281474976710656"};

std::string mutate(std::string s, std::mt19937& rng) {
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  int edits = 1 + static_cast<int>(pick(3));
  for (int e = 0; e < edits; ++e) {
    size_t pos = pick(s.size() + 1);
    size_t len = 1 + pick(std::min<size_t>(12, s.size() - pos + 1));
    len = std::min(len, s.size() - pos);
    switch (pick(5)) {
      case 0: s.erase(pos, len); break;                                          // delete a span
      case 1: {                                                                  // insert random bytes
        std::string bytes;
        for (size_t i = 0, n = 1 + pick(4); i < n; ++i) bytes += static_cast<char>(pick(256));
        s.insert(pos, bytes);
        break;
      }
      case 2: {                                                                  // insert a fragment
        const char* f = kFragments[pick(std::size(kFragments))];
        s.insert(pos, f[0] == '\0' ? std::string(1, '\0') : std::string(f));
        break;
      }
      case 3: s.replace(pos, len, std::string(1, static_cast<char>(pick(128)))); break;  // replace a span
      case 4: s.insert(pick(s.size() + 1), s.substr(pos, len)); break;                   // duplicate a span
    }
  }
  return s;
}

// An error names the input, a real line and column, and starts lower-case.
void expectWellFormedError(const Error& e, const std::string& text) {
  ASSERT_TRUE(e.loc().known()) << e.str();
  EXPECT_EQ(e.loc().file, "fuzz.kiln");
  int lines = 1 + static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  EXPECT_GE(e.loc().line, 1);
  EXPECT_LE(e.loc().line, lines) << e.str();
  EXPECT_GE(e.loc().col, 1);
  EXPECT_LE(e.loc().col, static_cast<int>(text.size()) + 1) << e.str();
  ASSERT_FALSE(e.message().empty());
  EXPECT_FALSE(std::isupper(static_cast<unsigned char>(e.message()[0]))) << e.str();
}

// KILN_MUTATIONS=N runs N edits per seed instead (a longer fuzzing session); KILN_MUTATION_SEED
// picks another random sequence.
int envOr(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

TEST(Mutation, RandomEditsNeverCrashAndParsesAreStable) {
  const int kPerSeed = envOr("KILN_MUTATIONS", 3000);
  std::mt19937 rng(static_cast<unsigned>(envOr("KILN_MUTATION_SEED", 20240611)));
  int parsed = 0, rejected = 0;
  for (const char* seed : kSeeds) {
    auto original = parseModule(seed, "seed.kiln");
    ASSERT_TRUE(original.ok()) << original.error().str();
    for (int i = 0; i < kPerSeed; ++i) {
      std::string text = mutate(seed, rng);
      auto m = parseModule(text, "fuzz.kiln");
      if (!m.ok()) {
        ++rejected;
        expectWellFormedError(m.error(), text);
        if (::testing::Test::HasFailure()) FAIL() << "input:\n" << text;
        continue;
      }
      ++parsed;
      std::string printed = printModule(**m);
      auto again = parseModule(printed, "printed.kiln");
      ASSERT_TRUE(again.ok()) << again.error().str() << "\nprinted:\n" << printed << "\ninput:\n" << text;
      ASSERT_EQ(printModule(**again), printed) << "input:\n" << text;
    }
  }
  // Both outcomes must be exercised, or the edits are too tame (or too wild) to test anything.
  EXPECT_GT(parsed, kPerSeed / 30);
  EXPECT_GT(rejected, kPerSeed / 3);
}

}  // namespace
}  // namespace kiln
