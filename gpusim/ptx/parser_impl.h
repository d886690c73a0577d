// The parser's shared state, internal to gpusim/ptx: parser.cpp reads the module grammar
// (directives, functions, declarations), instr.cpp decodes one instruction's opcode and operands.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gpusim/ptx/lexer.h"
#include "gpusim/ptx/module.h"

namespace gpusim::ptx::detail {

// The first error ends the parse: thrown to parseModule, which writes "line N: error: message".
struct ParseError {
  uint32_t line;
  std::string message;
};

// A name in scope: a register, a variable, a .param, or a function.
struct Symbol {
  enum class Kind : uint8_t { Reg, Var, Param, Func };
  Kind kind = Kind::Reg;
  uint32_t index = 0;   // Reg: register slot; Var: Module::variables; Func: Module::functions
  uint32_t offset = 0;  // Param: offset in the function's parameter frame
  uint32_t size = 0;    // Param: bytes
  Type type = Type::None;  // Reg: declared type
};

// An operand as written, before the opcode says what it must be.
struct RawOperand {
  enum class Kind : uint8_t { Name, Int, F32, F64, Addr, Vec, Pair, List };
  Kind kind = Kind::Name;
  uint32_t line = 0;
  bool negate = false;               // Name: `!%p`
  std::string_view name;             // Name; Addr: the base (register or symbol), empty for [imm]
  std::string_view name2;            // Pair: the second destination of `p|q`
  uint64_t bits = 0;                 // Int/F32/F64 literal; Addr: displacement
  std::vector<std::string_view> names;  // Vec ("_" for a sink) and List (call's parenthesised names)
};

class Parser;

// "u32" -> Type::U32 ("pred", "f16x2", ...); Type::None if not a type name.
Type typeFromName(std::string_view name);
// A literal's bits in type `t`'s format: integers truncated to the width (converted to a float type's
// value), 0f/0d/decimal floats rounded to a float type, or taken as bits by a same-width bit/int type.
uint64_t convertLiteral(Token::Kind kind, uint64_t bits, Type t, uint32_t line, const Parser& parser);

class Parser {
 public:
  Parser(std::string_view text, Module& out);
  void parse();

  // Used by instr.cpp.
  [[noreturn]] void fail(uint32_t line, const std::string& message) const;
  const Symbol* lookup(std::string_view name) const;
  Function& function() { return module_.functions[functionIndex_]; }
  Module& module() { return module_; }
  void decodeInstruction(std::string_view opcode, uint32_t line, std::vector<RawOperand>& operands, Instr& in);
  // Branch targets resolved when the function ends (labels may come later).
  void addLabelUse(uint32_t instr, std::string_view label, uint32_t line) { labelUses_.push_back({instr, std::string(label), line}); }
  void addCall(uint32_t callee, uint32_t line) { calls_.push_back({callee, line}); }

 private:
  const Token& peek(size_t ahead = 0) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
  const Token& next() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }
  void expect(char punct, const char* what);
  std::string_view expectName(const char* what);
  uint64_t expectInt(const char* what);
  bool accept(char punct);

  void parseHeader();
  void parseTopLevel();
  void parseFunction(bool isEntry, bool external, uint32_t line);
  void parseParamList(std::vector<Param>& out, bool isEntry);
  Param parseParamDecl(uint32_t line, bool isEntry);
  void parsePerformanceDirectives(Function& fn);
  void parseBody();
  void parseStatement();
  void parseRegDecl();
  void parseVariableDecl(Space space, bool external, bool functionScope);
  void parseCallParamDecl();
  void parseInitialiser(Variable& v, Type elem, uint32_t line);
  void parseInstruction();
  RawOperand parseOperand();
  void declare(std::string_view name, const Symbol& sym, uint32_t line);
  void finishFunction();
  void finishModule();

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  Module& module_;
  std::vector<std::unordered_map<std::string, Symbol>> scopes_;  // [0]: module scope
  uint32_t functionIndex_ = 0;
  std::vector<bool> defined_;      // per function: a body was parsed
  uint32_t frameTop_ = 0;          // next free byte of the current function's parameter frame
  std::vector<uint32_t> frameMarks_;  // frameTop_ at each open `{` (call .params are block-scoped)
  std::unordered_map<std::string, uint32_t> labels_;
  struct LabelUse { uint32_t instr; std::string label; uint32_t line; };
  std::vector<LabelUse> labelUses_;
  struct CallUse { uint32_t callee; uint32_t line; };
  std::vector<CallUse> calls_;
};

}  // namespace gpusim::ptx::detail
