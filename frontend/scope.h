// SSA name scoping for the parser: which %names are visible, and where each was defined.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "frontend/lexer.h"
#include "ir/ir.h"

namespace kiln::frontend {

// A function and each region open a scope. Names never shadow: one stays taken until the scope
// that defined it closes, so sibling regions (while's cond and body) may reuse names.
class Scope {
 public:
  struct Def {
    Value* value;
    const Token* token;  // where it was defined, for "first defined at"
  };

  void push() { marks_.push_back(order_.size()); }
  void pop() {
    while (order_.size() > marks_.back()) {
      defs_.erase(order_.back());
      order_.pop_back();
    }
    marks_.pop_back();
  }
  const Def* find(const std::string& name) const {
    auto it = defs_.find(name);
    return it == defs_.end() ? nullptr : &it->second;
  }
  // The caller has checked that `name` is not visible.
  void define(const std::string& name, Value* value, const Token* token) {
    defs_.emplace(name, Def{value, token});
    order_.push_back(name);
  }

 private:
  std::unordered_map<std::string, Def> defs_;
  std::vector<std::string> order_;  // definition order, so pop() can undo a scope
  std::vector<size_t> marks_;       // order_.size() when each open scope began
};

}  // namespace kiln::frontend
