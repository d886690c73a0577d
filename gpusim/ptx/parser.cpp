// The PTX module grammar: header directives, variables with initialisers, .entry/.func with their
// parameters, register declarations, nested blocks with call .params, labels. Instructions are
// decoded in instr.cpp; branch reconvergence points are computed by cfg.cpp once a function ends.
#include "gpusim/ptx/parser.h"

#include <algorithm>
#include <cstring>

#include "gpusim/ptx/cfg.h"
#include "gpusim/ptx/liveness.h"
#include "gpusim/ptx/parser_impl.h"

namespace gpusim::ptx {
namespace detail {
namespace {

uint64_t alignUp(uint64_t v, uint64_t a) { return a <= 1 ? v : (v + a - 1) / a * a; }

// ".ptr.global.align" -> {"ptr", "global", "align"}.
std::vector<std::string_view> splitDots(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] == '.') {
      ++i;
      continue;
    }
    size_t j = s.find('.', i);
    if (j == std::string_view::npos) j = s.size();
    out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

bool isPowerOfTwo(uint64_t v) { return v && !(v & (v - 1)); }

}  // namespace

Parser::Parser(std::string_view text, Module& out) : tokens_(tokenize(text)), module_(out) {
  scopes_.emplace_back();
}

void Parser::fail(uint32_t line, const std::string& message) const { throw ParseError{line, message}; }

void Parser::expect(char punct, const char* what) {
  const Token& t = peek();
  if (!t.is(punct)) fail(t.line, std::string("expected '") + punct + "' " + what + ", found '" + std::string(t.text) + "'");
  next();
}

bool Parser::accept(char punct) {
  if (!peek().is(punct)) return false;
  next();
  return true;
}

std::string_view Parser::expectName(const char* what) {
  const Token& t = peek();
  if (t.kind != Token::Kind::Ident || t.text[0] == '.') fail(t.line, std::string("expected ") + what + ", found '" + std::string(t.text) + "'");
  return next().text;
}

uint64_t Parser::expectInt(const char* what) {
  const Token& t = peek();
  if (t.kind != Token::Kind::Int) fail(t.line, std::string("expected ") + what + ", found '" + std::string(t.text) + "'");
  return next().bits;
}

const Symbol* Parser::lookup(std::string_view name) const {
  std::string key(name);
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto found = it->find(key);
    if (found != it->end()) return &found->second;
  }
  return nullptr;
}

void Parser::declare(std::string_view name, const Symbol& sym, uint32_t line) {
  auto [it, inserted] = scopes_.back().emplace(std::string(name), sym);
  if (!inserted) fail(line, "redefinition of '" + std::string(name) + "'");
}

void Parser::parse() {
  parseHeader();
  while (peek().kind != Token::Kind::End) parseTopLevel();
  finishModule();
}

// .version X.Y, .target sm_NN[, ...], .address_size 64.
void Parser::parseHeader() {
  for (;;) {
    const Token& t = peek();
    if (t.kind != Token::Kind::Ident) return;
    if (t.text == ".version") {
      next();
      const Token& v = next();
      size_t dot = v.text.find('.');
      if (v.kind != Token::Kind::F64 || dot == std::string_view::npos) fail(v.line, "expected a version such as 7.0 after .version");
      module_.version = static_cast<uint32_t>(std::atoi(std::string(v.text.substr(0, dot)).c_str()) * 10 +
                                              std::atoi(std::string(v.text.substr(dot + 1)).c_str()));
    } else if (t.text == ".target") {
      next();
      for (;;) {
        std::string_view target = expectName("a target such as sm_80");
        if (target.substr(0, 3) == "sm_") {
          module_.smVersion = static_cast<uint32_t>(std::atoi(std::string(target.substr(3)).c_str()));
          if (module_.smVersion == 0) fail(t.line, "unknown target '" + std::string(target) + "'");
        } else if (target != "texmode_independent" && target != "texmode_unified") {
          fail(t.line, "unknown target '" + std::string(target) + "'");
        }
        if (!accept(',')) break;
      }
    } else if (t.text == ".address_size") {
      next();
      uint64_t size = expectInt("32 or 64 after .address_size");
      if (size != 64) fail(t.line, ".address_size " + std::to_string(size) + " is not supported (only 64)");
      module_.addressSize = 64;
    } else {
      return;
    }
  }
}

