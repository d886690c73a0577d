// The --gpu-arch table: which sm_XX kiln accepts and the PTX ISA version it pins for each.
#include "codegen/gpu_arch.h"

#include <array>
#include <cctype>

namespace kiln::codegen {

namespace {

// PTX version = the oldest PTX ISA that knows the arch (what LLVM 19 picks by default, written down
// here so a newer LLVM cannot change the output silently). The PTX ISA version decides which
// drivers can JIT-compile the PTX: the oldest version gives the widest reach, e.g. sm_80 PTX 7.0
// loads on every driver since CUDA 11.0 (r450), on Ampere and every later GPU. Generated kernels
// use nothing a newer ISA would add.
struct ArchRow {
  const char* sm;
  int ptx;
};
constexpr std::array<ArchRow, 7> kArchs{{
    {"sm_75", 63},   // CUDA 10.0; the oldest arch CUDA 13's ptxas accepts
    {"sm_80", 70},   // CUDA 11.0: the default
    {"sm_86", 71},   // CUDA 11.1
    {"sm_87", 74},   // CUDA 11.4
    {"sm_89", 78},   // CUDA 11.8
    {"sm_90", 78},   // CUDA 11.8; LLVM 19's newest portable arch
    {"sm_90a", 80},  // CUDA 12.0; arch-specific: runs on sm_90 only
}};

// The number in "sm_NN" or "sm_NNa" (or -1), to tell "too new for LLVM 19" from "too old".
int archNumber(const std::string& name) {
  if (name.rfind("sm_", 0) != 0) return -1;
  size_t i = 3, digits = 0;
  int value = 0;
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])) && digits < 4) {
    value = value * 10 + (name[i++] - '0');
    ++digits;
  }
  if (digits < 2) return -1;
  if (i < name.size() && (name[i] == 'a' || name[i] == 'f')) ++i;
  return i == name.size() ? value : -1;
}

}  // namespace

std::string supportedGpuArchs() {
  std::string s;
  for (const ArchRow& row : kArchs) s += (s.empty() ? "" : ", ") + std::string(row.sm);
  return s;
}

Expected<GpuArch> parseGpuArch(const std::string& name) {
  for (const ArchRow& row : kArchs)
    if (name == row.sm) return GpuArch{row.sm, row.ptx, archNumber(name)};
  std::string supported = " (supported: " + supportedGpuArchs() + ")";
  int number = archNumber(name);
  if (number < 0) return Error("unknown GPU architecture '" + name + "': expected sm_XX" + supported);
  if (number > 90)
    return Error("GPU architecture " + name + " is newer than LLVM 19 can target" + supported +
                 "; PTX for sm_90 or older runs on it too (the driver compiles it), so use --gpu-arch sm_90");
  if (number < 75)
    return Error("GPU architecture " + name + " is older than CUDA 13 supports" + supported);
  return Error("unknown GPU architecture '" + name + "'" + supported);
}

}  // namespace kiln::codegen
