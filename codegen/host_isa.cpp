// KILN_CPU_ISA: the host's CPU features, capped at an x86-64 level (host_isa.h).
#include "codegen/host_isa.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/X86TargetParser.h>

#include <cstdlib>
#include <string_view>

namespace kiln::codegen {

namespace {

Expected<IsaCap> readCap() {
  const char* env = std::getenv("KILN_CPU_ISA");
  std::string_view value = env ? env : "";
  if (value.empty() || value == "native") return IsaCap::Native;
  if (value == "sse4.2") return IsaCap::Sse42;
  if (value == "avx2") return IsaCap::Avx2;
  if (value == "avx512") return IsaCap::Avx512;
  return Error("KILN_CPU_ISA=" + std::string(value) + ": expected sse4.2, avx2, avx512 or native");
}

// The host's features with those above `cap` switched off. A level's features are LLVM's for its
// CPU name (x86-64-v2, x86-64-v3) with everything they imply; every other feature goes off, so no
// feature left on can imply one switched off (vaes would bring AVX back into an SSE build).
llvm::StringMap<bool> capped(IsaCap cap) {
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  if (cap == IsaCap::Native) return features;
  if (cap == IsaCap::Avx512) {
    for (auto& feature : features)
      if (feature.first().starts_with("amx")) feature.second = false;
    return features;
  }
  llvm::SmallVector<llvm::StringRef, 64> level;
  llvm::X86::getFeaturesForCPU(cap == IsaCap::Sse42 ? "x86-64-v2" : "x86-64-v3", level);
  llvm::StringMap<bool> allowed;
  for (llvm::StringRef feature : level) {
    allowed[feature] = true;
    llvm::X86::updateImpliedFeatures(feature, true, allowed);  // what it implies (not itself)
  }
  allowed["64bit"] = true;  // a mode, not an extension: getFeaturesForCPU leaves it out
  for (auto& feature : features) feature.second = feature.second && allowed.lookup(feature.first());
  return features;
}

}  // namespace

const Expected<IsaCap>& hostIsaCap() {
  static const Expected<IsaCap> cap = readCap();
  return cap;
}

const llvm::StringMap<bool>& hostCpuFeatures() {
  static const llvm::StringMap<bool> features = capped(hostIsaCap().ok() ? *hostIsaCap() : IsaCap::Native);
  return features;
}

bool hostHas(const char* feature) { return hostCpuFeatures().lookup(feature); }

}  // namespace kiln::codegen