void Parser::parseTopLevel() {
  const Token& t = peek();
  if (t.kind != Token::Kind::Ident || t.text[0] != '.') fail(t.line, "expected a directive, found '" + std::string(t.text) + "'");
  uint32_t line = t.line;
  bool external = false;
  if (t.text == ".visible" || t.text == ".weak" || t.text == ".extern") {
    external = t.text == ".extern";
    next();
  }
  std::string_view d = peek().text;
  if (peek().kind != Token::Kind::Ident) fail(peek().line, "expected a declaration after linkage");
  if (d == ".entry" || d == ".func") {
    next();
    parseFunction(d == ".entry", external, line);
  } else if (d == ".global" || d == ".const" || d == ".shared" || d == ".local") {
    next();
    Space space = d == ".global" ? Space::Global : d == ".const" ? Space::Const : d == ".shared" ? Space::Shared : Space::Local;
    if (space == Space::Local) fail(line, "module-scope .local variables are not supported");
    parseVariableDecl(space, external, false);
  } else if (d == ".version" || d == ".target" || d == ".address_size") {
    fail(peek().line, std::string(d) + " must come first in the module");
  } else {
    fail(peek().line, "unknown directive '" + std::string(d) + "'");
  }
}

// .param [.align N] .type [.ptr [.space] [.align N]] name [ '[' N ']' ]
Param Parser::parseParamDecl(uint32_t line, bool isEntry) {
  Param p;
  uint32_t explicitAlign = 0;
  while (peek().kind == Token::Kind::Ident && peek().text[0] == '.') {
    const Token& t = next();
    bool afterPtr = false;
    for (std::string_view part : splitDots(t.text)) {
      if (part == "align") {
        uint64_t a = expectInt("an alignment after .align");
        if (!isPowerOfTwo(a)) fail(t.line, ".align " + std::to_string(a) + " is not a power of two");
        explicitAlign = static_cast<uint32_t>(a);
      } else if (part == "ptr" && isEntry) {
        afterPtr = true;
      } else if (afterPtr && (part == "global" || part == "const" || part == "shared" || part == "local")) {
      } else if (Type ty = typeFromName(part); ty != Type::None && ty != Type::Pred && ty != Type::F16x2 && ty != Type::BF16x2) {
        if (p.type != Type::None) fail(t.line, "two types in one .param declaration");
        p.type = ty;
      } else {
        fail(t.line, "unknown .param attribute '." + std::string(part) + "'");
      }
    }
  }
  if (p.type == Type::None) fail(line, "a .param declaration needs a type");
  p.name = std::string(expectName("a parameter name"));
  uint64_t count = 1;
  if (accept('[')) {
    count = expectInt("an array size");
    expect(']', "after the array size");
    if (count == 0) fail(line, "a .param array needs a size");
  }
  p.size = static_cast<uint32_t>(typeBytes(p.type) * count);
  p.align = explicitAlign ? explicitAlign : typeBytes(p.type);
  return p;
}

void Parser::parseParamList(std::vector<Param>& out, bool isEntry) {
  expect('(', "to open the parameter list");
  if (accept(')')) return;
  for (;;) {
    const Token& t = peek();
    if (t.text != ".param") fail(t.line, "expected .param in the parameter list, found '" + std::string(t.text) + "'");
    next();
    out.push_back(parseParamDecl(t.line, isEntry));
    if (accept(')')) return;
    expect(',', "between parameters");
  }
}

