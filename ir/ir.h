// The kiln IR: modules of functions whose bodies are blocks of ops over SSA values.
//
// Semantics in brief (the full contract is docs/ir.md):
//  - Every value is a tensor with a static TensorType (dtype + shape); scalars have shape [].
//  - A Function's body is a Block: its arguments are the parameters, its last op is `return`.
//    `map` and `while` own nested Blocks (their regions); a region's last op is `yield`.
//  - Values are defined once (SSA) and used after their definition, in the same block or a
//    nested region. Ops have no side effects, so evaluation order is only data dependence;
//    `while` is the one op whose work is data dependent.
//  - Arithmetic follows IEEE for floats (f16/bf16 compute in f32 and round), wraps for ints
//    (two's complement), and never promotes implicitly: operands of a binary op share a dtype.
//  - The IR owns its objects: a Module owns Functions, a Block owns its ops and arguments, an Op
//    owns its results and regions. Values keep use lists so replaceAllUsesWith is cheap.
#pragma once

#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ir/attr.h"
#include "ir/op_table.h"
#include "ir/status.h"
#include "ir/types.h"

namespace kiln {

class Block;
class Function;
class Op;

// One use of a value: operand `index` of `user`.
struct Use {
  Op* user;
  unsigned index;
};

class Value {
 public:
  Value(TensorType type, std::string name) : type_(std::move(type)), name_(std::move(name)) {}
  Value(const Value&) = delete;
  Value& operator=(const Value&) = delete;

  const TensorType& type() const { return type_; }
  void setType(TensorType t) { type_ = std::move(t); }
  // The name from the text format without '%' ("x", "0"); empty when built in C++ without one.
  const std::string& name() const { return name_; }
  void setName(std::string n) { name_ = std::move(n); }

  // The op that computes this value, or null for a block argument.
  Op* definingOp() const { return def_; }
  bool isBlockArgument() const { return def_ == nullptr; }
  // The block whose scope the value belongs to (the defining op's block, or the argument's block).
  Block* parentBlock() const;
  // Result index in the defining op, or argument index in the block.
  unsigned index() const { return index_; }

  const std::vector<Use>& uses() const { return uses_; }
  bool hasUses() const { return !uses_.empty(); }
  // Points every use of this value at `other` instead.
  void replaceAllUsesWith(Value* other);

 private:
  friend class Op;
  friend class Block;
  void removeUse(Op* user, unsigned index);

  TensorType type_;
  std::string name_;
  Op* def_ = nullptr;
  Block* block_ = nullptr;  // set for block arguments
  unsigned index_ = 0;
  std::vector<Use> uses_;
};

// Attributes in the order the op table lists them, holding only those set explicitly.
using AttrList = std::vector<std::pair<std::string, Attr>>;

class Op {
 public:
  // Creates a detached op; `resultTypes` may be set later with setResultTypes (after inference).
  static std::unique_ptr<Op> create(OpKind kind, const std::vector<Value*>& operands,
                                    const std::vector<TensorType>& resultTypes = {}, AttrList attrs = {},
                                    SourceLoc loc = {});
  ~Op();
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;

  OpKind kind() const { return kind_; }
  const OpInfo& info() const { return opInfo(kind_); }
  std::string_view name() const { return info().name; }
  const SourceLoc& loc() const { return loc_; }
  void setLoc(SourceLoc l) { loc_ = std::move(l); }

  size_t numOperands() const { return operands_.size(); }
  Value* operand(size_t i) const { return operands_[i]; }
  const std::vector<Value*>& operands() const { return operands_; }
  void setOperand(size_t i, Value* v);
  std::vector<TensorType> operandTypes() const;

  size_t numResults() const { return results_.size(); }
  Value* result(size_t i = 0) const { return results_[i].get(); }
  std::vector<Value*> results() const;
  // Replaces the result list (only while no result has uses).
  void setResultTypes(const std::vector<TensorType>& types);

  // Explicitly set attributes; accessors below fall back to the op table's defaults.
  const AttrList& attrs() const { return attrs_; }
  const Attr* findAttr(std::string_view name) const;
  void setAttr(std::string_view name, Attr value);
  void removeAttr(std::string_view name);
  // The attribute's value, or its default. Internal error if the op has no such attribute.
  Attr attr(std::string_view name) const;
  int64_t intAttr(std::string_view name) const { return attr(name).getInt(); }
  double floatAttr(std::string_view name) const { return attr(name).getNumber(); }
  std::vector<int64_t> intsAttr(std::string_view name) const;

