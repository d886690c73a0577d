// Helpers shared by the NVPTX tests: skipping without ptxas, assembling PTX for the archs kiln
// promises (sm_80 and sm_90 PTX must also assemble for sm_100: forward compatibility).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codegen/cuda_toolkit.h"
#include "codegen/ptxas.h"

namespace kiln::codegen::testing {

// Every test that runs ptxas starts with this; without a toolkit the skip says why.
#define KILN_REQUIRE_PTXAS()                                                                  \
  do {                                                                                        \
    auto kiln_ptxas_ = ::kiln::codegen::findPtxas();                                          \
    if (!kiln_ptxas_) GTEST_SKIP() << "no ptxas, PTX not assembled: " << kiln_ptxas_.error().message(); \
  } while (0)

// The PTX archs generated and the real archs each must assemble for.
inline const std::vector<std::string>& generatedArchs() {
  static const std::vector<std::string> archs{"sm_80", "sm_90"};
  return archs;
}
inline const std::vector<std::string>& assembledArchs() {
  static const std::vector<std::string> archs{"sm_80", "sm_90", "sm_100"};
  return archs;
}

// 80 for "sm_80" and "sm_80a".
inline int archNumber(const std::string& arch) { return std::stoi(arch.substr(3)); }

// Assembles `ptx` (generated for `generatedFor`) for every arch at or after it.
inline void expectAssembles(const std::string& ptx, const std::string& generatedFor, const std::string& what) {
  for (const std::string& arch : assembledArchs()) {
    if (archNumber(arch) < archNumber(generatedFor)) continue;
    Status s = assembleWithPtxas(ptx, arch);
    EXPECT_TRUE(s.ok()) << what << " (PTX for " << generatedFor << ") does not assemble for " << arch << ":\n"
                        << (s.ok() ? "" : s.error().message());
  }
}

}  // namespace kiln::codegen::testing
