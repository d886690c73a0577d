// Decoding one instruction: the opcode's modifiers (ld.global.nc.v4.f32) into Instr fields and the
// written operands into resolved Operands. Anything the interpreter cannot run is rejected here,
// with its line, so a module either loads completely or fails at cuModuleLoadDataEx.
#include <cstring>

#include "gpusim/exec/float_format.h"
#include "gpusim/ptx/parser_impl.h"

namespace gpusim::ptx::detail {
namespace {

struct OpName {
  const char* name;
  Op op;
};

// Opcodes whose name has dots in it come first, so "bar.warp.sync" wins over "bar".
constexpr OpName kOpcodes[] = {
    {"bar.warp.sync", Op::BarWarpSync}, {"barrier.sync", Op::BarSync}, {"bar.sync", Op::BarSync},
    {"bar.arrive", Op::BarArrive}, {"barrier.arrive", Op::BarArrive}, {"shfl.sync", Op::Shfl},
    {"vote.sync", Op::Vote}, {"redux.sync", Op::Redux},
    {"add", Op::Add}, {"sub", Op::Sub}, {"mul", Op::Mul}, {"mad", Op::Mad}, {"fma", Op::Fma},
    {"div", Op::Div}, {"rem", Op::Rem}, {"abs", Op::Abs}, {"neg", Op::Neg}, {"min", Op::Min},
    {"max", Op::Max}, {"addc", Op::Addc}, {"subc", Op::Subc}, {"madc", Op::Madc}, {"rcp", Op::Rcp},
    {"sqrt", Op::Sqrt}, {"rsqrt", Op::Rsqrt}, {"ex2", Op::Ex2}, {"lg2", Op::Lg2}, {"sin", Op::Sin},
    {"cos", Op::Cos}, {"tanh", Op::Tanh}, {"copysign", Op::Copysign}, {"and", Op::And}, {"or", Op::Or},
    {"xor", Op::Xor}, {"not", Op::Not}, {"cnot", Op::Cnot}, {"shl", Op::Shl}, {"shr", Op::Shr},
    {"bfe", Op::Bfe}, {"bfi", Op::Bfi}, {"clz", Op::Clz}, {"popc", Op::Popc}, {"brev", Op::Brev},
    {"prmt", Op::Prmt}, {"mov", Op::Mov}, {"cvt", Op::Cvt}, {"cvta", Op::Cvta}, {"setp", Op::Setp},
    {"selp", Op::Selp}, {"slct", Op::Slct}, {"ld", Op::Ld}, {"ldu", Op::Ldu}, {"st", Op::St},
    {"atom", Op::Atom}, {"red", Op::Red}, {"membar", Op::Membar}, {"fence", Op::Fence},
    {"prefetch", Op::Prefetch}, {"bra", Op::Bra}, {"call", Op::Call}, {"ret", Op::Ret}, {"exit", Op::Exit},
    {"trap", Op::Trap}, {"brkpt", Op::Brkpt}, {"nanosleep", Op::Nanosleep}, {"activemask", Op::Activemask},
};

struct SpecialName {
  const char* name;
  Special special;
};
constexpr SpecialName kSpecials[] = {
    {"%tid.x", Special::TidX}, {"%tid.y", Special::TidY}, {"%tid.z", Special::TidZ},
    {"%ntid.x", Special::NtidX}, {"%ntid.y", Special::NtidY}, {"%ntid.z", Special::NtidZ},
    {"%ctaid.x", Special::CtaidX}, {"%ctaid.y", Special::CtaidY}, {"%ctaid.z", Special::CtaidZ},
    {"%nctaid.x", Special::NctaidX}, {"%nctaid.y", Special::NctaidY}, {"%nctaid.z", Special::NctaidZ},
    {"%laneid", Special::LaneId}, {"%warpid", Special::WarpId}, {"%nwarpid", Special::NWarpId},
    {"%smid", Special::SmId}, {"%nsmid", Special::NSmId}, {"%gridid", Special::GridId},
    {"%lanemask_eq", Special::LanemaskEq}, {"%lanemask_le", Special::LanemaskLe},
    {"%lanemask_lt", Special::LanemaskLt}, {"%lanemask_ge", Special::LanemaskGe},
    {"%lanemask_gt", Special::LanemaskGt}, {"%clock", Special::Clock}, {"%clock64", Special::Clock64},
    {"%globaltimer", Special::GlobalTimer}, {"%dynamic_smem_size", Special::DynamicSmemSize},
    {"%total_smem_size", Special::TotalSmemSize},
};

struct CmpName {
  const char* name;
  Cmp cmp;
};
constexpr CmpName kCmps[] = {
    {"eq", Cmp::Eq}, {"ne", Cmp::Ne}, {"lt", Cmp::Lt}, {"le", Cmp::Le}, {"gt", Cmp::Gt}, {"ge", Cmp::Ge},
    {"lo", Cmp::Lo}, {"ls", Cmp::Ls}, {"hi", Cmp::Hi}, {"hs", Cmp::Hs}, {"equ", Cmp::Equ}, {"neu", Cmp::Neu},
    {"ltu", Cmp::Ltu}, {"leu", Cmp::Leu}, {"gtu", Cmp::Gtu}, {"geu", Cmp::Geu}, {"num", Cmp::Num}, {"nan", Cmp::Nan},
};

struct AtomName {
  const char* name;
  AtomOp op;
};
constexpr AtomName kAtomOps[] = {
    {"add", AtomOp::Add}, {"min", AtomOp::Min}, {"max", AtomOp::Max}, {"inc", AtomOp::Inc},
    {"dec", AtomOp::Dec}, {"and", AtomOp::And}, {"or", AtomOp::Or}, {"xor", AtomOp::Xor},
    {"exch", AtomOp::Exch}, {"cas", AtomOp::Cas},
};

bool isFloatType(Type t) {
  return t == Type::F16 || t == Type::F16x2 || t == Type::BF16 || t == Type::BF16x2 || t == Type::F32 || t == Type::F64;
}

// The integer type twice as wide as `t` (mul.wide / mad.wide results).
Type widened(Type t) {
  switch (t) {
    case Type::U16: return Type::U32;
    case Type::S16: return Type::S32;
    case Type::U32: return Type::U64;
    case Type::S32: return Type::S64;
    default: return t;
  }
}

// Which modifiers an opcode accepts beyond its type(s): the decoded fields it may set.
enum Accepts : uint32_t {
  kAcceptRounding = 1u << 0,
  kAcceptFtz = 1u << 1,
  kAcceptSat = 1u << 2,
  kAcceptApprox = 1u << 3,
  kAcceptHiLoWide = 1u << 4,
  kAcceptCarry = 1u << 5,
  kAcceptSpace = 1u << 6,
  kAcceptVector = 1u << 7,
  kAcceptCmp = 1u << 8,
  kAcceptAtomOp = 1u << 9,
  kAcceptOrdering = 1u << 10,  // memory ordering and scope: .relaxed .acquire .gpu .sys ...
  kAcceptNaN = 1u << 11,
  kAcceptUni = 1u << 12,
  kAcceptAligned = 1u << 13,
  kAcceptCache = 1u << 14,     // cache operators (.ca .cg .cs .lu .cv .wb .wt), .nc, .L1 .L2
};

uint32_t accepted(Op op) {
  switch (op) {
    case Op::Add: case Op::Sub: case Op::Mul: return kAcceptRounding | kAcceptFtz | kAcceptSat | kAcceptHiLoWide | kAcceptCarry;
    case Op::Mad: case Op::Madc: return kAcceptRounding | kAcceptFtz | kAcceptSat | kAcceptHiLoWide | kAcceptCarry;
    case Op::Addc: case Op::Subc: return kAcceptCarry;
    case Op::Fma: return kAcceptRounding | kAcceptFtz | kAcceptSat;
    case Op::Div: return kAcceptRounding | kAcceptFtz | kAcceptApprox;
    case Op::Rcp: case Op::Sqrt: return kAcceptRounding | kAcceptFtz | kAcceptApprox;
    case Op::Rsqrt: case Op::Ex2: case Op::Lg2: case Op::Sin: case Op::Cos: case Op::Tanh: return kAcceptFtz | kAcceptApprox;
    case Op::Abs: case Op::Neg: return kAcceptFtz;
    case Op::Min: case Op::Max: return kAcceptFtz | kAcceptNaN;
    case Op::Cvt: return kAcceptRounding | kAcceptFtz | kAcceptSat;
    case Op::Cvta: return kAcceptSpace;
    case Op::Setp: return kAcceptCmp | kAcceptFtz;
    case Op::Slct: return kAcceptFtz;
    case Op::Ld: case Op::Ldu: case Op::St: return kAcceptSpace | kAcceptVector | kAcceptOrdering | kAcceptCache;
    case Op::Atom: case Op::Red: return kAcceptSpace | kAcceptAtomOp | kAcceptOrdering;
    case Op::Membar: case Op::Fence: return kAcceptOrdering;
    case Op::Prefetch: return kAcceptSpace | kAcceptCache;
    case Op::Bra: case Op::Call: case Op::Ret: return kAcceptUni;
    case Op::BarSync: case Op::BarArrive: case Op::Vote: case Op::Shfl: return kAcceptAligned;
    case Op::Redux: return kAcceptAtomOp;
    default: return 0;
  }
}

}  // namespace

Type typeFromName(std::string_view name) {
  static const std::pair<const char*, Type> kTypes[] = {
      {"pred", Type::Pred}, {"b8", Type::B8}, {"b16", Type::B16}, {"b32", Type::B32}, {"b64", Type::B64},
      {"b128", Type::B128}, {"u8", Type::U8}, {"u16", Type::U16}, {"u32", Type::U32}, {"u64", Type::U64},
      {"s8", Type::S8}, {"s16", Type::S16}, {"s32", Type::S32}, {"s64", Type::S64}, {"f16", Type::F16},
      {"f16x2", Type::F16x2}, {"bf16", Type::BF16}, {"bf16x2", Type::BF16x2}, {"f32", Type::F32}, {"f64", Type::F64},
  };
  for (const auto& [n, t] : kTypes)
    if (name == n) return t;
  return Type::None;
}

uint64_t convertLiteral(Token::Kind kind, uint64_t bits, Type t, uint32_t line, const Parser& parser) {
  const uint32_t width = typeBytes(t);
  const uint64_t mask = width >= 8 ? ~0ull : (1ull << (8 * width)) - 1;
  if (t == Type::Pred) {
    if (kind != Token::Kind::Int) parser.fail(line, "a predicate takes an integer literal (0 or 1)");
    return bits != 0;
  }
  if (kind == Token::Kind::Int) {
    if (!isFloatType(t)) return bits & mask;
    double v = static_cast<double>(static_cast<int64_t>(bits));
    if (t == Type::F32) return gpusim::bits(static_cast<float>(v));
    if (t == Type::F64) return gpusim::bits(v);
    return roundToFormat(v, t == Type::BF16 || t == Type::BF16x2 ? kBFloat : kHalf, Rounding::Rn);
  }
  // A float literal: 0fXXXXXXXX (f32 bits) or 0dXXXXXXXXXXXXXXXX / decimal (f64 bits).
  double value = kind == Token::Kind::F32 ? static_cast<double>(f32(bits)) : f64(bits);
  switch (t) {
    case Type::F32: return kind == Token::Kind::F32 ? bits : gpusim::bits(static_cast<float>(value));
    case Type::F64: return gpusim::bits(value);
    case Type::F16: case Type::F16x2: return roundToFormat(value, kHalf, Rounding::Rn);
    case Type::BF16: case Type::BF16x2: return roundToFormat(value, kBFloat, Rounding::Rn);
    default: break;
  }
  // A bit or integer type of the literal's own width takes its bits (mov.b32 %r, 0f3F800000).
  if (kind == Token::Kind::F32 && width == 4) return bits;
  if (kind == Token::Kind::F64 && width == 8) return bits;
  parser.fail(line, std::string("a float literal cannot be a ") + typeName(t) + " operand");
}

namespace {

// Resolves the operands of one instruction once its modifiers are known.
class OperandResolver {
 public:
  OperandResolver(const Parser& parser, uint32_t line, std::string_view opcode)
      : parser_(parser), line_(line), opcode_(opcode) {}

