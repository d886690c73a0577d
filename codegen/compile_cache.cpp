// Content-hash keys and the two-level (memory, disk) artifact store.
#include "codegen/compile_cache.h"

#include <fmt/format.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/Support/SHA256.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/build_identity.h"
#include "ir/printer.h"

namespace kiln::codegen {

namespace {
// The cache format. Keys also hold the build identity (build_identity.h), so a rebuilt kiln never
// reuses what an older build compiled, whether or not this was bumped.
constexpr const char* kCompilerVersion = "kiln-0.1.0-codegen-3";

std::string targetName(Target t) { return t == Target::Cpu ? "cpu" : "cuda"; }

std::string sha256Hex(llvm::StringRef bytes) {
  llvm::SHA256 sha;
  sha.update(bytes);
  std::string hex;
  for (uint8_t byte : sha.final()) hex += fmt::format("{:02x}", byte);
  return hex;
}

// On disk an entry is this line with the payload's SHA-256, then the payload: a file damaged
// after it was written (a disk error, a stray write) is then a miss, never bytes we would load.
constexpr const char* kEntryMagic = "kiln-cache-entry-1 ";
constexpr size_t kHeaderSize = 19 + 64 + 1;  // magic, hex digest, newline

std::optional<std::string> checkedPayload(const std::string& file) {
  if (file.size() < kHeaderSize || file.compare(0, 19, kEntryMagic) != 0 || file[kHeaderSize - 1] != '\n')
    return std::nullopt;
  llvm::StringRef payload(file.data() + kHeaderSize, file.size() - kHeaderSize);
  if (sha256Hex(payload) != file.substr(19, 64)) return std::nullopt;
  return payload.str();
}
}  // namespace

namespace {
// What every key starts with. Dumps do not change the artifact, so dumpDir is not part of it.
std::string keyHeader(const CompileOptions& options, const std::string& artifact) {
  return fmt::format("{}\n{}\nLLVM {}\ntarget={} arch={} fast-math={}\nartifact={}\n", kCompilerVersion,
                     buildIdentity(), LLVM_VERSION_STRING, targetName(options.target), options.gpuArch,
                     options.fastMath, artifact);
}
}  // namespace

std::string cacheKey(const Function& function, const CompileOptions& options, const std::string& artifact) {
  return sha256Hex(keyHeader(options, artifact) + printFunction(function, kHashedConstants));
}

std::string unitCacheKey(const CompileOptions& options, const std::string& artifact, const std::string& bitcode) {
  return sha256Hex(keyHeader(options, artifact) + "unit bitcode\n" + bitcode);
}

CompileCache& CompileCache::global() {
  static CompileCache cache([] {
    if (const char* dir = std::getenv("KILN_CACHE_DIR")) return std::string(dir) == "off" ? std::string() : std::string(dir);
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/kiln";
    if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/kiln";
    return std::string();
  }());
  return cache;
}

std::string CompileCache::pathFor(const std::string& key) const {
  // Two-character fan-out keeps directories small, as git and ccache do.
  if (key.size() < 3) return directory_ + "/" + key;
  return directory_ + "/" + key.substr(0, 2) + "/" + key.substr(2);
}

std::optional<std::string> CompileCache::lookup(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = memory_.find(key); it != memory_.end()) {
    ++hits_;
    return it->second;
  }
  if (!directory_.empty()) {
    std::ifstream in(pathFor(key), std::ios::binary);
    if (in) {
      std::ostringstream bytes;
      bytes << in.rdbuf();
      if (in.good() || in.eof()) {
        if (auto payload = checkedPayload(bytes.str())) {
          ++hits_;
          return memory_[key] = std::move(*payload);
        }
      }
    }
  }
  ++misses_;
  return std::nullopt;
}

void CompileCache::store(const std::string& key, const std::string& bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  memory_[key] = bytes;
  if (directory_.empty()) return;
  std::error_code ec;
  std::string path = pathFor(key);
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (ec) return;
  // Unique per process and call, so concurrent writers never share a temporary file.
  static std::atomic<uint64_t> counter{0};
  std::string tmp = fmt::format("{}.tmp.{}.{}", path, ::getpid(), counter++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    std::string header = kEntryMagic + sha256Hex(bytes) + "\n";
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, path, ec);  // atomic on POSIX: readers see the old or the new file
  if (ec) std::filesystem::remove(tmp, ec);
}

}  // namespace kiln::codegen