void Parser::parsePerformanceDirectives(Function& fn) {
  for (;;) {
    const Token& t = peek();
    if (t.kind != Token::Kind::Ident) return;
    if (t.text == ".maxntid" || t.text == ".reqntid") {
      next();
      uint32_t* dims = t.text == ".maxntid" ? fn.maxntid : fn.reqntid;
      dims[0] = static_cast<uint32_t>(expectInt("a thread count"));
      dims[1] = dims[2] = 1;
      for (int i = 1; i < 3 && accept(','); ++i) dims[i] = static_cast<uint32_t>(expectInt("a thread count"));
    } else if (t.text == ".minnctapersm") {
      next();
      fn.minnctapersm = static_cast<uint32_t>(expectInt("a block count"));
    } else if (t.text == ".maxnreg") {
      next();
      expectInt("a register count");
    } else if (t.text == ".noreturn") {
      next();
    } else if (t.text == ".pragma") {
      next();
      if (next().kind != Token::Kind::String) fail(t.line, "expected a string after .pragma");
      expect(';', "after .pragma");
    } else {
      return;
    }
  }
}

void Parser::parseFunction(bool isEntry, bool external, uint32_t line) {
  std::vector<Param> returns;
  if (!isEntry && peek().is('(')) parseParamList(returns, false);
  std::string_view name = expectName("a function name");
  std::vector<Param> params;
  if (peek().is('(')) parseParamList(params, isEntry);

  // A prototype (a .func declared before its body, or .extern) and its definition share one index.
  const Symbol* existing = scopes_[0].count(std::string(name)) ? &scopes_[0][std::string(name)] : nullptr;
  if (existing && existing->kind != Symbol::Kind::Func) fail(line, "redefinition of '" + std::string(name) + "'");
  uint32_t index;
  if (existing) {
    index = existing->index;
    if (module_.functions[index].isEntry != isEntry) fail(line, "'" + std::string(name) + "' declared as both .entry and .func");
  } else {
    index = static_cast<uint32_t>(module_.functions.size());
    module_.functions.emplace_back();
    defined_.push_back(false);
    Symbol sym;
    sym.kind = Symbol::Kind::Func;
    sym.index = index;
    scopes_[0].emplace(std::string(name), sym);
  }
  Function& fn = module_.functions[index];
  fn.name = std::string(name);
  fn.isEntry = isEntry;
  fn.line = line;
  fn.params = std::move(params);
  fn.returns = std::move(returns);
  if (isEntry && !fn.returns.empty()) fail(line, "an .entry cannot return values");
  parsePerformanceDirectives(fn);
  if (accept(';')) return;
  if (external) fail(line, "an .extern function cannot have a body");
  if (defined_[index]) fail(line, "redefinition of '" + std::string(name) + "'");
  defined_[index] = true;
  functionIndex_ = index;

  // Parameter frame: arguments, then return values, each at its own alignment.
  scopes_.emplace_back();
  uint32_t top = 0;
  auto place = [&](Param& p) {
    p.offset = static_cast<uint32_t>(alignUp(top, p.align));
    top = p.offset + p.size;
    Symbol sym;
    sym.kind = Symbol::Kind::Param;
    sym.offset = p.offset;
    sym.size = p.size;
    sym.type = p.type;
    declare(p.name, sym, line);
  };
  for (Param& p : fn.params) place(p);
  for (Param& p : fn.returns) place(p);
  fn.paramBytes = top;
  frameTop_ = top;
  fn.frameBytes = top;
  labels_.clear();
  labelUses_.clear();
  expect('{', "to open the function body");
  parseBody();
  scopes_.pop_back();
  finishFunction();
}

// Statements until the `}` closing the function; nested blocks open scopes for registers and the
// .params of a call sequence (their frame bytes are reused once the block closes).
void Parser::parseBody() {
  size_t depth = 0;
  for (;;) {
    const Token& t = peek();
    if (t.kind == Token::Kind::End) fail(t.line, "unterminated function body");
    if (t.is('{')) {
      next();
      scopes_.emplace_back();
      frameMarks_.push_back(frameTop_);
      ++depth;
    } else if (t.is('}')) {
      next();
      if (depth == 0) return;
      scopes_.pop_back();
      frameTop_ = frameMarks_.back();
      frameMarks_.pop_back();
      --depth;
    } else {
      parseStatement();
    }
  }
}

