// Formatting of errors and the one place internal errors end the process.
#include "ir/status.h"

#include <cstdio>
#include <cstdlib>

namespace kiln {

std::string Error::str() const {
  if (!loc_.known()) return "error: " + message_;
  std::string where = loc_.file.empty() ? "<input>" : loc_.file;
  return where + ":" + std::to_string(loc_.line) + ":" + std::to_string(loc_.col) + ": error: " + message_;
}

void internalError(const char* file, int line, const std::string& what) {
  std::fprintf(stderr, "kiln internal error at %s:%d: %s\nThis is a bug in kiln, not in your input; please report it.\n",
               file, line, what.c_str());
  std::abort();
}

}  // namespace kiln
