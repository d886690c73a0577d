// gpusim-ptxcheck: decodes PTX files as the simulator's cuModuleLoadDataEx does and reports every
// file it cannot load, with the line; --forms also prints how many files use each instruction form
// (the census of notes/gpusim.md). The census test (tests/gpusim_census.py) runs it on everything
// kiln's code generator emits, so codegen cannot emit a form the simulator does not know.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gpusim/ptx/lexer.h"
#include "gpusim/ptx/parser.h"

namespace {

// The opcode token of each instruction: an identifier that starts a statement (after `;`, `{`,
// `}`, a label's `:` or a guard) and is not a directive.
void collectForms(std::string_view text, std::set<std::string>& forms) {
  std::vector<gpusim::ptx::Token> tokens = gpusim::ptx::tokenize(text);
  bool statementStart = true;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const auto& t = tokens[i];
    using K = gpusim::ptx::Token::Kind;
    if (t.kind == K::Punct && (t.is(';') || t.is('{') || t.is('}') || t.is(':'))) {
      statementStart = true;
      continue;
    }
    if (t.kind == K::Punct && t.is('@')) {  // a guard: @%p or @!%p, then the opcode
      i += tokens[i + 1].is('!') ? 2 : 1;
      statementStart = true;
      continue;
    }
    if (statementStart && t.kind == K::Ident && t.text[0] != '.' && t.text[0] != '%' &&
        !(i + 1 < tokens.size() && tokens[i + 1].is(':')))
      forms.insert(std::string(t.text));
    statementStart = false;
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool forms = false;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--forms") forms = true;
    else if (a == "-h" || a == "--help") {
      std::printf("usage: gpusim-ptxcheck [--forms] FILE.ptx...\n");
      return 0;
    } else files.push_back(a);
  }
  if (files.empty()) {
    std::fprintf(stderr, "gpusim-ptxcheck: no PTX files given (usage: gpusim-ptxcheck [--forms] FILE.ptx...)\n");
    return 2;
  }
  int failed = 0;
  std::map<std::string, int> census;
  for (const std::string& path : files) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "%s: cannot read\n", path.c_str());
      ++failed;
      continue;
    }
    std::stringstream buffer;
    buffer << in.rdbuf();
    std::string text = buffer.str();
    gpusim::ptx::Module module;
    std::string log;
    if (!gpusim::ptx::parseModule(text, module, log)) {
      std::fprintf(stderr, "%s: %s", path.c_str(), log.c_str());
      ++failed;
    }
    if (forms) {
      std::set<std::string> used;
      collectForms(text, used);
      for (const std::string& f : used) ++census[f];
    }
  }
  if (forms) {
    std::vector<std::pair<std::string, int>> rows(census.begin(), census.end());
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second > b.second || (a.second == b.second && a.first < b.first); });
    for (const auto& [form, n] : rows) std::printf("%6d  %s\n", n, form.c_str());
  }
  std::printf("gpusim-ptxcheck: %zu file(s), %d failed to load\n", files.size(), failed);
  return failed ? 1 : 0;
}
