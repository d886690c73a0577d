// The .kiln parser: functions, blocks, statements and SSA scoping, by recursive descent over the
// lexer's tokens. The first error ends the parse; a parsed module is verified before it is returned.
#include "frontend/parser.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "frontend/cursor.h"
#include "frontend/literals.h"
#include "frontend/op_checks.h"
#include "frontend/scope.h"
#include "ir/verifier.h"

namespace kiln {

namespace frontend {
namespace {

// What a block is, for its terminator and for messages ("the body of @main").
struct BlockInfo {
  OpKind terminator;  // Return for a function body, Yield for a region
  std::string what;
  const Token* open;  // its '{'
};

class Parser {
 public:
  Parser(std::string_view text, const std::string& file) : c_(text, file), module_(std::make_unique<Module>()) {}

  Expected<std::unique_ptr<Module>> run() {
    // A file holds one or more functions, so even an empty one gets "expected 'func'".
    for (;;) {
      KILN_TRY(parseFunction());
      if (c_.at(Tok::Eof)) break;
    }
    KILN_TRY(verifyModule(*module_));
    return std::move(module_);
  }

 private:
  // func := 'func' '@' NAME '(' [param {',' param}] ')' '->' results '{' {stmt} '}'
  Status parseFunction() {
    const Token& kw = c_.peek();
    if (!kw.isWord("func")) return c_.unexpected("'func' to start a function");
    c_.next();
    auto name = c_.expect(Tok::Global, "a function name such as @main after 'func'");
    if (!name) return name.error();
    std::string fname((*name)->text.substr(1));
    if (auto it = functions_.find(fname); it != functions_.end())
      return c_.error(**name, "redefinition of @" + fname + " (first defined at " + Cursor::lineCol(*it->second) + ")");
    functions_.emplace(fname, *name);
    Function* f = module_->addFunction(fname);
    f->setLoc(c_.loc(kw));
    scope_ = Scope();
    scope_.push();

    if (!c_.consumeIf(Tok::LParen)) return c_.unexpected("'(' and the parameters after @" + fname);
    if (!c_.consumeIf(Tok::RParen)) {
      for (;;) {
        auto param = parseParam();
        if (!param) return param.error();
        KILN_TRY(define(*param->name, f->body().addArgument(param->type, valueName(*param->name))));
        if (c_.consumeIf(Tok::Comma)) continue;
        if (c_.consumeIf(Tok::RParen)) break;
        return c_.unexpected("',' or ')' after parameter");
      }
    }
    if (!c_.consumeIf(Tok::Arrow)) return c_.unexpected("'->' and the result types after the parameters");
    auto results = parseResultTypes();
    if (!results) return results.error();
    f->setResultTypes(*results);

    const Token& open = c_.peek();
    if (!c_.consumeIf(Tok::LBrace)) return c_.unexpected("'{' to open the body of @" + fname);
    return parseBlock(f->body(), {OpKind::Return, "the body of @" + fname, &open});
  }

  // results := type | '(' [type {',' type}] ')'
  Expected<std::vector<TensorType>> parseResultTypes() {
    if (!c_.consumeIf(Tok::LParen)) {
      auto t = parseType(c_);
      if (!t) return t.error();
      return std::vector<TensorType>{*t};
    }
    if (c_.consumeIf(Tok::RParen)) return std::vector<TensorType>{};
    auto types = parseTypeList(c_);
    if (!types) return types.error();
    if (!c_.consumeIf(Tok::RParen)) return c_.unexpected("',' or ')' after result type");
    return types;
  }

  // param := VALUE ':' type
  Expected<RegionParam> parseParam() {
    auto name = c_.expect(Tok::ValueRef, "a parameter such as %x: f32[4]");
    if (!name) return name.error();
    if (!c_.consumeIf(Tok::Colon)) return c_.unexpected("':' and a type after parameter " + std::string((*name)->text));
    auto type = parseType(c_);
    if (!type) return type.error();
    return RegionParam{*name, *type};
  }

  // The statements of a block after its '{', through its '}'; the last one is its terminator.
  Status parseBlock(Block& block, const BlockInfo& info) {
    std::string term(opInfo(info.terminator).name);
    for (;;) {
      const Token& t = c_.peek();
      if (t.is(Tok::Eof)) return unclosed(info);
      if (t.is(Tok::RBrace)) return c_.error(t, "expected '" + term + "' at the end of " + info.what + ", got '}'");
      if (t.isWord("return") || t.isWord("yield")) break;
      if (!t.is(Tok::ValueRef)) return c_.unexpected("a statement ('%name = op ...' or '" + term + "') or '}'");
      KILN_TRY(parseOpStatement(block));
    }
    KILN_TRY(parseTerminator(block, info));
    if (c_.at(Tok::Eof)) return unclosed(info);
    if (!c_.consumeIf(Tok::RBrace)) return c_.unexpected("'}' after '" + term + "', which ends " + info.what);
    return {};
  }

