// The gradient-check cases of grad_cases.kiln and their `# grad:` lines, for the gradient tests
// (finite differences on the interpreter, and compiled gradients against the interpreter).
#pragma once

#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

namespace kiln::test {

struct GradCase {
  std::string function;           // the function's name, without '@'
  std::vector<std::string> wrt;   // parameters to differentiate
  double lo = -2.0, hi = 2.0;     // range of the random float inputs
  double eps = 1e-6;              // central-difference step
  double tol = 1e-6;              // allowed |analytic - numeric| / max(1, |numeric|)
};

inline std::string gradCaseText() {
  std::ifstream in(std::string(KILN_SOURCE_DIR) + "/tests/unit/passes/grad_cases.kiln");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// One case per function, from the `# grad: wrt=a,b range=lo,hi eps=E tol=T` line before it.
inline std::vector<GradCase> gradCases() {
  std::vector<GradCase> cases;
  std::istringstream lines(gradCaseText());
  std::string line;
  GradCase pending;
  while (std::getline(lines, line)) {
    if (line.rfind("# grad:", 0) == 0) {
      pending = {};
      std::istringstream words(line.substr(7));
      std::string word;
      while (words >> word) {
        auto eq = word.find('=');
        std::string key = word.substr(0, eq), value = word.substr(eq + 1);
        if (key == "wrt") {
          std::istringstream names(value);
          for (std::string n; std::getline(names, n, ',');) pending.wrt.push_back(n);
        } else if (key == "range") {
          pending.lo = std::stod(value.substr(0, value.find(',')));
          pending.hi = std::stod(value.substr(value.find(',') + 1));
        } else if (key == "eps") {
          pending.eps = std::stod(value);
        } else if (key == "tol") {
          pending.tol = std::stod(value);
        }
      }
    } else if (line.rfind("func @", 0) == 0) {
      pending.function = line.substr(6, line.find('(') - 6);
      cases.push_back(pending);
      pending = {};
    }
  }
  return cases;
}

inline std::string gradCaseName(const GradCase& c) { return c.function; }
// gtest prints a case by its function's name instead of its bytes.
inline void PrintTo(const GradCase& c, std::ostream* os) { *os << c.function; }

}  // namespace kiln::test