  [[noreturn]] void fail(const RawOperand& r, const std::string& message) const {
    parser_.fail(r.line ? r.line : line_, message + " in '" + std::string(opcode_) + "'");
  }

  uint32_t reg(const RawOperand& r, std::string_view name) const {
    const Symbol* s = parser_.lookup(name);
    if (!s) fail(r, "undefined register '" + std::string(name) + "'");
    if (s->kind != Symbol::Kind::Reg) fail(r, "'" + std::string(name) + "' is not a register");
    return s->index;
  }

  // A value operand: a register, a literal of type `t`, a special register, or a symbol whose
  // address is taken (mov.u64 %rd, table / cvta.local.u64 %rd, __local_depot0).
  Operand value(const RawOperand& r, Type t) const {
    Operand o;
    switch (r.kind) {
      case RawOperand::Kind::Int:
      case RawOperand::Kind::F32:
      case RawOperand::Kind::F64: {
        Token::Kind k = r.kind == RawOperand::Kind::Int ? Token::Kind::Int
                        : r.kind == RawOperand::Kind::F32 ? Token::Kind::F32 : Token::Kind::F64;
        o.kind = Operand::Kind::Imm;
        o.imm = convertLiteral(k, r.bits, t, r.line, parser_);
        return o;
      }
      case RawOperand::Kind::Name: break;
      case RawOperand::Kind::Vec: return vector(r, 0);
      default: fail(r, "expected a register or a literal");
    }
    if (r.name == "_") fail(r, "'_' can only receive a result");
    for (const SpecialName& s : kSpecials) {
      if (r.name == s.name) {
        o.kind = Operand::Kind::Special;
        o.special = s.special;
        return o;
      }
    }
    const Symbol* s = parser_.lookup(r.name);
    if (!s) {
      if (r.name[0] == '%') fail(r, "undefined register '" + std::string(r.name) + "'");
      fail(r, "undefined symbol '" + std::string(r.name) + "'");
    }
    switch (s->kind) {
      case Symbol::Kind::Reg:
        o.kind = Operand::Kind::Reg;
        o.reg = s->index;
        o.negate = r.negate;
        if (r.negate && s->type != Type::Pred) fail(r, "'!' applies to predicates only");
        return o;
      case Symbol::Kind::Var:
        o.kind = Operand::Kind::Addr;
        o.symbol = s->index;
        return o;
      case Symbol::Kind::Param:
        o.kind = Operand::Kind::Addr;
        o.symbol = Operand::kParamSymbol;
        o.imm = s->offset;
        return o;
      case Symbol::Kind::Func: fail(r, "function addresses ('" + std::string(r.name) + "') are not supported");
    }
    fail(r, "unexpected operand");
  }

