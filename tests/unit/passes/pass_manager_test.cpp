// The pass manager API: the registry, running passes by name, errors, dumps and print-after-all.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "frontend/parser.h"
#include "ir/printer.h"
#include "passes/cse.h"
#include "passes/dce.h"
#include "passes/pass_manager.h"

namespace kiln::passes {
namespace {

constexpr const char* kDuplicates =
    "func @main(%x: f32[4]) -> f32[4] {\n"
    "  %a = exp %x\n"
    "  %b = exp %x\n"
    "  %c = add %a, %b\n"
    "  %d = neg %c\n"
    "  return %c\n"
    "}\n";

std::unique_ptr<Module> parse(const char* text) {
  auto m = parseModule(text, "test.kiln");
  EXPECT_TRUE(m.ok()) << m.error().str();
  return std::move(*m);
}

TEST(PassManager, RegistryListsCseAndDceWithDescriptions) {
  ASSERT_GE(registeredPasses().size(), 2u);
  for (const PassInfo& p : registeredPasses()) {
    EXPECT_FALSE(p.description.empty()) << p.name;
    EXPECT_EQ(findPass(p.name), &p);
  }
  EXPECT_NE(findPass("cse"), nullptr);
  EXPECT_NE(findPass("dce"), nullptr);
  EXPECT_EQ(findPass("frob"), nullptr);
}

TEST(PassManager, UnknownPassListsKnownOnesAndRunsNothing) {
  auto m = parse(kDuplicates);
  std::string before = printModule(*m);
  Status s = runPasses(*m, {"cse", "frob"});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message().rfind("unknown pass 'frob' (passes: canonicalize, ", 0), 0u) << s.error().message();
  EXPECT_EQ(printModule(*m), before);  // names are checked before the first pass runs
}

TEST(PassManager, RunsPassesInOrder) {
  auto m = parse(kDuplicates);
  ASSERT_TRUE(runPasses(*m, {"cse", "dce"}).ok());
  EXPECT_EQ(printModule(*m),
            "func @main(%x: f32[4]) -> f32[4] {\n"
            "  %a = exp %x : f32[4]\n"
            "  %c = add %a, %a : f32[4]\n"
            "  return %c\n"
            "}\n");
}

TEST(PassManager, PassesReportWhetherTheyChangedAnything) {
  auto m = parse(kDuplicates);
  PassContext context;
  auto cse = eliminateCommonSubexpressions(*m, context);
  ASSERT_TRUE(cse.ok());
  EXPECT_TRUE(*cse);
  auto dce = eliminateDeadCode(*m, context);
  ASSERT_TRUE(dce.ok());
  EXPECT_TRUE(*dce);
  // At the fixed point both say "no change".
  EXPECT_FALSE(*eliminateCommonSubexpressions(*m, context));
  EXPECT_FALSE(*eliminateDeadCode(*m, context));
}

TEST(PassManager, PrintAfterAllHeadsEachModuleWithThePass) {
  auto m = parse(kDuplicates);
  std::ostringstream out;
  PassRunOptions options;
  options.printAfterAll = &out;
  ASSERT_TRUE(runPasses(*m, {"cse", "dce"}, options).ok());
  std::string text = out.str();
  size_t cse = text.find("# IR after cse\nfunc @main");
  size_t dce = text.find("# IR after dce\nfunc @main");
  ASSERT_NE(cse, std::string::npos) << text;
  ASSERT_NE(dce, std::string::npos) << text;
  EXPECT_LT(cse, dce);
}

TEST(PassManager, DumpDirGetsNumberedFilesPerPass) {
  auto dir = std::filesystem::temp_directory_path() / ("kiln_pass_dump_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto m = parse(kDuplicates);
  PassRunOptions options;
  options.dumpDir = dir.string();
  ASSERT_TRUE(runPasses(*m, {"cse", "dce", "cse"}, options).ok());
  EXPECT_TRUE(std::filesystem::exists(dir / "01-cse.kiln"));
  EXPECT_TRUE(std::filesystem::exists(dir / "02-dce.kiln"));
  EXPECT_TRUE(std::filesystem::exists(dir / "03-cse.kiln"));
  std::ifstream last(dir / "03-cse.kiln");
  std::stringstream text;
  text << last.rdbuf();
  EXPECT_EQ(text.str(), printModule(*m));
  std::filesystem::remove_all(dir);
}

// A pass that breaks the IR: drops the entry's `return`, so the body has no terminator.
PassResult dropReturn(Module& m, PassContext&) {
  Block& body = m.entry()->body();
  body.erase(body.terminator());
  return true;
}

TEST(PassManager, InvalidIrAfterAPassIsAnInternalErrorNamingIt) {
  auto m = parse(kDuplicates);
  Status s = runPipeline(*m, {{"cse", "", eliminateCommonSubexpressions}, {"drop-return", "", dropReturn}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("internal error: IR after pass 'drop-return' does not verify"), std::string::npos)
      << s.error().message();
}

PassResult failing(Module&, PassContext&) { return Error("cannot do that"); }

TEST(PassManager, PassErrorsArePrefixedWithThePass) {
  auto m = parse(kDuplicates);
  Status s = runPipeline(*m, {{"failing", "", failing}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message(), "pass failing: cannot do that");
}

TEST(PassManager, NoPassesLeavesTheModuleAlone) {
  auto m = parse(kDuplicates);
  std::string before = printModule(*m);
  ASSERT_TRUE(runPasses(*m, {}).ok());
  EXPECT_EQ(printModule(*m), before);
}

}  // namespace
}  // namespace kiln::passes
