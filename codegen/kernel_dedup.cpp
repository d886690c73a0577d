#include "codegen/kernel_dedup.h"

#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/Support/raw_ostream.h>

namespace kiln::codegen {

namespace {

// A kernel's code is its entry function plus the internal functions and globals the emitter
// named after it ("k3_add.loop", "k3_add.literal"): its name up to the first '.'.
std::string ownerOf(llvm::StringRef name) { return name.split('.').first.str(); }

// Everything each kernel owns, as the module prints it, by owner: the module is printed once and
// cut at its definitions. (Printing each function on its own made LLVM's writer walk every global
// of the module per print: quadratic in the number of kernels, 4 s for 7,500 kernels.)
std::unordered_map<std::string, std::string> ownedTexts(const llvm::Module& module) {
  std::string all;
  llvm::raw_string_ostream os(all);
  module.print(os, nullptr);
  os.flush();
  std::unordered_map<std::string, std::string> texts;
  std::string* current = nullptr;  // the definition being copied, until its closing brace
  for (size_t at = 0; at < all.size();) {
    size_t next = all.find('\n', at);
    if (next == std::string::npos) next = all.size();
    std::string_view line(all.data() + at, next - at);
    if (current) {
      current->append(line).push_back('\n');
      if (line == "}") current = nullptr;
    } else if (line.rfind("define ", 0) == 0 || line.rfind("@", 0) == 0) {
      // `define ... @name(` or `@name = ...`: the name runs to '(' or ' '.
      size_t nameAt = line.find('@');
      size_t nameEnd = line.find_first_of(line[0] == '@' ? " " : "(", nameAt);
      std::string name(line.substr(nameAt + 1, nameEnd - nameAt - 1));
      std::string& text = texts[ownerOf(name)];
      text.append(line).push_back('\n');
      if (line[0] == 'd') current = &text;
    }
    at = next + 1;
  }
  return texts;
}

// Metadata references (`!llvm.loop !7`) renumbered in order of first use: the module numbers its
// metadata globally, so two equal kernels refer to different numbers. The only metadata the
// emitter attaches is its loop hints (ElementEmitter::accumulateRun), the same nodes for every
// kernel of a module, so equal renumbered text is still equal code.
std::string renumberMetadata(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  std::unordered_map<std::string, size_t> numbers;
  for (size_t at = 0; at < text.size();) {
    size_t bang = text.find('!', at);
    size_t digits = bang == std::string::npos ? bang : text.find_first_not_of("0123456789", bang + 1);
    if (bang == std::string::npos || digits == bang + 1) {
      size_t end = bang == std::string::npos ? text.size() : bang + 1;
      out.append(text, at, end - at);
      at = end;
      continue;
    }
    out.append(text, at, bang + 1 - at);
    out += std::to_string(numbers.emplace(text.substr(bang + 1, digits - bang - 1), numbers.size()).first->second);
    at = digits;
  }
  return out;
}

// A kernel's text with its name replaced and its metadata renumbered: equal text, equal code.
std::string normalized(const std::string& text, const std::string& kernel) {
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0;;) {
    size_t next = text.find(kernel, at);
    out.append(text, at, next == std::string::npos ? std::string::npos : next - at);
    if (next == std::string::npos) break;
    out += "kernel";
    at = next + kernel.size();
  }
  return renumberMetadata(out);
}

}  // namespace

KernelSymbols deduplicateKernels(llvm::Module& module, const std::vector<const KernelGroup*>& groups) {
  std::unordered_map<std::string, std::vector<llvm::GlobalValue*>> owned;
  for (llvm::Function& fn : module) owned[ownerOf(fn.getName())].push_back(&fn);
  for (llvm::GlobalVariable& global : module.globals()) owned[ownerOf(global.getName())].push_back(&global);

  KernelSymbols symbols;
  std::unordered_map<std::string, std::string> firstWithText;  // kernel text -> kernel name
  std::unordered_map<std::string, std::string> texts = ownedTexts(module);
  for (const KernelGroup* group : groups) {
    llvm::Function* entry = module.getFunction(group->name);
    auto mine = owned.find(group->name);
    if (!entry || entry->isDeclaration() || mine == owned.end()) continue;
    auto [it, inserted] = firstWithText.emplace(normalized(texts[group->name], group->name), group->name);
    if (inserted) continue;
    // A copy: its entry's uses (NVPTX's kernel annotations) move to the kept kernel, and
    // everything it owned goes (the entry first: it calls the rest).
    entry->replaceAllUsesWith(module.getFunction(it->second));
    for (llvm::GlobalValue* value : mine->second) value->dropAllReferences();
    for (llvm::GlobalValue* value : mine->second) value->eraseFromParent();
    symbols[group->name] = it->second;
  }
  return symbols;
}

}  // namespace kiln::codegen