  // A destination: a register, `_`, or (ld, mov unpacking) a vector of registers.
  Operand destination(const RawOperand& r) const {
    Operand o;
    if (r.kind == RawOperand::Kind::Vec) return vector(r, 0);
    if (r.kind != RawOperand::Kind::Name || r.negate) fail(r, "expected a destination register");
    if (r.name == "_") {
      o.kind = Operand::Kind::Sink;
      return o;
    }
    o.kind = Operand::Kind::Reg;
    o.reg = reg(r, r.name);
    return o;
  }

  Operand vector(const RawOperand& r, size_t want) const {
    if (r.kind != RawOperand::Kind::Vec) fail(r, "expected a vector {...}");
    if (r.names.size() > 4 || r.names.size() < 2 || (want && r.names.size() != want))
      fail(r, "a vector of " + std::to_string(r.names.size()) + " registers" +
                  (want ? " where the instruction moves " + std::to_string(want) : std::string()));
    Operand o;
    o.kind = Operand::Kind::Vec;
    o.count = static_cast<uint8_t>(r.names.size());
    for (size_t i = 0; i < r.names.size(); ++i) o.vec[i] = r.names[i] == "_" ? Operand::kNoReg : reg(r, r.names[i]);
    return o;
  }

  // [reg], [reg+imm], [imm], [symbol], [symbol+imm].
  Operand address(const RawOperand& r) const {
    if (r.kind != RawOperand::Kind::Addr) fail(r, "expected an address [...]");
    Operand o;
    o.kind = Operand::Kind::Addr;
    o.imm = r.bits;
    if (r.name.empty()) return o;
    const Symbol* s = parser_.lookup(r.name);
    if (!s) fail(r, "undefined name '" + std::string(r.name) + "' in an address");
    switch (s->kind) {
      case Symbol::Kind::Reg: o.reg = s->index; return o;
      case Symbol::Kind::Var: o.symbol = s->index; return o;
      case Symbol::Kind::Param: o.symbol = Operand::kParamSymbol; o.imm = s->offset + r.bits; return o;
      case Symbol::Kind::Func: fail(r, "a function name is not an address");
    }
    return o;
  }