void Parser::parseStatement() {
  const Token& t = peek();
  if (t.kind == Token::Kind::Ident && t.text[0] == '.') {
    uint32_t line = t.line;
    std::string_view d = next().text;
    if (d == ".reg") return parseRegDecl();
    if (d == ".param") return parseCallParamDecl();
    if (d == ".local") return parseVariableDecl(Space::Local, false, true);
    if (d == ".shared") return parseVariableDecl(Space::Shared, false, true);
    if (d == ".global") return parseVariableDecl(Space::Global, false, true);
    if (d == ".const") return parseVariableDecl(Space::Const, false, true);
    if (d == ".pragma") {
      if (next().kind != Token::Kind::String) fail(line, "expected a string after .pragma");
      return expect(';', "after .pragma");
    }
    fail(line, "unknown directive '" + std::string(d) + "'");
  }
  if (t.kind == Token::Kind::Ident && peek(1).is(':')) {
    std::string label(next().text);
    next();
    if (!labels_.emplace(label, static_cast<uint32_t>(function().instrs.size())).second)
      fail(t.line, "redefinition of label '" + label + "'");
    return;
  }
  parseInstruction();
}

// .reg .type %r<N>;  .reg .type %a, %b;
void Parser::parseRegDecl() {
  const Token& tt = next();
  Type type = tt.kind == Token::Kind::Ident && tt.text[0] == '.' ? typeFromName(tt.text.substr(1)) : Type::None;
  if (type == Type::None || type == Type::B128) fail(tt.line, "unknown register type '" + std::string(tt.text) + "'");
  Function& fn = function();
  auto add = [&](std::string name, uint32_t line) {
    Symbol sym;
    sym.kind = Symbol::Kind::Reg;
    sym.index = fn.registers++;
    sym.type = type;
    fn.registerTypes.push_back(type);
    fn.registerNames.push_back(name);
    declare(name, sym, line);
  };
  for (;;) {
    const Token& nt = peek();
    std::string_view name = expectName("a register name");
    if (accept('<')) {
      uint64_t n = expectInt("a register count");
      expect('>', "after the register count");
      if (n > (1u << 20)) fail(nt.line, "too many registers");
      for (uint64_t i = 0; i < n; ++i) add(std::string(name) + std::to_string(i), nt.line);
    } else {
      add(std::string(name), nt.line);
    }
    if (accept(';')) return;
    expect(',', "between register names");
  }
}

// `.param [.align N] .type name[N];` inside a body: a call's argument or return slot.
void Parser::parseCallParamDecl() {
  uint32_t line = peek().line;
  Param p = parseParamDecl(line, false);
  expect(';', "after the .param declaration");
  Function& fn = function();
  Symbol sym;
  sym.kind = Symbol::Kind::Param;
  sym.offset = static_cast<uint32_t>(alignUp(frameTop_, p.align));
  sym.size = p.size;
  sym.type = p.type;
  frameTop_ = sym.offset + sym.size;
  fn.frameBytes = std::max(fn.frameBytes, frameTop_);
  declare(p.name, sym, line);
}

