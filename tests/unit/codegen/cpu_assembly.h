// The x86 assembly of a program's @main as the CPU backend compiles it (compileForCpu, after the
// late inlining), for tests that look for instructions in it. A parse or compile failure fails
// the calling test and gives "".
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "codegen/cpu_compiler.h"
#include "kiln_internal.h"

namespace kiln {

inline std::string cpuAssemblyOf(const std::string& text) {
  auto m = parseModule(text, "assembly.kiln");
  EXPECT_TRUE(m.ok()) << m.error().str();
  if (!m.ok()) return "";
  auto compiled = codegen::compileForCpu(*(*m)->entry(), {});
  EXPECT_TRUE(compiled.ok()) << compiled.error().str();
  if (!compiled.ok()) return "";
  auto assembly = codegen::emitCpuAssembly(*compiled->module, *compiled->tm);
  EXPECT_TRUE(assembly.ok()) << assembly.error().str();
  return assembly.ok() ? *assembly : "";
}

}  // namespace kiln
