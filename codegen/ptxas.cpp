// Runs ptxas as a subprocess on PTX text written to a temporary directory.
#include "codegen/ptxas.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/Program.h>

#include <fstream>
#include <optional>

#include "codegen/cuda_toolkit.h"

namespace kiln::codegen {

namespace {

std::string readText(const std::string& path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  return buffer ? (*buffer)->getBuffer().str() : std::string();
}

// Removes the directory however the function returns.
struct TempDir {
  llvm::SmallString<128> path;
  ~TempDir() {
    if (!path.empty()) llvm::sys::fs::remove_directories(path);
  }
};

}  // namespace

Status assembleWithPtxas(const std::string& ptx, const std::string& arch) {
  auto ptxas = findPtxas();
  if (!ptxas) return ptxas.error();
  TempDir dir;
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("kiln-ptxas", dir.path))
    return Error("cannot create a temporary directory for ptxas: " + ec.message());
  auto in = (dir.path + "/kernel.ptx").str();
  auto out = (dir.path + "/kernel.cubin").str();
  auto log = (dir.path + "/ptxas.log").str();
  {
    std::ofstream file(in, std::ios::binary);
    file << ptx;
    if (!file) return Error("cannot write " + in);
  }
  std::string archFlag = "-arch=" + arch;
  llvm::SmallVector<llvm::StringRef, 8> argv{*ptxas, archFlag, "-o", out, in};
  std::optional<llvm::StringRef> redirects[] = {llvm::StringRef(""), llvm::StringRef(log), llvm::StringRef(log)};
  std::string problem;
  int rc = llvm::sys::ExecuteAndWait(*ptxas, argv, std::nullopt, redirects, 0, 0, &problem);
  if (rc < 0) return Error("cannot run " + *ptxas + ": " + problem);
  if (rc != 0) return Error("ptxas " + archFlag + " rejected the PTX (exit " + std::to_string(rc) + "):\n" + readText(log));
  return {};
}

}  // namespace kiln::codegen
