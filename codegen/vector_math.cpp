// The mappings: LLVM 19 knows libmvec's sin, cos, tan, exp, log and pow (the intrinsics and the
// libm names); glibc 2.35 added tanh, erf, log1p, asin, acos, atan and more, which kiln maps itself
// for the functions its CPU target calls by name (codegen/cpu_target.cpp libmName). Variants: "b"
// is SSE (4 floats or 2 doubles), "d" AVX2 (8 floats or 4 doubles); the vectoriser picks the width
// the host's cost model prefers, and only offers "d" where the host has AVX2.
#include "codegen/vector_math.h"

#include <llvm/Support/DynamicLibrary.h>

#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace kiln::codegen {

bool vectorMathAvailable() {
#if defined(__x86_64__) && defined(__linux__)
  static const bool loaded = !llvm::sys::DynamicLibrary::LoadLibraryPermanently("libmvec.so.1");
  return loaded;
#else
  return false;
#endif
}

namespace {

// The extra functions, by libm name: float and double.
const char* const kExtraFunctions[] = {"tanh", "erf", "log1p", "asin", "acos", "atan"};

// Whether the process can resolve `symbol` (libmvec loaded: a version of glibc without the
// function leaves it unmapped, so kernels call the scalar one).
bool hasSymbol(const std::string& symbol) {
  return llvm::sys::DynamicLibrary::SearchForAddressOfSymbol(symbol) != nullptr;
}

void addExtra(llvm::TargetLibraryInfoImpl& tlii, bool avx2) {
  // VecDesc holds StringRefs: the names live as long as the process (a deque never moves them).
  static std::deque<std::string>& names = *new std::deque<std::string>;
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  std::vector<llvm::VecDesc> descs;
  for (const char* base : kExtraFunctions) {
    for (bool isFloat : {true, false}) {
      std::string scalar = std::string(base) + (isFloat ? "f" : "");
      for (auto [isa, lanes] : {std::pair<char, int>{'b', isFloat ? 4 : 2}, std::pair<char, int>{'d', isFloat ? 8 : 4}}) {
        if (isa == 'd' && !avx2) continue;
        std::string vector = "_ZGV" + std::string(1, isa) + "N" + std::to_string(lanes) + "v_" + scalar;
        if (!hasSymbol(vector)) continue;
        names.push_back(scalar);
        const std::string& s = names.back();
        names.push_back(vector);
        const std::string& v = names.back();
        names.push_back("_ZGV_LLVM_N" + std::to_string(lanes) + "v");
        descs.emplace_back(s, v, llvm::ElementCount::getFixed(static_cast<unsigned>(lanes)), false, names.back());
      }
    }
  }
  tlii.addVectorizableFunctions(descs);
}

}  // namespace

const llvm::TargetLibraryInfoImpl& cpuLibraryInfo(const llvm::Triple& triple) {
  // One per triple, built once: the vectoriser reads it from every compile thread.
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<llvm::TargetLibraryInfoImpl>>& made =
      *new std::map<std::string, std::unique_ptr<llvm::TargetLibraryInfoImpl>>;
  std::lock_guard<std::mutex> lock(mutex);
  auto& tlii = made[triple.str()];
  if (!tlii) {
    tlii = std::make_unique<llvm::TargetLibraryInfoImpl>(triple);
    if (triple.getArch() == llvm::Triple::x86_64 && triple.isOSLinux() && vectorMathAvailable()) {
      tlii->addVectorizableFunctionsFromVecLib(llvm::TargetLibraryInfoImpl::LIBMVEC_X86, triple);
      addExtra(*tlii, __builtin_cpu_supports("avx2"));
    }
  }
  return *tlii;
}

}  // namespace kiln::codegen