  Error unclosed(const BlockInfo& info) const {
    return c_.error(c_.peek(), "expected '}' to close " + info.what + " (opened at " + Cursor::lineCol(*info.open) +
                                   "), got end of file");
  }

  // 'return' [VALUE {',' VALUE}]  |  'yield' [VALUE {',' VALUE}]
  Status parseTerminator(Block& block, const BlockInfo& info) {
    const Token& kw = c_.peek();
    if (kw.isWord("return") && info.terminator != OpKind::Return)
      return c_.error(kw, "'return' is not allowed inside a region (a region ends with 'yield')");
    if (kw.isWord("yield") && info.terminator != OpKind::Yield)
      return c_.error(kw, "'yield' is only allowed inside a region (a function ends with 'return')");
    c_.next();
    std::vector<Value*> operands;
    if (c_.at(Tok::ValueRef) && !atStatementStart()) {
      do {
        auto v = parseOperand();
        if (!v) return v.error();
        operands.push_back(*v);
      } while (c_.consumeIf(Tok::Comma));
    }
    block.append(Op::create(info.terminator, operands, {}, {}, c_.loc(kw)));
    return {};
  }

  // stmt := VALUE {',' VALUE} '=' OP [operands] [attrs] [region...] [':' types]
  Status parseOpStatement(Block& block) {
    ParsedOp p;
    std::unordered_map<std::string_view, const Token*> names;  // this statement's, defined after the op
    do {
      auto name = c_.expect(Tok::ValueRef, "a result name such as %y");
      if (!name) return name.error();
      KILN_TRY(checkUndefined(**name));
      if (auto [it, fresh] = names.emplace((*name)->text, *name); !fresh)
        return c_.error(**name, "redefinition of " + std::string((*name)->text) + " (first defined at " +
                                    Cursor::lineCol(*it->second) + ")");
      p.results.push_back(*name);
    } while (c_.consumeIf(Tok::Comma));
    if (!c_.consumeIf(Tok::Equal)) return c_.unexpected("',' or '=' after " + std::string(p.results.back()->text));

    p.name = &c_.peek();
    if (!p.name->is(Tok::Ident)) return c_.unexpected("an op name");
    auto kind = lookupOp(p.name->text);
    if (!kind) return c_.error(*p.name, unknownOpMessage(p.name->text));
    if (opInfo(*kind).cls == OpClass::Terminator)
      return c_.error(*p.name, "'" + std::string(p.name->text) + "' produces no values; write it without '%name ='");
    c_.next();

    auto op = *kind == OpKind::Constant ? parseConstant(p) : parseGeneralOp(p, *kind);
    if (!op) return op.error();
    // Whatever follows must start the next statement: `add %a %b` is a syntax error (a missing
    // ','), not an add with one operand, and a lexical error is reported as itself.
    if (!atStatementEnd()) return c_.unexpected("the end of the statement");
    KILN_TRY(inferResults(c_, p, **op));
    Op* appended = block.append(std::move(*op));
    for (size_t i = 0; i < p.results.size(); ++i) {
      appended->result(i)->setName(valueName(*p.results[i]));
      KILN_TRY(define(*p.results[i], appended->result(i)));
    }
    return {};
  }

  // 'constant' LITERAL [attrs] ':' TYPE
  Expected<std::unique_ptr<Op>> parseConstant(ParsedOp& p) {
    if (c_.peek().isWord("elided"))
      return c_.error(c_.peek(),
                      "constant: its value was elided when this text was printed (a summary of constant "
                      "data, not its bytes); print it with `kiln print --full-constants` or import the model again");
    auto literal = parseLiteral(c_);
    if (!literal) return literal.error();
    AttrList attrs;
    if (c_.at(Tok::LBrace)) {
      const Token& brace = c_.peek();
      KILN_TRY(parseAttrDict(opInfo(OpKind::Constant), attrs));
      for (const auto& attr : attrs)
        if (attr.first == "value") return c_.error(brace, "constant: its value is the literal before the attributes");
    }
    if (!c_.at(Tok::Colon)) return c_.unexpected("':' and the constant's type after its literal");
    KILN_TRY(parseAnnotation(p));
    if (p.annotation.size() != 1)
      return c_.error(*p.annotationTokens[1], "constant: expected one type, got " + std::to_string(p.annotation.size()));
    auto tensor = buildTensor(c_, *literal, p.annotation[0]);
    if (!tensor) return tensor.error();
    attrs.insert(attrs.begin(), {"value", Attr(std::move(*tensor))});
    return Op::create(OpKind::Constant, {}, {}, std::move(attrs), c_.loc(*p.name));
  }

