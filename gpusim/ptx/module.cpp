// Names and sizes of the decoded form's enums, for reports and the parser.
#include "gpusim/ptx/module.h"

namespace gpusim::ptx {

const char* typeName(Type t) {
  static const char* const kNames[] = {
      "", ".pred", ".b8", ".b16", ".b32", ".b64", ".b128", ".u8", ".u16", ".u32", ".u64",
      ".s8", ".s16", ".s32", ".s64", ".f16", ".f16x2", ".bf16", ".bf16x2", ".f32", ".f64",
  };
  auto i = static_cast<size_t>(t);
  return i < sizeof(kNames) / sizeof(kNames[0]) ? kNames[i] : "?";
}

const char* opName(Op op) {
  static const char* const kNames[] = {
      "add", "sub", "mul", "mad", "fma", "div", "rem", "abs", "neg", "min", "max", "addc", "subc", "madc",
      "rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos", "tanh", "copysign", "testp",
      "and", "or", "xor", "not", "cnot", "shl", "shr", "bfe", "bfi", "clz", "popc", "brev", "prmt",
      "mov", "cvt", "cvta", "setp", "selp", "slct",
      "ld", "ldu", "st", "atom", "red", "membar", "fence", "prefetch",
      "bra", "call", "ret", "exit", "trap", "brkpt", "nanosleep",
      "shfl.sync", "vote.sync", "match.sync", "redux.sync", "bar.sync", "bar.arrive", "bar.warp.sync", "activemask",
  };
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(Op::Activemask) + 1);
  return kNames[static_cast<size_t>(op)];
}

}  // namespace gpusim::ptx
