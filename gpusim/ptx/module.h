// A PTX module decoded once into a compact form the interpreter runs without looking at text again.
//
// Registers are untyped bits: every register (predicates included) is a 64-bit slot in its
// function's register file, and each instruction reads and writes the width its type says. Symbols
// (kernel parameters, module globals, .shared/.local variables, labels, callees) are resolved at
// decode time, so an instruction holds indices and offsets, never names.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpusim::ptx {

// Every opcode the interpreter knows. The parser rejects any other with the line it is on.
enum class Op : uint8_t {
  // integer and float arithmetic
  Add, Sub, Mul, Mad, Fma, Div, Rem, Abs, Neg, Min, Max, Addc, Subc, Madc,
  Rcp, Sqrt, Rsqrt, Ex2, Lg2, Sin, Cos, Tanh, Copysign, Testp,
  // bits
  And, Or, Xor, Not, Cnot, Shl, Shr, Bfe, Bfi, Clz, Popc, Brev, Prmt,
  // moves and comparisons
  Mov, Cvt, Cvta, Setp, Selp, Slct,
  // memory
  Ld, Ldu, St, Atom, Red, Membar, Fence, Prefetch,
  // control
  Bra, Call, Ret, Exit, Trap, Brkpt, Nanosleep,
  // warp and block
  Shfl, Vote, Match, Redux, BarSync, BarArrive, BarWarpSync, Activemask,
};

// An instruction's type suffix (.u32, .f16x2, ...). Pred is a 1-bit predicate register.
enum class Type : uint8_t {
  None, Pred,
  B8, B16, B32, B64, B128,
  U8, U16, U32, U64,
  S8, S16, S32, S64,
  F16, F16x2, BF16, BF16x2, F32, F64,
};

// Where an address points. Generic addresses are classified at run time by window (memory.h).
enum class Space : uint8_t { Generic, Global, Shared, Local, Param, Const };

// Rounding of float results (.rn .rz .rm .rp) and of float-to-integer conversions and float
// rounding to an integral value (.rni .rzi .rmi .rpi). None: the instruction's default.
enum class Rounding : uint8_t { None, Rn, Rz, Rm, Rp, Rni, Rzi, Rmi, Rpi };

// setp/set comparisons: ordered (eq ... ge), unsigned integer (lo ls hi hs), unordered float
// (equ ... geu: true when either is NaN) and num/nan.
enum class Cmp : uint8_t { Eq, Ne, Lt, Le, Gt, Ge, Lo, Ls, Hi, Hs, Equ, Neu, Ltu, Leu, Gtu, Geu, Num, Nan };

// setp's optional combination with a third predicate operand (setp.lt.and.f32 p, a, b, q).
enum class BoolOp : uint8_t { None, And, Or, Xor };

// atom/red operations.
enum class AtomOp : uint8_t { None, Add, Min, Max, Inc, Dec, And, Or, Xor, Exch, Cas };

// shfl.sync modes, vote.sync modes and redux.sync operations.
enum class ShflMode : uint8_t { None, Up, Down, Bfly, Idx };
enum class VoteMode : uint8_t { None, All, Any, Uni, Ballot };
// testp's property (.finite .infinite .number .notanumber .normal .subnormal).
enum class TestpMode : uint8_t { None, Finite, Infinite, Number, NotANumber, Normal, Subnormal };

// Special registers (%tid.x ...), read through Operand::Special.
enum class Special : uint8_t {
  TidX, TidY, TidZ, NtidX, NtidY, NtidZ, CtaidX, CtaidY, CtaidZ, NctaidX, NctaidY, NctaidZ,
  LaneId, WarpId, NWarpId, SmId, NSmId, GridId,
  LanemaskEq, LanemaskLe, LanemaskLt, LanemaskGe, LanemaskGt,
  Clock, Clock64, GlobalTimer, DynamicSmemSize, TotalSmemSize,
};