  // OP [operands] [attrs] [region...] [':' types]
  Expected<std::unique_ptr<Op>> parseGeneralOp(ParsedOp& p, OpKind kind) {
    const OpInfo& info = opInfo(kind);
    std::vector<Value*> operands;
    KILN_TRY(parseOperands(p, info, operands));
    AttrList attrs;
    if (c_.at(Tok::LBrace)) KILN_TRY(parseAttrDict(info, attrs));
    auto op = Op::create(kind, operands, {}, std::move(attrs), c_.loc(*p.name));
    if (info.numRegions > 0) KILN_TRY(parseRegions(*op));
    if (c_.at(Tok::Colon)) KILN_TRY(parseAnnotation(p));
    return op;
  }

  // operands := VALUE {',' VALUE} | '(' [VALUE {',' VALUE}] ')'
  Status parseOperands(ParsedOp& p, const OpInfo& info, std::vector<Value*>& operands) {
    auto add = [&]() -> Status {
      if (!p.firstOperand && c_.at(Tok::ValueRef)) p.firstOperand = &c_.peek();
      auto v = parseOperand();
      if (!v) return v.error();
      operands.push_back(*v);
      return {};
    };
    if (c_.at(Tok::LParen) && !(info.numRegions > 0 && atRegionParams())) {
      c_.next();
      if (c_.consumeIf(Tok::RParen)) return {};
      for (;;) {
        KILN_TRY(add());
        if (c_.consumeIf(Tok::Comma)) continue;
        if (c_.consumeIf(Tok::RParen)) return {};
        return c_.unexpected("',' or ')' after operand");
      }
    }
    // A %name that starts the next statement (`%z = ...`) is not an operand: `%y = neg` then
    // reports a missing operand rather than an odd use of %z.
    if (!c_.at(Tok::ValueRef) || atStatementStart()) return {};
    do KILN_TRY(add());
    while (c_.consumeIf(Tok::Comma));
    return {};
  }

  Expected<Value*> parseOperand() {
    auto name = c_.expect(Tok::ValueRef, "an operand such as %x");
    if (!name) return name.error();
    const Scope::Def* def = scope_.find(valueName(**name));
    if (!def) return c_.error(**name, "use of undefined value " + std::string((*name)->text));
    return def->value;
  }

  // The next statement, the block's terminator or its end ahead?
  bool atStatementEnd() const {
    const Token& t = c_.peek();
    return t.is(Tok::RBrace) || t.is(Tok::Eof) || t.isWord("return") || t.isWord("yield") || atStatementStart();
  }

  // VALUE {',' VALUE} '=' ahead?
  bool atStatementStart() const {
    size_t k = 0;
    while (c_.peek(k).is(Tok::ValueRef) && c_.peek(k + 1).is(Tok::Comma)) k += 2;
    return c_.peek(k).is(Tok::ValueRef) && c_.peek(k + 1).is(Tok::Equal);
  }

  // `(%x: T` or `() {` / `() cond` ahead: region parameters, not parenthesised operands.
  bool atRegionParams() const {
    if (c_.peek(1).is(Tok::ValueRef)) return c_.peek(2).is(Tok::Colon);
    return c_.peek(1).is(Tok::RParen) && (c_.peek(2).is(Tok::LBrace) || c_.peek(2).isWord("cond"));
  }