  size_t numRegions() const { return regions_.size(); }
  Block* region(size_t i) const { return regions_[i].get(); }
  Block* addRegion();

  Block* parentBlock() const { return parent_; }
  // The op that owns the block holding this op, or null at function level.
  Op* parentOp() const;

 private:
  friend class Block;
  friend class Value;
  Op(OpKind kind, SourceLoc loc) : kind_(kind), loc_(std::move(loc)) {}

  OpKind kind_;
  SourceLoc loc_;
  std::vector<Value*> operands_;
  std::vector<std::unique_ptr<Value>> results_;
  AttrList attrs_;
  std::vector<std::unique_ptr<Block>> regions_;
  Block* parent_ = nullptr;
  // Where this op sits in parent_'s list (valid while parent_ is set): inserting before it,
  // erasing or taking it is O(1), as with MLIR's intrusive op lists. Splicing within the list
  // (schedule-collectives) keeps it valid.
  std::list<std::unique_ptr<Op>>::iterator position_;
};

// A straight-line list of ops with arguments, ended by a terminator (`return` or `yield`).
class Block {
 public:
  using OpList = std::list<std::unique_ptr<Op>>;

  Block() = default;
  ~Block();
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;

  Value* addArgument(TensorType type, std::string name = "");
  size_t numArguments() const { return args_.size(); }
  Value* argument(size_t i) const { return args_[i].get(); }
  std::vector<Value*> arguments() const;

  OpList& ops() { return ops_; }
  const OpList& ops() const { return ops_; }
  bool empty() const { return ops_.empty(); }
  Op* append(std::unique_ptr<Op> op);
  Op* insertBefore(Op* position, std::unique_ptr<Op> op);
  // Destroys an op whose results have no uses.
  void erase(Op* op);
  // Detaches `op` from this block, uses and all, to be appended or inserted elsewhere (a pass
  // moving ops into a region). The caller keeps the IR valid.
  std::unique_ptr<Op> take(Op* op);
  // take() of every op of `ops` (all in this block), in that order.
  std::vector<std::unique_ptr<Op>> takeAll(const std::vector<Op*>& ops);
  // The final `return` / `yield`, or null while the block is being built.
  Op* terminator() const;

  // The op owning this block as a region, or null for a function body.
  Op* parentOp() const { return parentOp_; }

 private:
  friend class Op;
  std::vector<std::unique_ptr<Value>> args_;
  OpList ops_;
  Op* parentOp_ = nullptr;
};

class Function {
 public:
  explicit Function(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  const SourceLoc& loc() const { return loc_; }
  void setLoc(SourceLoc l) { loc_ = std::move(l); }

  Block& body() { return body_; }
  const Block& body() const { return body_; }
  std::vector<Value*> params() const { return body_.arguments(); }
  std::vector<TensorType> paramTypes() const;
  // Declared result types (the `-> ...` part); the verifier checks `return` against them.
  const std::vector<TensorType>& resultTypes() const { return resultTypes_; }
  void setResultTypes(std::vector<TensorType> t) { resultTypes_ = std::move(t); }

 private:
  std::string name_;
  SourceLoc loc_;
  Block body_;
  std::vector<TensorType> resultTypes_;
};

class Module {
 public:
  Function* addFunction(std::string name);
  const std::vector<std::unique_ptr<Function>>& functions() const { return functions_; }
  Function* lookup(std::string_view name) const;
  // `@main` if present, else the first function; null for an empty module.
  Function* entry() const;
  // The function a user names: "" is the entry, "main" and "@main" the same one. Otherwise an
  // error naming `where` (the file, "the graph") and listing the functions there are.
  Expected<Function*> find(std::string_view name, const std::string& where) const;

 private:
  std::vector<std::unique_ptr<Function>> functions_;
};

// Calls fn(op) for every op in `block`, its nested regions included, in program order (pre-order).
template <class Fn>
void walkOps(const Block& block, Fn&& fn) {
  for (const auto& op : block.ops()) {
    fn(op.get());
    for (size_t r = 0; r < op->numRegions(); ++r) walkOps(*op->region(r), fn);
  }
}

}  // namespace kiln