// .space [.align N] .type name [ '[' N ']' ]* [= init] ;
void Parser::parseVariableDecl(Space space, bool external, bool functionScope) {
  uint32_t line = peek().line;
  Variable v;
  v.space = space;
  v.external = external;
  Type elem = Type::None;
  uint32_t explicitAlign = 0;
  while (peek().kind == Token::Kind::Ident && peek().text[0] == '.') {
    const Token& t = next();
    for (std::string_view part : splitDots(t.text)) {
      if (part == "align") {
        uint64_t a = expectInt("an alignment after .align");
        if (!isPowerOfTwo(a)) fail(t.line, ".align " + std::to_string(a) + " is not a power of two");
        explicitAlign = static_cast<uint32_t>(a);
      } else if (Type ty = typeFromName(part); ty != Type::None && ty != Type::Pred) {
        if (elem != Type::None) fail(t.line, "two types in one variable declaration");
        elem = ty;
      } else {
        fail(t.line, "unknown variable attribute '." + std::string(part) + "'");
      }
    }
  }
  if (elem == Type::None) fail(line, "a variable declaration needs a type");
  v.name = std::string(expectName("a variable name"));
  uint64_t count = 1;
  bool unsized = false;
  while (accept('[')) {
    if (accept(']')) {
      unsized = true;
      continue;
    }
    count *= expectInt("an array size");
    expect(']', "after the array size");
  }
  v.align = explicitAlign ? explicitAlign : typeBytes(elem);
  v.size = unsized ? 0 : typeBytes(elem) * count;
  if (accept('=')) {
    if (space == Space::Shared || space == Space::Local) fail(line, "a .shared or .local variable cannot have an initialiser");
    parseInitialiser(v, elem, line);
    if (unsized) v.size = v.init.size();
    if (v.init.size() > v.size) fail(line, "too many initialisers for '" + v.name + "'");
    v.init.resize(v.size, 0);
  }
  expect(';', "after the variable declaration");
  if (external && space != Space::Shared) fail(line, ".extern is only supported for dynamic .shared arrays");
  if (external != (unsized && v.init.empty())) fail(line, external ? "an .extern .shared array must be declared with []" : "an array declared with [] needs an initialiser or .extern");

  Function* fn = functionScope ? &function() : nullptr;
  if (space == Space::Shared && !external) {
    v.offset = alignUp(module_.staticSharedBytes, v.align);
    module_.staticSharedBytes = static_cast<uint32_t>(v.offset + v.size);
  } else if (space == Space::Shared) {
    module_.dynamicSharedAlign = std::max(module_.dynamicSharedAlign, v.align);
  } else if (space == Space::Local) {
    v.offset = alignUp(fn->localBytes, v.align);
    fn->localBytes = static_cast<uint32_t>(v.offset + v.size);
  }
  Symbol sym;
  sym.kind = Symbol::Kind::Var;
  sym.index = static_cast<uint32_t>(module_.variables.size());
  std::string name = v.name;
  module_.variables.push_back(std::move(v));
  declare(name, sym, line);
}

// = value | = { v, v, { v, ... }, ... }: numbers only, flattened into bytes of the element type.
void Parser::parseInitialiser(Variable& v, Type elem, uint32_t line) {
  uint32_t bytes = typeBytes(elem);
  auto element = [&]() {
    const Token& t = next();
    if (t.kind != Token::Kind::Int && t.kind != Token::Kind::F32 && t.kind != Token::Kind::F64) {
      if (t.kind == Token::Kind::Ident)
        fail(t.line, "initialisers naming symbols ('" + std::string(t.text) + "') are not supported");
      fail(t.line, "expected a number in the initialiser, found '" + std::string(t.text) + "'");
    }
    uint64_t bits = convertLiteral(t.kind, t.bits, elem, t.line, *this);
    for (uint32_t i = 0; i < bytes; ++i) v.init.push_back(static_cast<uint8_t>(bits >> (8 * i)));
  };
  auto list = [&](auto& self) -> void {
    expect('{', "to open the initialiser");
    if (accept('}')) return;
    for (;;) {
      if (peek().is('{')) self(self);
      else element();
      if (accept('}')) return;
      expect(',', "between initialisers");
    }
  };
  if (peek().is('{')) list(list);
  else element();
  (void)line;
}