// Instruction flags (Instr::flags), one bit each.
enum Flag : uint32_t {
  kFtz = 1u << 0,       // .ftz: f32 subnormal inputs and results flushed to sign-preserving zero
  kSat = 1u << 1,       // .sat: clamp (floats to [0,1] with NaN -> 0; s32 add/sub to its range)
  kApprox = 1u << 2,    // .approx
  kFull = 1u << 3,      // div.full.f32
  kCarryOut = 1u << 4,  // .cc: writes the carry flag
  kHi = 1u << 5,        // mul/mad .hi
  kLo = 1u << 6,        // mul/mad .lo
  kWide = 1u << 7,      // mul/mad .wide: result twice the operands' width
  kNc = 1u << 8,        // ld.global.nc: the read-only path
  kUni = 1u << 9,       // bra.uni / call.uni: the compiler promises a non-divergent warp
  kToSpace = 1u << 10,  // cvta.to.<space>: generic -> space (without it: space -> generic)
  kVolatile = 1u << 11, // ld/st .volatile (also .relaxed/.acquire/.release: all coherent here)
  kNaN = 1u << 12,      // min/max .NaN: a NaN input gives NaN
  kShiftClamp = 1u << 13,  // shf .clamp (unused by kiln today)
  kAligned = 1u << 14,  // bar.sync .aligned / vote .aligned
  kRelu = 1u << 15,     // cvt .relu
};

// One operand. Registers are indices into the function's register file (Function::registers).
struct Operand {
  enum class Kind : uint8_t {
    None,
    Reg,      // reg
    Imm,      // imm: the bits, already in the instruction type's format (0f3F800000 is f32 1.0,
              // an integer literal given to an .f32 instruction is converted to its f32 bits)
    Special,  // special
    Addr,     // [reg + imm] when reg != kNoReg, else [imm] (a resolved symbol's address + offset)
    Vec,      // {vec[0], ..., vec[count-1]}: registers, kNoReg for the sink `_`
    Label,    // imm: instruction index (bra target)
    Func,     // imm: function index in Module::functions (call target)
    Sink,     // `_`: the result is discarded
  };
  static constexpr uint32_t kNoReg = 0xFFFFFFFFu;

  Kind kind = Kind::None;
  bool negate = false;  // `!%p` as a predicate source (selp, setp's combining operand)
  Special special = Special::TidX;
  // Addr (and a bare symbol as a mov source, which is decoded as Addr: `mov.u64 %rd1, table`
  // takes the address of `table`): what the address is relative to.
  //  - kNoSymbol: [reg + imm] or [imm], an address held in a register.
  //  - kParamSymbol: a .param in the current function: imm is the offset in the kernel's parameter
  //    buffer (.entry) or in the function's parameter frame (.func and the .param variables it
  //    declares for calls), the displacement already added. reg is kNoReg.
  //  - a Module::variables index: imm is the displacement from that variable's address. A .global
  //    or .const variable's address is its device address (known once the module is loaded); a
  //    .shared variable's is Variable::offset in the block's shared window; a .local variable's is
  //    Variable::offset in the current function's local frame. reg is kNoReg.
  static constexpr uint32_t kNoSymbol = 0xFFFFFFFFu;
  static constexpr uint32_t kParamSymbol = 0xFFFFFFFEu;
  uint32_t symbol = kNoSymbol;
  uint8_t count = 0;  // Vec: number of registers
  uint32_t reg = kNoReg;
  uint32_t vec[4] = {kNoReg, kNoReg, kNoReg, kNoReg};
  uint64_t imm = 0;
};

// One decoded instruction. Operands: ops[0..ndst) are written, ops[ndst..ndst+nsrc) are read.
// `setp.lt.f32 %p|%q, a, b` has two destinations; `st` has none (its address is a source, ops[0],
// then the value); `atom` has one destination (ops[0]) and sources address, b[, c]; `red` none;
// `ld.v4` one Vec destination; `shfl.sync d|p, a, b, c, mask` two destinations (p may be Sink).
//
// Call: `call (ret), fn, (a, b)` is decoded with target = callee function index, ops[0..ndst) the
// caller's .param variables that receive the return values (as Addr operands in Space::Param) and
// ops[ndst..) the .param variables passed as arguments (Addr operands in Space::Param).
struct Instr {
  Op op = Op::Mov;
  Type type = Type::None;     // the instruction type (.f32); for cvt the destination type
  Type type2 = Type::None;    // cvt: the source type; cvta/ld/st: unused; setp: unused
  Space space = Space::Generic;  // ld/st/atom/red/cvta: the state space (cvta: the non-generic side)
  Rounding rounding = Rounding::None;
  Cmp cmp = Cmp::Eq;          // setp/slct comparison
  BoolOp boolOp = BoolOp::None;
  AtomOp atomOp = AtomOp::None;  // atom/red op; redux.sync op (Add, Min, Max, And, Or, Xor)
  ShflMode shfl = ShflMode::None;
  VoteMode vote = VoteMode::None;
  TestpMode testp = TestpMode::None;  // testp's property
  uint8_t vec = 1;            // ld/st .v2/.v4: elements per access
  uint8_t ndst = 0, nsrc = 0;
  uint32_t flags = 0;         // Flag bits
  uint32_t guard = Operand::kNoReg;  // @%p: the guard predicate register, kNoReg if none
  bool guardNegated = false;  // @!%p
  uint32_t target = 0;        // bra: target instruction index; call: callee function index
  uint32_t reconverge = 0;    // bra: instruction index where divergent lanes meet again (the
                              // immediate post-dominator; Function::instrs.size() for the exit)
  uint32_t line = 0;          // 1-based line of the instruction in the PTX text
  Operand ops[6];
};

