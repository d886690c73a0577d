// Where compile time and memory go: wall time and peak resident memory per stage (import, each
// pass, planning, LLVM emission, optimisation and code generation, loading), for
// `kiln compile --time-passes` and the compile-time benchmark. Off unless a caller hands a profile
// down (CompileOptions::profile): a compile without one measures nothing.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace kiln {

struct StageRecord {
  std::string name;           // "import", "pass fusion", "llvm optimize", ...
  double milliseconds = 0;    // wall time
  size_t peakRssBytes = 0;    // the process's peak resident memory during the stage (0: unknown)
};

class CompileProfile {
 public:
  // Records a finished stage; stages of the same name add up (a pass run over several functions).
  void add(const std::string& name, double milliseconds, size_t peakRssBytes);
  std::vector<StageRecord> stages() const;
  double totalMilliseconds() const;
  // A count that says what the time was spent on ("kernels", "kernels compiled"); counts of the
  // same name add up.
  void count(const std::string& name, size_t n);
  std::vector<std::pair<std::string, size_t>> counts() const;
  // The table `kiln compile --time-passes` prints: stage, ms, % of the total, peak MB; then the counts.
  std::string table() const;
  // The same as one JSON line: {"stages": [{"name": ..., "ms": ..., "peak_mb": ...}, ...],
  // "total_ms": ..., "counts": {"kernels": ..., ...}}
  std::string json() const;

 private:
  mutable std::mutex mutex_;  // kernels compile on several threads
  std::vector<StageRecord> stages_;
  std::vector<std::pair<std::string, size_t>> counts_;
};

// Adds `n` to `profile`'s count `name` (nothing when it is null).
inline void countInProfile(CompileProfile* profile, const std::string& name, size_t n) {
  if (profile) profile->count(name, n);
}

// Times one stage into `profile` from construction to destruction (nothing when it is null).
// Peak memory: the kernel's high-water mark of resident memory is reset when the stage starts
// (Linux /proc/self/clear_refs), so the figure is the stage's own peak, earlier stages excluded;
// the process's peak is the largest stage's. (The same counter is getrusage's ru_maxrss: a
// profiled process's max RSS as /usr/bin/time reports it is the last stages' only.)
class StageTimer {
 public:
  StageTimer(CompileProfile* profile, std::string name);
  ~StageTimer();
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;

 private:
  CompileProfile* profile_;
  std::string name_;
  std::chrono::steady_clock::time_point start_;
};

// The process's resident-memory high-water mark in bytes (VmHWM), or 0 where it cannot be read.
size_t peakResidentBytes();

}  // namespace kiln
