// Fusion benchmark: for every examples/*.kiln, kernels and bytes moved (read + written, one launch
// each) with the full pass pipeline and with fusion disabled, from plans alone (no compilation,
// no GPU), so the effect of fusion on memory traffic is one table. Usage:
//   kiln_fusion_bench [--markdown] [EXAMPLES_DIR]
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "codegen/kernel_report.h"
#include "frontend/parser.h"

namespace {

struct Row {
  std::string graph;
  size_t kernelsBefore = 0, kernelsAfter = 0;
  uint64_t bytesBefore = 0, bytesAfter = 0;
};

kiln::Expected<Row> measure(const std::filesystem::path& file) {
  auto module = kiln::parseFile(file.string());
  if (!module) return module.error();
  const kiln::Function* f = (*module)->entry();
  if (!f) return kiln::Error(file.string() + ": no function");
  kiln::codegen::CompileOptions options;
  auto after = kiln::codegen::reportPlan(*f, options);
  if (!after) return after.error();
  auto before = kiln::codegen::reportPlan(*f, kiln::codegen::withoutFusion(options));
  if (!before) return before.error();
  return Row{file.stem().string(), before->kernels.size(), after->kernels.size(),
             before->bytesRead + before->bytesWritten, after->bytesRead + after->bytesWritten};
}

// before / after: how many times fewer bytes the fused plan moves.
std::string ratio(const Row& r) { return r.bytesAfter ? fmt::format("{:.2f}x", double(r.bytesBefore) / double(r.bytesAfter)) : "-"; }

void printTable(const std::vector<Row>& rows, bool markdown) {
  if (markdown) {
    fmt::print("| graph | kernels before | kernels after | bytes before | bytes after | ratio |\n");
    fmt::print("|---|---:|---:|---:|---:|---:|\n");
    for (const Row& r : rows)
      fmt::print("| {} | {} | {} | {} | {} | {} |\n", r.graph, r.kernelsBefore, r.kernelsAfter, r.bytesBefore,
                 r.bytesAfter, ratio(r));
    return;
  }
  fmt::print("{:<16} {:>14} {:>13} {:>14} {:>14} {:>7}\n", "graph", "kernels before", "kernels after", "bytes before",
             "bytes after", "ratio");
  for (const Row& r : rows)
    fmt::print("{:<16} {:>14} {:>13} {:>14} {:>14} {:>7}\n", r.graph, r.kernelsBefore, r.kernelsAfter, r.bytesBefore,
               r.bytesAfter, ratio(r));
}

}  // namespace

int main(int argc, char** argv) {
  bool markdown = false;
  std::string dir = KILN_EXAMPLES_DIR;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--markdown")) markdown = true;
    else if (argv[i][0] != '-') dir = argv[i];
    else return fmt::print(stderr, "usage: kiln_fusion_bench [--markdown] [EXAMPLES_DIR]\n"), 2;
  }
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.path().extension() == ".kiln") files.push_back(entry.path());
  if (ec || files.empty()) return fmt::print(stderr, "kiln_fusion_bench: no .kiln files in '{}'\n", dir), 1;
  std::sort(files.begin(), files.end());  // a stable table, whatever order the directory lists
  std::vector<Row> rows;
  for (const auto& file : files) {
    auto row = measure(file);
    if (!row) return fmt::print(stderr, "{}\n", row.error().str()), 1;
    rows.push_back(*row);
  }
  printTable(rows, markdown);
  return 0;
}
