// Round trip over every .kiln file in the tree: printing, parsing the print and printing again gives
// the same bytes. Negative tests (files run with `not kiln`) are skipped.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "frontend/parser.h"
#include "ir/printer.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> kilnFiles(const fs::path& root) {
  std::vector<fs::path> files;
  if (!fs::exists(root)) return files;
  for (const auto& entry : fs::recursive_directory_iterator(root))
    if (entry.is_regular_file() && entry.path().extension() == ".kiln") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::string readText(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(RoundTrip, EveryKilnFileInTheTree) {
  fs::path source(KILN_SOURCE_DIR);
  int checked = 0;
  for (const char* dir : {"examples", "tests/lit"}) {
    for (const fs::path& file : kilnFiles(source / dir)) {
      std::string text = readText(file);
      if (text.find("not kiln") != std::string::npos) continue;
      SCOPED_TRACE(file.string());
      auto first = parseModule(text, file.string());
      ASSERT_TRUE(first.ok()) << first.error().str();
      std::string printed = printModule(**first);
      auto second = parseModule(printed, "printed.kiln");
      ASSERT_TRUE(second.ok()) << second.error().str() << "\n" << printed;
      EXPECT_EQ(printModule(**second), printed);
      ++checked;
    }
  }
  // The examples alone hold several programs; finding none means the paths are wrong.
  EXPECT_GE(checked, 5);
}

}  // namespace
}  // namespace kiln