 private:
  const Parser& parser_;
  uint32_t line_;
  std::string_view opcode_;
};

}  // namespace

void Parser::decodeInstruction(std::string_view opcode, uint32_t line, std::vector<RawOperand>& operands, Instr& in) {
  const std::string opText(opcode);
  auto reject = [&](const std::string& why) { fail(line, why + " in '" + opText + "'"); };

  // The opcode: the longest known dotted prefix.
  std::string_view rest;
  bool found = false;
  for (const OpName& o : kOpcodes) {
    size_t n = std::strlen(o.name);
    if (opcode.substr(0, n) == o.name && (opcode.size() == n || opcode[n] == '.')) {
      in.op = o.op;
      rest = opcode.substr(n);
      found = true;
      break;
    }
  }
  if (!found) fail(line, "instruction '" + opText + "' is not supported by the simulator");

  // Modifiers, left to right.
  const uint32_t ok = accepted(in.op);
  Type types[2] = {Type::None, Type::None};
  int typeCount = 0;
  bool sawCmp = false;
  bool boolOpNext = false;  // setp: after the comparison, .and/.or/.xor combine with a predicate
  size_t i = 0;
  while (i < rest.size()) {
    ++i;  // the '.'
    size_t j = rest.find('.', i);
    if (j == std::string_view::npos) j = rest.size();
    std::string_view m = rest.substr(i, j - i);
    i = j;
    auto unsupported = [&] { reject("modifier '." + std::string(m) + "' is not supported"); };
    if (Type t = typeFromName(m); t != Type::None) {
      if (typeCount == 2) reject("too many types");
      types[typeCount++] = t;
      continue;
    }
    if ((ok & kAcceptRounding) && (m == "rn" || m == "rz" || m == "rm" || m == "rp" || m == "rni" || m == "rzi" ||
                                   m == "rmi" || m == "rpi")) {
      static const std::pair<const char*, Rounding> kModes[] = {
          {"rn", Rounding::Rn}, {"rz", Rounding::Rz}, {"rm", Rounding::Rm}, {"rp", Rounding::Rp},
          {"rni", Rounding::Rni}, {"rzi", Rounding::Rzi}, {"rmi", Rounding::Rmi}, {"rpi", Rounding::Rpi}};
      for (const auto& [n, r] : kModes)
        if (m == n) in.rounding = r;
      if (in.op != Op::Cvt && in.rounding >= Rounding::Rni) unsupported();
      continue;
    }
    if ((ok & kAcceptFtz) && m == "ftz") { in.flags |= kFtz; continue; }
    if ((ok & kAcceptSat) && m == "sat") { in.flags |= kSat; continue; }
    if ((ok & kAcceptApprox) && m == "approx") { in.flags |= kApprox; continue; }
    if (in.op == Op::Div && m == "full") { in.flags |= kFull; continue; }
    if ((ok & kAcceptHiLoWide) && m == "hi") { in.flags |= kHi; continue; }
    if ((ok & kAcceptHiLoWide) && m == "lo") { in.flags |= kLo; continue; }
    if ((ok & kAcceptHiLoWide) && m == "wide") { in.flags |= kWide; continue; }
    if ((ok & kAcceptCarry) && m == "cc") { in.flags |= kCarryOut; continue; }
    if ((ok & kAcceptNaN) && m == "NaN") { in.flags |= kNaN; continue; }
    if ((ok & kAcceptUni) && m == "uni") { in.flags |= kUni; continue; }
    if ((ok & kAcceptAligned) && m == "aligned") { in.flags |= kAligned; continue; }
    if (in.op == Op::Cvta && m == "to") { in.flags |= kToSpace; continue; }
    if ((ok & kAcceptSpace) && (m == "global" || m == "shared" || m == "local" || m == "param" || m == "const")) {
      in.space = m == "global" ? Space::Global : m == "shared" ? Space::Shared : m == "local" ? Space::Local
                 : m == "param" ? Space::Param : Space::Const;
      continue;
    }
    if ((ok & kAcceptVector) && (m == "v2" || m == "v4")) {
      in.vec = m == "v2" ? 2 : 4;
      continue;
    }
    if ((ok & kAcceptOrdering) && (m == "volatile" || m == "relaxed" || m == "acquire" || m == "release" ||
                                   m == "acq_rel" || m == "sc" || m == "weak")) {
      if (m != "weak") in.flags |= kVolatile;
      continue;
    }
    if ((ok & kAcceptOrdering) && (m == "cta" || m == "gpu" || m == "sys" || m == "gl")) continue;
    if ((ok & kAcceptCache) && (m == "ca" || m == "cg" || m == "cs" || m == "lu" || m == "cv" || m == "wb" ||
                                m == "wt" || m == "L1" || m == "L2")) {
      continue;
    }
    if ((ok & kAcceptCache) && m == "nc" && in.op == Op::Ld) { in.flags |= kNc; continue; }
    if (ok & kAcceptCmp) {
      if (boolOpNext && (m == "and" || m == "or" || m == "xor")) {
        in.boolOp = m == "and" ? BoolOp::And : m == "or" ? BoolOp::Or : BoolOp::Xor;
        boolOpNext = false;
        continue;
      }
      bool matched = false;
      for (const CmpName& c : kCmps)
        if (m == c.name) in.cmp = c.cmp, matched = true;
      if (matched) {
        boolOpNext = sawCmp = true;
        continue;
      }
    }
    if ((ok & kAcceptAtomOp) && in.atomOp == AtomOp::None) {
      bool matched = false;
      for (const AtomName& a : kAtomOps)
        if (m == a.name) in.atomOp = a.op, matched = true;
      if (matched) continue;
    }
    if (in.op == Op::Shfl && in.shfl == ShflMode::None && (m == "up" || m == "down" || m == "bfly" || m == "idx")) {
      in.shfl = m == "up" ? ShflMode::Up : m == "down" ? ShflMode::Down : m == "bfly" ? ShflMode::Bfly : ShflMode::Idx;
      continue;
    }
    if (in.op == Op::Vote && in.vote == VoteMode::None && (m == "all" || m == "any" || m == "uni" || m == "ballot")) {
      in.vote = m == "all" ? VoteMode::All : m == "any" ? VoteMode::Any : m == "uni" ? VoteMode::Uni : VoteMode::Ballot;
      continue;
    }
    if (in.op == Op::Membar || in.op == Op::Fence) {
      if (m == "proxy" || m == "alias") unsupported();
      continue;
    }
    unsupported();
  }

  // Types: most opcodes take exactly one; cvt and slct take two (destination, then source);
  // control and barrier instructions take none.
  in.type = types[0];
  in.type2 = types[1];
  const bool typeless = in.op == Op::Bra || in.op == Op::Call || in.op == Op::Ret || in.op == Op::Exit ||
                        in.op == Op::Trap || in.op == Op::Brkpt || in.op == Op::BarSync || in.op == Op::BarArrive ||
                        in.op == Op::BarWarpSync || in.op == Op::Membar || in.op == Op::Fence || in.op == Op::Prefetch;
  const bool twoTypes = in.op == Op::Cvt || in.op == Op::Slct;
  if (typeless && typeCount) reject("unexpected type");
  if (!typeless && typeCount != (twoTypes ? 2 : 1))
    reject(twoTypes ? "expected a destination and a source type" : "expected one type");
  if (in.op == Op::Vote && in.vote == VoteMode::None) reject("vote needs a mode (.all .any .uni .ballot)");
  if (in.op == Op::Shfl && in.shfl == ShflMode::None) reject("shfl needs a mode (.up .down .bfly .idx)");
  if ((in.op == Op::Atom || in.op == Op::Red || in.op == Op::Redux) && in.atomOp == AtomOp::None) reject("missing the operation");
  if (in.op == Op::Red && in.atomOp == AtomOp::Cas) reject("red has no .cas");
  if (in.op == Op::Setp && !sawCmp) reject("setp needs a comparison");
  if (in.op == Op::Redux && in.atomOp != AtomOp::Add && in.atomOp != AtomOp::Min && in.atomOp != AtomOp::Max &&
      in.atomOp != AtomOp::And && in.atomOp != AtomOp::Or && in.atomOp != AtomOp::Xor)
    reject("redux.sync supports .add .min .max .and .or .xor");
  if ((in.op == Op::Ld || in.op == Op::St) && in.type == Type::Pred) reject("predicates cannot be loaded or stored");
  if (in.type == Type::B128) reject(".b128 is not supported");
  if (in.op == Op::Cvt && (in.type == Type::F16x2 || in.type == Type::BF16x2 || in.type2 == Type::F16x2 ||
                           in.type2 == Type::BF16x2))
    reject("packed conversions are not supported");
  if (in.op == Op::Cvta && in.space == Space::Generic) reject("cvta needs a state space");
  // Float-only modifiers on an integer instruction (cvt: either side may be the float).
  const bool floatSide = isFloatType(in.type) || (in.op == Op::Cvt && isFloatType(in.type2));
  if (!floatSide && (in.flags & kFtz)) reject("modifier '.ftz' is not supported");
  if (!floatSide && (in.flags & kApprox)) reject("modifier '.approx' is not supported");
  if (!floatSide && in.rounding != Rounding::None) reject("a rounding modifier needs a float type");
  if (!floatSide && (in.flags & kSat) && !(in.type == Type::S32 && (in.op == Op::Add || in.op == Op::Sub)) &&
      in.op != Op::Cvt)
    reject("modifier '.sat' is not supported");

  OperandResolver r(*this, line, opcode);
  const size_t n = operands.size();
  auto need = [&](size_t count) {
    if (n != count) reject("expected " + std::to_string(count) + " operands, found " + std::to_string(n));
  };
  auto put = [&](size_t slot, const Operand& o) {
    if (slot >= sizeof(in.ops) / sizeof(in.ops[0])) reject("too many operands");
    in.ops[slot] = o;
  };
  // Sources ops[ndst + k] of types srcTypes[k] (None: the instruction type).
  auto sources = [&](size_t first, std::initializer_list<Type> srcTypes) {
    size_t k = 0;
    for (Type t : srcTypes) {
      put(in.ndst + k, r.value(operands[first + k], t == Type::None ? in.type : t));
      ++k;
    }
    in.nsrc = static_cast<uint8_t>(k);
  };
  auto oneDestination = [&] {
    in.ndst = 1;
    put(0, r.destination(operands[0]));
  };
  // setp/shfl: `p|q` or `d|p` writes two registers.
  auto pairDestination = [&] {
    const RawOperand& d = operands[0];
    if (d.kind == RawOperand::Kind::Pair) {
      RawOperand first = d, second = d;
      first.kind = second.kind = RawOperand::Kind::Name;
      second.name = d.name2;
      put(0, r.destination(first));
      put(1, r.destination(second));
      in.ndst = 2;
    } else {
      oneDestination();
    }
  };
  const Type t = in.type;

  switch (in.op) {
    case Op::Abs: case Op::Neg: case Op::Not: case Op::Cnot: case Op::Rcp: case Op::Sqrt: case Op::Rsqrt:
    case Op::Ex2: case Op::Lg2: case Op::Sin: case Op::Cos: case Op::Tanh: case Op::Clz: case Op::Popc: case Op::Brev:
      need(2);
      oneDestination();
      sources(1, {Type::None});
      break;
    case Op::Mov:
      need(2);
      oneDestination();
      sources(1, {Type::None});
      if (in.ops[0].kind == Operand::Kind::Vec && in.ops[1].kind == Operand::Kind::Vec) reject("mov cannot move a vector to a vector");
      break;
    case Op::Cvt:
      need(2);
      oneDestination();
      sources(1, {in.type2});
      break;
    case Op::Cvta:
      need(2);
      if (t != Type::U64 && t != Type::B64) reject("cvta needs .u64 (64-bit addresses)");
      oneDestination();
      sources(1, {Type::None});
      break;
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Rem: case Op::Min: case Op::Max: case Op::And:
    case Op::Or: case Op::Xor: case Op::Addc: case Op::Subc: case Op::Copysign:
      need(3);
      oneDestination();
      sources(1, {Type::None, Type::None});
      break;
    case Op::Shl: case Op::Shr:
      need(3);
      oneDestination();
      sources(1, {Type::None, Type::U32});
      break;
    case Op::Mad: case Op::Madc: case Op::Fma:  // mad.wide adds a double-width c
      need(4);
      oneDestination();
      sources(1, {Type::None, Type::None, (in.flags & kWide) ? widened(t) : Type::None});
      break;
    case Op::Bfe:
      need(4);
      oneDestination();
      sources(1, {Type::None, Type::U32, Type::U32});
      break;
    case Op::Bfi:
      need(5);
      oneDestination();
      sources(1, {Type::None, Type::None, Type::U32, Type::U32});
      break;
    case Op::Prmt:
      need(4);
      if (t != Type::B32) reject("prmt needs .b32 (modes such as .f4e are not supported)");
      oneDestination();
      sources(1, {Type::None, Type::None, Type::B32});
      break;
    case Op::Selp:
      need(4);
      oneDestination();
      sources(1, {Type::None, Type::None, Type::Pred});
      break;
    case Op::Slct:
      need(4);
      if (in.type2 != Type::S32 && in.type2 != Type::F32) reject("slct's selector is .s32 or .f32");
      oneDestination();
      sources(1, {Type::None, Type::None, in.type2});
      break;
    case Op::Setp:
      need(in.boolOp == BoolOp::None ? 3 : 4);
      pairDestination();
      if (in.boolOp == BoolOp::None) sources(1, {Type::None, Type::None});
      else sources(1, {Type::None, Type::None, Type::Pred});
      break;
    case Op::Ld: case Op::Ldu: {
      need(2);
      in.ndst = 1;
      const RawOperand& d = operands[0];
      put(0, in.vec > 1 ? r.vector(d, in.vec) : r.destination(d));
      if (in.vec == 1 && in.ops[0].kind == Operand::Kind::Vec) reject("a vector destination needs .v2 or .v4");
      in.nsrc = 1;
      put(1, r.address(operands[1]));
      break;
    }
    case Op::St: {
      need(2);
      put(0, r.address(operands[0]));
      const RawOperand& v = operands[1];
      put(1, in.vec > 1 ? r.vector(v, in.vec) : r.value(v, t));
      if (in.vec == 1 && in.ops[1].kind == Operand::Kind::Vec) reject("a vector source needs .v2 or .v4");
      if (in.vec > 1)
        for (int k = 0; k < in.ops[1].count; ++k)
          if (in.ops[1].vec[k] == Operand::kNoReg) reject("'_' cannot be stored");
      in.nsrc = 2;
      break;
    }
    case Op::Atom: {
      need(in.atomOp == AtomOp::Cas ? 4 : 3);
      oneDestination();
      put(1, r.address(operands[1]));
      in.nsrc = 1;
      for (size_t k = 2; k < n; ++k) put(k, r.value(operands[k], t)), ++in.nsrc;
      break;
    }
    case Op::Red:
      need(2);
      put(0, r.address(operands[0]));
      put(1, r.value(operands[1], t));
      in.nsrc = 2;
      break;
    case Op::Membar: case Op::Fence: case Op::Ret: case Op::Exit: case Op::Trap: case Op::Brkpt:
      need(0);
      break;
    case Op::Prefetch:
      need(1);
      put(0, r.address(operands[0]));
      in.nsrc = 1;
      break;
    case Op::Bra: {
      need(1);
      const RawOperand& target = operands[0];
      if (target.kind != RawOperand::Kind::Name || target.negate) reject("bra needs a label");
      in.ops[0].kind = Operand::Kind::Label;
      in.nsrc = 1;
      addLabelUse(static_cast<uint32_t>(function().instrs.size()), target.name, target.line);
      break;
    }
    case Op::Call: {
      // call[.uni] [(ret, ...),] fn[, (arg, ...)]
      size_t k = 0;
      const RawOperand* rets = nullptr;
      const RawOperand* args = nullptr;
      if (k < n && operands[k].kind == RawOperand::Kind::List) rets = &operands[k++];
      if (k >= n || operands[k].kind != RawOperand::Kind::Name) reject("call needs a function name");
      const RawOperand& callee = operands[k++];
      if (k < n && operands[k].kind == RawOperand::Kind::List) args = &operands[k++];
      if (k != n) reject("indirect calls (through a register and a prototype) are not supported");
      const Symbol* fs = lookup(callee.name);
      if (!fs) fail(callee.line, "call to undeclared function '" + std::string(callee.name) + "'");
      if (fs->kind != Symbol::Kind::Func) reject("'" + std::string(callee.name) + "' is not a function");
      const Function& f = module().functions[fs->index];
      if (f.isEntry) reject("a kernel (.entry) cannot be called");
      size_t nrets = rets ? rets->names.size() : 0, nargs = args ? args->names.size() : 0;
      if (nrets != f.returns.size() || nargs != f.params.size())
        reject("'" + f.name + "' takes " + std::to_string(f.params.size()) + " argument(s) and returns " +
               std::to_string(f.returns.size()) + ", the call passes " + std::to_string(nargs) + " and receives " +
               std::to_string(nrets));
      if (nrets + nargs > sizeof(in.ops) / sizeof(in.ops[0])) reject("calls with more than 6 parameters are not supported");
      auto param = [&](std::string_view name, const Param& p, uint32_t opLine) {
        const Symbol* s = lookup(name);
        if (!s || s->kind != Symbol::Kind::Param) fail(opLine, "call operand '" + std::string(name) + "' is not a .param variable");
        if (s->size < p.size) fail(opLine, "call operand '" + std::string(name) + "' is smaller than parameter '" + p.name + "'");
        Operand o;
        o.kind = Operand::Kind::Addr;
        o.symbol = Operand::kParamSymbol;
        o.imm = s->offset;
        return o;
      };
      for (size_t q = 0; q < nrets; ++q) put(q, param(rets->names[q], f.returns[q], rets->line));
      for (size_t q = 0; q < nargs; ++q) put(nrets + q, param(args->names[q], f.params[q], args->line));
      in.ndst = static_cast<uint8_t>(nrets);
      in.nsrc = static_cast<uint8_t>(nargs);
      in.target = fs->index;
      addCall(fs->index, line);
      break;
    }
    case Op::BarSync: case Op::BarArrive:
      if (n < 1 || n > 2) reject("expected a barrier number and an optional thread count");
      if (in.op == Op::BarSync && n == 2)
        reject("barriers with a thread count are not supported by the simulator (only whole-block bar.sync)");
      sources(0, n == 1 ? std::initializer_list<Type>{Type::U32} : std::initializer_list<Type>{Type::U32, Type::U32});
      if (in.ops[0].kind != Operand::Kind::Imm || in.ops[0].imm != 0)
        reject("only barrier 0 is supported by the simulator");
      break;
    case Op::BarWarpSync:
      need(1);
      sources(0, {Type::U32});
      break;
    case Op::Nanosleep:
      need(1);
      sources(0, {Type::U32});
      break;
    case Op::Activemask:
      need(1);
      if (t != Type::B32) reject("activemask needs .b32");
      oneDestination();
      break;
    case Op::Shfl:
      need(5);
      if (t != Type::B32) reject("shfl.sync needs .b32");
      pairDestination();
      sources(1, {Type::B32, Type::U32, Type::U32, Type::U32});
      break;
    case Op::Vote:
      need(3);
      if ((in.vote == VoteMode::Ballot) != (t == Type::B32) || (in.vote != VoteMode::Ballot && t != Type::Pred))
        reject("vote.ballot needs .b32, vote.all/.any/.uni need .pred");
      oneDestination();
      sources(1, {Type::Pred, Type::U32});
      break;
    case Op::Redux:
      need(3);
      if (t != Type::U32 && t != Type::S32 && t != Type::B32) reject("redux.sync needs .u32, .s32 or .b32");
      oneDestination();
      sources(1, {Type::None, Type::U32});
      break;
    default:
      reject("instruction is not supported by the simulator");
  }

  // What the interpreter's float path cannot compute.
  if (isFloatType(t) && (in.op == Op::Rem || in.op == Op::Shl || in.op == Op::Shr || in.op == Op::Bfe ||
                         in.op == Op::Clz || in.op == Op::Popc || in.op == Op::Brev || in.op == Op::Addc ||
                         in.op == Op::Subc || in.op == Op::Madc || in.op == Op::Cnot))
    reject("this operation has no float form");
  if ((in.op == Op::Ld || in.op == Op::St) && in.vec > 1 && typeBytes(t) * in.vec > 16)
    reject("a vector access wider than 16 bytes");
}

}  // namespace gpusim::ptx::detail
