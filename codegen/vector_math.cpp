// The mappings: every function kiln's CPU kernels call (the intrinsics and the libm names, among
// them the functions its CPU target calls by name: codegen/cpu_target.cpp libmName) to glibc's
// libmvec variants, where this libmvec exports them (glibc 2.35 added tanh, erf, log1p, asin, acos,
// atan and more). Variants: "b" is SSE (4 floats or 2 doubles), "d" AVX2 (8 floats or 4 doubles),
// "e" AVX-512 (16 floats or 8 doubles), each offered only where the host (under KILN_CPU_ISA) has
// those vectors; the vectoriser picks the width the host's cost model prefers (or a loop's width
// hint asks for: loop_hints.h). LLVM 19's own libmvec table has no "e" at all: a loop hinted to 8
// doubles on an AVX-512 host called the scalar exp for each lane (softmax over f64[2048,1000]
// 7.5 ms, where the elementwise exp of the same size, 4 doubles a call, took 0.94).
#include "codegen/vector_math.h"

#include "codegen/host_isa.h"

#include <llvm/Support/DynamicLibrary.h>

#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <utility>
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

// Every function given libmvec's vector variants, by libm name: how many arguments it takes, and
// whether LLVM also calls it as an intrinsic (llvm.exp.f64, ...).
struct WideFunction {
  const char* name;
  int arity;
  bool intrinsic;
};
const WideFunction kWideFunctions[] = {
    {"sin", 1, true},    {"cos", 1, true},    {"tan", 1, true},    {"exp", 1, true},    {"exp2", 1, true},
    {"expm1", 1, false}, {"log", 1, true},    {"log2", 1, true},   {"log10", 1, true},  {"log1p", 1, false},
    {"sinh", 1, false},  {"cosh", 1, false},  {"tanh", 1, false},  {"asin", 1, false},  {"acos", 1, false},
    {"atan", 1, false},  {"asinh", 1, false}, {"acosh", 1, false}, {"atanh", 1, false}, {"cbrt", 1, false},
    {"erf", 1, false},   {"erfc", 1, false},  {"pow", 2, true},    {"atan2", 2, false}, {"hypot", 2, false}};

// Whether the process can resolve `symbol` (libmvec loaded: a version of glibc without the
// function leaves it unmapped, so kernels call the scalar one).
bool hasSymbol(const std::string& symbol) {
  return llvm::sys::DynamicLibrary::SearchForAddressOfSymbol(symbol) != nullptr;
}

// The mappings kiln adds to LLVM's own, kept for the life of the process: VecDesc holds
// StringRefs, and a deque never moves the names it holds.
class Mappings {
 public:
  // `scalar` (a libm name or an intrinsic's) to libmvec's `isa` variant of `function` (its float
  // form where `isFloat`) taking `arity` arguments, where this libmvec exports it.
  void add(const std::string& scalar, const std::string& function, bool isFloat, char isa, int arity) {
    int lanes = (isa == 'b' ? 4 : isa == 'd' ? 8 : 16) / (isFloat ? 1 : 2);
    std::string args(static_cast<size_t>(arity), 'v');
    std::string vector = "_ZGV" + std::string(1, isa) + "N" + std::to_string(lanes) + args + "_" + function + (isFloat ? "f" : "");
    if (!hasSymbol(vector)) return;
    const std::string& s = keep(scalar);
    const std::string& v = keep(vector);
    descs_.emplace_back(s, v, llvm::ElementCount::getFixed(static_cast<unsigned>(lanes)), false,
                        keep("_ZGV_LLVM_N" + std::to_string(lanes) + args));
  }
  const std::vector<llvm::VecDesc>& descs() const { return descs_; }

 private:
  static const std::string& keep(std::string name) {
    static std::deque<std::string>& names = *new std::deque<std::string>;
    names.push_back(std::move(name));
    return names.back();
  }
  std::vector<llvm::VecDesc> descs_;
};

// libmvec's variants of every function for the vector sizes the (capped) host has: SSE's 'b'
// always, AVX2's 'd' and AVX-512's 'e' where it has them. Not LLVM's own libmvec table, which
// maps AVX2's variants whatever the target: a kernel built for SSE alone (KILN_CPU_ISA=sse4.2, a
// CPU before Haswell) then passed 8 floats to _ZGVdN8v_sinf in two xmm registers, where it reads
// one ymm (four lanes of zeros), or would stop at its first AVX2 instruction.
void addMappings(llvm::TargetLibraryInfoImpl& tlii, bool avx2, bool avx512) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  Mappings mappings;
  for (char isa : {'b', 'd', 'e'}) {
    if ((isa == 'd' && !avx2) || (isa == 'e' && !avx512)) continue;
    for (const WideFunction& f : kWideFunctions)
      for (bool isFloat : {true, false}) {
        mappings.add(std::string(f.name) + (isFloat ? "f" : ""), f.name, isFloat, isa, f.arity);
        if (f.intrinsic) mappings.add(std::string("llvm.") + f.name + (isFloat ? ".f32" : ".f64"), f.name, isFloat, isa, f.arity);
      }
  }
  tlii.addVectorizableFunctions(mappings.descs());
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
      addMappings(*tlii, hostHas("avx2"), hostHas("avx512f"));
    }
  }
  return *tlii;
}

}  // namespace kiln::codegen
