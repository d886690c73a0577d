// Formatting of errors and the one place internal errors end the process.
#include "ir/status.h"

#include <cstdio>
#include <cstdlib>

namespace kiln {

std::string SourceLoc::str() const {
  if (!known()) return "";
  std::string where = file.empty() ? "<input>" : file;
  if (line > 0) return where + ":" + std::to_string(line) + ":" + std::to_string(col);
  return where + ": " + node;
}

std::string Error::str() const {
  if (!loc_.known()) return "error: " + message_;
  return loc_.str() + ": error: " + message_;
}

void internalError(const char* file, int line, const std::string& what) {
  std::fprintf(stderr, "kiln internal error at %s:%d: %s\nThis is a bug in kiln, not in your input; please report it.\n",
               file, line, what.c_str());
  std::abort();
}

}  // namespace kiln
