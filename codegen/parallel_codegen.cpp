#include "codegen/parallel_codegen.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Transforms/Utils/SplitModule.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "codegen/cpu_target.h"

namespace kiln::codegen {

namespace {

constexpr char kBundleMagic[] = "KILN-OBJECTS\n";  // then per object: 8-byte size, bytes

// Kernels are the module's exported definitions; everything else is internal to one of them.
unsigned countKernels(const llvm::Module& module) {
  unsigned n = 0;
  for (const llvm::Function& fn : module)
    if (!fn.isDeclaration() && !fn.hasLocalLinkage()) ++n;
  return n;
}

Expected<std::string> optimizeAndEmit(llvm::Module& module, const CompileOptions& options) {
  auto tm = createHostTargetMachine(options);
  if (!tm) return tm.error();
  KILN_TRY(optimizeModule(module, **tm));
  return emitCpuObject(module, **tm);
}

// One part, in a context of its own (LLVM contexts are not shared across threads).
Expected<std::string> compilePart(const llvm::SmallVector<char, 0>& bitcode, const CompileOptions& options) {
  llvm::LLVMContext context;
  auto buffer = llvm::MemoryBuffer::getMemBuffer(llvm::StringRef(bitcode.data(), bitcode.size()), "kiln.part", false);
  auto module = llvm::parseBitcodeFile(buffer->getMemBufferRef(), context);
  if (!module) return Error("internal error: a split module does not read back: " + llvm::toString(module.takeError()));
  return optimizeAndEmit(**module, options);
}

}  // namespace

Expected<std::vector<std::string>> compileCpuObjects(llvm::Module& module, const CompileOptions& options,
                                                     unsigned threads) {
  unsigned parts = std::min(threads, countKernels(module));
  if (parts <= 1) {
    auto object = optimizeAndEmit(module, options);
    if (!object) return object.error();
    return std::vector<std::string>{std::move(*object)};
  }
  // Round robin by size balances the parts; locals stay with the kernel that uses them.
  std::vector<llvm::SmallVector<char, 0>> bitcode;
  llvm::SplitModule(
      module, parts,
      [&](std::unique_ptr<llvm::Module> part) {
        bitcode.emplace_back();
        llvm::raw_svector_ostream os(bitcode.back());
        llvm::WriteBitcodeToFile(*part, os);
      },
      /*PreserveLocals=*/true, /*RoundRobin=*/true);
  std::vector<Expected<std::string>> results(bitcode.size(), Expected<std::string>(std::string()));
  std::vector<std::thread> workers;
  for (size_t i = 0; i < bitcode.size(); ++i)
    workers.emplace_back([&, i] { results[i] = compilePart(bitcode[i], options); });
  for (std::thread& w : workers) w.join();
  std::vector<std::string> objects;
  for (auto& r : results) {
    if (!r) return r.error();
    objects.push_back(std::move(*r));
  }
  return objects;
}

std::string packObjects(const std::vector<std::string>& objects) {
  if (objects.size() == 1) return objects[0];
  std::string entry = kBundleMagic;
  for (const std::string& o : objects) {
    uint64_t size = o.size();
    entry.append(reinterpret_cast<const char*>(&size), sizeof size);
    entry += o;
  }
  return entry;
}

std::vector<std::string> unpackObjects(const std::string& entry) {
  size_t magic = std::strlen(kBundleMagic);
  if (entry.compare(0, magic, kBundleMagic) != 0) return {entry};
  std::vector<std::string> objects;
  for (size_t at = magic; at < entry.size();) {
    uint64_t size = 0;
    if (entry.size() - at < sizeof size) return {};
    std::memcpy(&size, entry.data() + at, sizeof size);
    at += sizeof size;
    if (entry.size() - at < size) return {};
    objects.push_back(entry.substr(at, size));
    at += size;
  }
  return objects;
}

}  // namespace kiln::codegen