void Parser::parseInstruction() {
  Instr in;
  in.line = peek().line;
  if (accept('@')) {
    in.guardNegated = accept('!');
    const Token& g = peek();
    std::string_view name = expectName("a guard predicate");
    const Symbol* sym = lookup(name);
    if (!sym || sym->kind != Symbol::Kind::Reg) fail(g.line, "undefined register '" + std::string(name) + "'");
    if (sym->type != Type::Pred) fail(g.line, "guard '" + std::string(name) + "' is not a .pred register");
    in.guard = sym->index;
  }
  const Token& op = peek();
  if (op.kind != Token::Kind::Ident || op.text[0] == '.' || op.text[0] == '%')
    fail(op.line, "expected an instruction, found '" + std::string(op.text) + "'");
  next();
  std::vector<RawOperand> operands;
  if (!accept(';')) {
    for (;;) {
      operands.push_back(parseOperand());
      if (accept(';')) break;
      expect(',', "between operands");
    }
  }
  decodeInstruction(op.text, in.line, operands, in);
  function().instrs.push_back(in);
}

RawOperand Parser::parseOperand() {
  RawOperand r;
  const Token& t = peek();
  r.line = t.line;
  if (accept('(')) {
    r.kind = RawOperand::Kind::List;
    if (accept(')')) return r;
    for (;;) {
      r.names.push_back(expectName("a .param name"));
      if (accept(')')) return r;
      expect(',', "between call arguments");
    }
  }
  if (accept('{')) {
    r.kind = RawOperand::Kind::Vec;
    for (;;) {
      r.names.push_back(expectName("a register in the vector"));
      if (accept('}')) return r;
      expect(',', "between vector elements");
    }
  }
  if (accept('[')) {
    r.kind = RawOperand::Kind::Addr;
    if (peek().kind == Token::Kind::Int) {
      r.bits = next().bits;
    } else {
      r.name = expectName("an address");
      if (accept('+')) r.bits = expectInt("an offset");
      else if (peek().kind == Token::Kind::Int && peek().text[0] == '-') r.bits = next().bits;
    }
    expect(']', "to close the address");
    return r;
  }
  if (t.kind == Token::Kind::Int || t.kind == Token::Kind::F32 || t.kind == Token::Kind::F64) {
    r.kind = t.kind == Token::Kind::Int ? RawOperand::Kind::Int : t.kind == Token::Kind::F32 ? RawOperand::Kind::F32 : RawOperand::Kind::F64;
    r.bits = next().bits;
    return r;
  }
  r.negate = accept('!');
  r.name = expectName("an operand");
  if (!r.negate && accept('|')) {
    r.kind = RawOperand::Kind::Pair;
    r.name2 = expectName("a second destination after '|'");
  }
  return r;
}

void Parser::finishFunction() {
  Function& fn = function();
  if (fn.instrs.empty()) fail(fn.line, "function '" + fn.name + "' has no instructions");
  for (const LabelUse& use : labelUses_) {
    auto it = labels_.find(use.label);
    if (it == labels_.end()) fail(use.line, "undefined label '" + use.label + "'");
    if (it->second >= fn.instrs.size()) fail(use.line, "label '" + use.label + "' has no instruction after it");
    Instr& in = fn.instrs[use.instr];
    in.target = it->second;
    in.ops[0].imm = it->second;
  }
  computeReconvergence(fn);
  fn.liveRegisterWords = maxLiveRegisterWords(fn);
}

void Parser::finishModule() {
  for (const CallUse& call : calls_) {
    if (!defined_[call.callee])
      fail(call.line, "call to '" + module_.functions[call.callee].name + "', which has no body in this module");
  }
  module_.staticSharedBytes = static_cast<uint32_t>(alignUp(module_.staticSharedBytes, module_.dynamicSharedAlign));
  for (Variable& v : module_.variables)
    if (v.external) v.offset = module_.staticSharedBytes;
}

}  // namespace detail

bool parseModule(std::string_view text, Module& out, std::string& log) {
  out = Module();
  detail::Parser parser(text, out);
  try {
    parser.parse();
  } catch (const detail::ParseError& e) {
    log += "line " + std::to_string(e.line) + ": error: " + e.message + "\n";
    return false;
  }
  return true;
}

}  // namespace gpusim::ptx
