// `kiln ops`: the op table as a user-facing reference (name, class, arity, attributes).
#include <fmt/format.h>

#include "ir/op_table.h"
#include "tools/cli.h"

namespace kiln::cli {

namespace {
std::string_view dtypesWord(DTypeSet set) {
  switch (set) {
    case DTypeSet::Any: return "any";
    case DTypeSet::Num: return "num";
    case DTypeSet::Float: return "float";
    case DTypeSet::Int: return "int";
    case DTypeSet::SignedInt: return "signed int";
    case DTypeSet::Bool: return "bool";
  }
  return "?";
}
}  // namespace

Command opsCommand() {
  Command c{"ops", "list every op with its class, operand count and attributes", "kiln ops",
            "Prints the op table: each op's name, class (elementwise, reduction, layout, library,\n"
            "collective, region), operand count, accepted dtypes and attributes with their defaults.\n"
            "docs/ir.md gives the semantics.",
            {}, nullptr};
  c.run = [c](const Args& args) {
    if (!args.positional.empty()) return usageError(c, "takes no arguments");
    for (const OpInfo& op : allOps()) {
      if (op.cls == OpClass::Terminator) continue;
      std::string arity = op.minOperands == op.maxOperands ? std::to_string(op.minOperands)
                          : op.maxOperands < 0         ? std::to_string(op.minOperands) + "+"
                                                       : std::to_string(op.minOperands) + "-" + std::to_string(op.maxOperands);
      std::string attrs;
      for (const AttrSpec& a : op.attrs) {
        attrs += attrs.empty() ? "" : ", ";
        attrs += std::string(a.name);
        if (a.required) attrs += " (required)";
        else if (a.defaultValue) attrs += " = " + a.defaultValue->str();
        else attrs += " = " + std::string(a.computedDefault);
      }
      fmt::print("{:<22} {:<12} operands {:<3} {:<6} {}\n", op.name, opClassName(op.cls), arity, dtypesWord(op.dtypes),
                 attrs);
    }
    return kExitOk;
  };
  return c;
}

}  // namespace kiln::cli