  // attrs := '{' NAME '=' attr {',' NAME '=' attr} '}'
  Status parseAttrDict(const OpInfo& info, AttrList& attrs) {
    c_.next();
    std::unordered_map<std::string_view, const Token*> seen;
    for (;;) {
      auto name = c_.expect(Tok::Ident, "an attribute name");
      if (!name) return name.error();
      if (auto it = seen.find((*name)->text); it != seen.end())
        return c_.error(**name, std::string(info.name) + ": attribute '" + std::string((*name)->text) +
                                    "' is given twice (first at " + Cursor::lineCol(*it->second) + ")");
      seen.emplace((*name)->text, *name);
      if (!c_.consumeIf(Tok::Equal)) return c_.unexpected("'=' after attribute name '" + std::string((*name)->text) + "'");
      auto value = parseAttrValue(c_);
      if (!value) return value.error();
      if (Status s = checkAttribute(info, (*name)->text, *value); !s)
        return c_.error(**name, std::string(info.name) + ": " + s.error().message());
      attrs.emplace_back(std::string((*name)->text), std::move(*value));
      if (c_.consumeIf(Tok::Comma)) continue;
      if (c_.consumeIf(Tok::RBrace)) return {};
      return c_.unexpected("',' or '}' after attribute");
    }
  }

  // map: '(' params ')' '{' ... '}'; while: '(' params ')' 'cond' '{' ... '}' 'body' '{' ... '}'.
  // Every region gets the same parameters.
  Status parseRegions(Op& op) {
    const Token& open = c_.peek();
    if (!c_.consumeIf(Tok::LParen)) return c_.unexpected("'(' and the region parameters, such as (%x: f32[4])");
    std::vector<RegionParam> params;
    if (!c_.consumeIf(Tok::RParen)) {
      for (;;) {
        auto param = parseParam();
        if (!param) return param.error();
        params.push_back(*param);
        if (c_.consumeIf(Tok::Comma)) continue;
        if (c_.consumeIf(Tok::RParen)) break;
        return c_.unexpected("',' or ')' after region parameter");
      }
    }
    KILN_TRY(checkRegionParams(c_, op, open, params));
    bool isWhile = op.kind() == OpKind::While;
    for (int r = 0; r < opInfo(op.kind()).numRegions; ++r) {
      const char* label = isWhile ? (r == 0 ? "cond" : "body") : "body";
      if (isWhile) {
        if (!c_.atWord(label)) return c_.unexpected("'" + std::string(label) + "' and the " + label + " region");
        c_.next();
      }
      const Token& brace = c_.peek();
      if (!c_.consumeIf(Tok::LBrace)) return c_.unexpected("'{' to open the " + std::string(label) + " region");
      if (depth_ >= kMaxNesting)
        return c_.error(brace, "regions are nested too deeply (the limit is " + std::to_string(kMaxNesting) + ")");
      Block* region = op.addRegion();
      ++depth_;
      scope_.push();
      Status s = defineParams(*region, params);
      if (s) s = parseBlock(*region, {OpKind::Yield, "the " + std::string(label) + " region of " + std::string(op.name()), &brace});
      scope_.pop();
      --depth_;
      KILN_TRY(s);
      if (isWhile) KILN_TRY(checkWhileYield(op, *region, r == 0));
    }
    return {};
  }

  Status defineParams(Block& region, const std::vector<RegionParam>& params) {
    for (const RegionParam& p : params) KILN_TRY(define(*p.name, region.addArgument(p.type, valueName(*p.name))));
    return {};
  }

  // ':' type {',' type}, remembering where each type starts.
  Status parseAnnotation(ParsedOp& p) {
    c_.next();
    p.annotated = true;
    do {
      p.annotationTokens.push_back(&c_.peek());
      auto t = parseType(c_);
      if (!t) return t.error();
      p.annotation.push_back(*t);
    } while (c_.consumeIf(Tok::Comma));
    return {};
  }

  static std::string valueName(const Token& t) { return std::string(t.text.substr(1)); }

  Status checkUndefined(const Token& name) const {
    if (const Scope::Def* def = scope_.find(valueName(name)))
      return c_.error(name, "redefinition of " + std::string(name.text) + " (first defined at " +
                                Cursor::lineCol(*def->token) + ")");
    return {};
  }

  Status define(const Token& name, Value* value) {
    KILN_TRY(checkUndefined(name));
    scope_.define(valueName(name), value, &name);
    return {};
  }

  Cursor c_;
  std::unique_ptr<Module> module_;
  Scope scope_;
  std::unordered_map<std::string, const Token*> functions_;
  int depth_ = 0;  // regions open around the current statement
};

}  // namespace
}  // namespace frontend

Expected<std::unique_ptr<Module>> parseModule(std::string_view text, const std::string& filename) {
  return frontend::Parser(text, filename).run();
}

Expected<std::unique_ptr<Module>> parseFile(const std::string& path) {
  auto fail = [&](int err) { return Error("cannot read '" + path + "': " + std::strerror(err)); };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(errno);
  std::string text;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return fail(err);
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return parseModule(text, path);
}

}  // namespace kiln
