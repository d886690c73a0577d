// Writing compilation stages to a --dump-dir folder (layout in dump.h).
#include "codegen/dump.h"

#include <filesystem>
#include <fstream>

#include "codegen/kernel_report.h"
#include "ir/printer.h"

namespace kiln::codegen {

namespace {

namespace fs = std::filesystem;

Status writeFile(const std::string& dir, const std::string& fileName, const std::string& text, bool append) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error("cannot create dump directory '" + dir + "': " + ec.message());
  fs::path path = fs::path(dir) / fileName;
  std::ofstream file(path, std::ios::binary | (append ? std::ios::app : std::ios::trunc));
  file << text;
  file.close();
  if (!file) return Error("cannot write " + path.string());
  return {};
}

}  // namespace

Status dumpInput(const std::string& dir, const Module& module) {
  KILN_TRY(writeFile(dir, "00-input.kiln", kiln::printModule(module, kSummaryPrint), false));
  return writeFile(dir, "kernels.txt", "", false);
}

Status dumpFile(const std::string& dir, const std::string& fileName, const std::string& text) {
  return writeFile(dir, fileName, text, false);
}

std::string describeKernels(const BlockPlan& plan) {
  std::string text;
  for (const KernelGroup* group : plan.allGroups()) {
    text += group->name + ":";
    for (size_t i = 0; i < group->ops.size(); ++i)
      text += (i ? ", " : " ") + std::string(group->ops[i]->name()) + " (" + locationText(group->ops[i]->loc()) + ")";
    text += "\n";
  }
  return text;
}

Status dumpKernelMap(const std::string& dir, const Function& function, const BlockPlan& plan) {
  return writeFile(dir, "kernels.txt", "@" + function.name() + ":\n" + describeKernels(plan), true);
}

}  // namespace kiln::codegen
