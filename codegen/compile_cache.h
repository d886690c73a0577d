// The compile cache: compiled artifacts (PTX, host object code) keyed by a content hash of the
// function's canonical text, the compile options and the compiler's version; in memory for the
// process and on disk across processes.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "codegen/compile_options.h"
#include "ir/ir.h"

namespace kiln::codegen {

// Hex SHA-256 of (kiln version, LLVM version, options, canonical text of `function`, `artifact`).
// `artifact` names what is cached and holds everything else the bytes depend on: the callers put
// the emitted LLVM IR there, so a change to the kernel emitter never hits a stale entry.
// The canonical text is what `kiln print` writes, so the key ignores comments, formatting and
// value names chosen by the user only as far as the printer does.
std::string cacheKey(const Function& function, const CompileOptions& options, const std::string& artifact);

// Hex SHA-256 of (kiln version, LLVM version, options, `artifact`, a kernel unit's `bitcode`): the
// key of one kernel's object or PTX (kernel_units.h). The bitcode is all the code the kernel is
// made of, so neither the rest of the function nor its constants' values are part of it.
std::string unitCacheKey(const CompileOptions& options, const std::string& artifact, const std::string& bitcode);

class CompileCache {
 public:
  // `directory` empty: memory only.
  explicit CompileCache(std::string directory) : directory_(std::move(directory)) {}

  // The process-wide cache in $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln;
  // KILN_CACHE_DIR=off (or an empty value) keeps it in memory only.
  static CompileCache& global();

  // Memory first, then disk. A disk entry whose checksum does not match its bytes (damaged after
  // it was written) counts as a miss; the caller's next store() replaces it.
  std::optional<std::string> lookup(const std::string& key);
  // Stores in memory and, best effort, on disk: written to a temporary file and renamed, so a
  // process killed mid-write never leaves a truncated entry. A disk failure only loses the entry.
  void store(const std::string& key, const std::string& bytes);

  const std::string& directory() const { return directory_; }
  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }

 private:
  std::string pathFor(const std::string& key) const;

  std::string directory_;
  std::mutex mutex_;
  std::map<std::string, std::string> memory_;
  uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace kiln::codegen