// A .param (kernel or function parameter), laid out in the parameter buffer by its own size and
// alignment, as the driver lays out kernelParams.
struct Param {
  std::string name;
  uint32_t size = 0;
  uint32_t align = 0;
  uint32_t offset = 0;  // in the kernel's parameter buffer, or the function's parameter frame
  Type type = Type::None;  // the declared element type (.u64, .b8 for arrays)
};

// A module-scope or function-scope variable in .global, .const, .shared or .local.
struct Variable {
  std::string name;
  Space space = Space::Global;
  uint32_t align = 1;
  uint64_t size = 0;      // 0 for `.extern .shared ... name[]` (dynamic shared memory)
  bool external = false;  // .extern: dynamic shared memory, sized at launch
  std::vector<uint8_t> init;  // initial bytes (empty: zero-filled for .global/.const)
  uint64_t offset = 0;    // .shared: offset in the block's shared window; .local: in the thread's
                          // local frame (per function: Function::localBytes)
};

struct Function {
  std::string name;
  bool isEntry = false;  // .entry (a kernel) or .func
  std::vector<Param> params;   // .entry: kernel parameters; .func: arguments
  std::vector<Param> returns;  // .func only: return parameters
  uint32_t paramBytes = 0;     // .entry: parameter buffer size; .func: size of its param frame
                               // (arguments, returns and the .param variables it declares for calls)
  uint32_t registers = 0;      // register slots used (every declared register, predicates included)
  std::vector<Type> registerTypes;  // declared type of each slot (for occupancy: 32-bit words)
  uint32_t liveRegisterWords = 0;   // the most 32-bit words live at once (liveness.h)
  std::vector<std::string> registerNames;  // for reports
  uint32_t frameBytes = 0;     // the per-thread parameter frame an activation needs: a .func's
                               // paramBytes; an .entry's paramBytes (its kernel parameters) plus the
                               // .param variables it declares for calls, which sit after them
  uint32_t localBytes = 0;     // this function's .local frame size per thread
  uint32_t maxntid[3] = {0, 0, 0};  // .maxntid; 0 when not given
  uint32_t reqntid[3] = {0, 0, 0};  // .reqntid
  uint32_t minnctapersm = 0;
  std::vector<Instr> instrs;
  uint32_t line = 0;           // line of the .entry/.func directive
};

// Module-scope state. Variables in .global/.const are placed in device memory when the module is
// loaded; .shared variables (module or function scope) have fixed offsets in every block's window,
// and the .extern .shared array starts after them, aligned, at Module::staticSharedBytes.
struct Module {
  uint32_t version = 0;        // .version 7.0 -> 70
  uint32_t smVersion = 0;      // .target sm_80 -> 80
  uint32_t addressSize = 64;
  std::vector<Variable> variables;  // every .global/.const/.shared/.local variable, in order
  std::vector<Function> functions;
  uint32_t staticSharedBytes = 0;
  uint32_t dynamicSharedAlign = 1;  // alignment of the .extern .shared array
};

// Bytes a value of type `t` takes in memory (Pred: 1; F16x2: 4; None: 0).
// (Inline: the interpreter asks for every operand it reads or writes.)
inline uint32_t typeBytes(Type t) {
  //                               None Pred B8 B16 B32 B64 B128 U8 U16 U32 U64 S8 S16 S32 S64 F16 F16x2 BF16 BF16x2 F32 F64
  constexpr uint8_t kBytes[] = {0,   1,   1, 2,  4,  8,  16,  1, 2,  4,  8,  1, 2,  4,  8,  2,  4,    2,   4,     4,  8};
  auto i = static_cast<size_t>(t);
  return i < sizeof(kBytes) ? kBytes[i] : 0;
}
// ".u32" etc., for reports.
const char* typeName(Type t);
const char* opName(Op op);

}  // namespace gpusim::ptx
