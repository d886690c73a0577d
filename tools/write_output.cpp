// Where a command's text goes: the -o file, or standard output.
#include <fmt/format.h>

#include <fstream>

#include "tools/cli.h"

namespace kiln::cli {

int writeOutput(const Args& args, const std::string& text) {
  auto out = args.get("-o");
  if (!out || *out == "-") {
    fmt::print("{}", text);
    return kExitOk;
  }
  std::ofstream file(*out, std::ios::binary);
  file << text;
  file.close();
  if (!file) {
    reportError(Error("cannot write -o file '" + *out + "'"));
    return kExitError;
  }
  return kExitOk;
}

}  // namespace kiln::cli
