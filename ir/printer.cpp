// Prints IR as .kiln text. Value names are kept where they are valid and unambiguous; other values
// get the smallest free number, so C++-built graphs print as %0, %1, ...
#include "ir/printer.h"

#include <cctype>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "ir/constant_data.h"

namespace kiln {

std::string printTypes(const std::vector<TensorType>& types) {
  std::string s;
  for (const auto& t : types) s += (s.empty() ? "" : ", ") + t.str();
  return s;
}

namespace {

bool isValidName(const std::string& n) {
  if (n.empty()) return false;
  bool digits = true;
  for (char c : n) digits = digits && std::isdigit(static_cast<unsigned char>(c));
  if (digits) return true;
  if (!std::isalpha(static_cast<unsigned char>(n[0])) && n[0] != '_') return false;
  for (char c : n)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.') return false;
  return true;
}

class FunctionPrinter {
 public:
  FunctionPrinter(const Function& f, const PrintOptions& options) : f_(f), options_(options) {
    // Names given by the user are reserved up front so numbering never collides with a later one.
    collectNames(f.body());
  }

  std::string print() {
    std::string out = "func @" + f_.name() + "(";
    std::vector<Value*> params = f_.params();
    for (size_t i = 0; i < params.size(); ++i)
      out += (i ? ", " : "") + define(params[i]) + ": " + params[i]->type().str();
    out += ") -> ";
    const auto& results = f_.resultTypes();
    out += results.size() == 1 ? results[0].str() : "(" + printTypes(results) + ")";
    out += " {\n";
    printBlock(f_.body(), 1, out);
    return out + "}\n";
  }

 private:
  void collectNames(const Block& b) {
    for (Value* a : b.arguments()) reserve(a);
    for (const auto& op : b.ops()) {
      for (Value* r : op->results()) reserve(r);
      for (size_t i = 0; i < op->numRegions(); ++i) collectNames(*op->region(i));
    }
  }
  void reserve(const Value* v) {
    if (isValidName(v->name())) reserved_.insert(v->name());
  }

  // Picks the value's printed name: its own if valid and not visible here, else the next free number.
  std::string pickName(const Value* v) {
    if (isValidName(v->name()) && !visible_.count(v->name())) return v->name();
    std::string name;
    do name = std::to_string(next_++);
    while (reserved_.count(name) || visible_.count(name));
    return name;
  }

  // Makes `name` the value's name in the current scope and returns "%name".
  std::string bind(const Value* v, const std::string& name) {
    visible_.insert(name);
    scope_.push_back(name);
    names_[v] = name;
    return "%" + name;
  }

  std::string define(const Value* v) { return bind(v, pickName(v)); }

  std::string use(const Value* v) const {
    auto it = names_.find(v);
    return it == names_.end() ? "%<undefined>" : "%" + it->second;
  }

  void printBlock(const Block& b, int depth, std::string& out) {
    for (const auto& op : b.ops()) printOp(*op, depth, out);
  }

  void printRegion(const Block& region, const std::vector<std::string>& argNames, int depth, std::string& out) {
    size_t mark = scope_.size();
    for (size_t i = 0; i < region.numArguments(); ++i) bind(region.argument(i), argNames[i]);
    out += "{\n";
    printBlock(region, depth + 1, out);
    out += std::string(2 * depth, ' ') + "}";
    while (scope_.size() > mark) {
      visible_.erase(scope_.back());
      scope_.pop_back();
    }
  }

  // `(%a: T, %b: U)`: names for the region parameters, shared by while's cond and body.
  std::string regionParams(const Block& region, std::vector<std::string>& names) {
    std::string s = "(";
    std::unordered_set<std::string> taken;
    for (size_t i = 0; i < region.numArguments(); ++i) {
      const Value* a = region.argument(i);
      std::string n = a->name();
      if (!isValidName(n) || visible_.count(n) || taken.count(n))
        do n = std::to_string(next_++);
        while (reserved_.count(n) || visible_.count(n) || taken.count(n));
      taken.insert(n);
      names.push_back(n);
      s += (i ? ", %" : "%") + n + ": " + a->type().str();
    }
    return s + ")";
  }

  void printOp(const Op& op, int depth, std::string& out) {
    std::string indent(2 * depth, ' ');
    // Result names are picked first so numbering follows the text, but bound only after the
    // regions: like the parser, a region does not see the results of its own op.
    std::vector<std::string> resultNames;
    for (Value* r : op.results()) resultNames.push_back(pickName(r));
    std::string text = std::string(op.name());
    if (op.kind() == OpKind::Constant) {
      text += " " + literal(op);
      // `{data = true}` and any other attribute besides the value.
      std::string extra;
      for (const auto& [name, value] : op.attrs())
        if (name != "value") extra += (extra.empty() ? "" : ", ") + name + " = " + value.str();
      if (!extra.empty()) text += " {" + extra + "}";
    } else {
      for (size_t i = 0; i < op.numOperands(); ++i) text += (i ? ", " : " ") + use(op.operand(i));
      if (!op.attrs().empty()) {
        text += " {";
        for (size_t i = 0; i < op.attrs().size(); ++i)
          text += (i ? ", " : "") + op.attrs()[i].first + " = " + op.attrs()[i].second.str();
        text += "}";
      }
    }
    if (op.numRegions() > 0) {
      std::vector<std::string> argNames;
      text += " " + regionParams(*op.region(0), argNames);
      static const char* whileNames[] = {"cond", "body"};
      for (size_t r = 0; r < op.numRegions(); ++r) {
        text += " ";
        if (op.kind() == OpKind::While) text += std::string(whileNames[r]) + " ";
        printRegion(*op.region(r), argNames, depth, text);
      }
    }
    std::string results;
    for (size_t i = 0; i < op.numResults(); ++i) results += (i ? ", " : "") + bind(op.result(i), resultNames[i]);
    if (op.numResults() > 0) {
      std::vector<TensorType> types;
      for (Value* r : op.results()) types.push_back(r->type());
      text = results + " = " + text + " : " + printTypes(types);
    }
    out += indent + text + "\n";
  }

  std::string literal(const Op& constant) const {
    const Tensor& value = constant.attr("value").getDense();
    if (options_.elideConstantsAbove < 0 || value.numElements() <= options_.elideConstantsAbove ||
        !isConstantData(constant))
      return formatDense(value);
    return fmt::format("elided \"{} elements, hash {:016x}\"", value.numElements(), contentHash(value));
  }

  const Function& f_;
  const PrintOptions& options_;
  std::unordered_set<std::string> reserved_;
  std::unordered_set<std::string> visible_;
  std::vector<std::string> scope_;
  std::unordered_map<const Value*, std::string> names_;
  int next_ = 0;
};

}  // namespace

std::string printFunction(const Function& function, const PrintOptions& options) {
  return FunctionPrinter(function, options).print();
}

std::string printModule(const Module& module, const PrintOptions& options) {
  std::string out;
  for (size_t i = 0; i < module.functions().size(); ++i) {
    if (i) out += "\n";
    out += printFunction(*module.functions()[i], options);
  }
  return out;
}

}  // namespace kiln
