#include "ir/compile_profile.h"

#include <fmt/format.h>

#include <fstream>

namespace kiln {

namespace {

// Starts a new high-water mark at the current resident size; best effort (Linux only).
void resetPeakResident() {
  std::ofstream clear("/proc/self/clear_refs");
  if (clear) clear << "5";
}

}  // namespace

size_t peakResidentBytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmHWM:") {
      size_t kb = 0;
      status >> kb;
      return kb * 1024;
    }
    status.ignore(1 << 12, '\n');
  }
  return 0;
}

void CompileProfile::add(const std::string& name, double milliseconds, size_t peakRssBytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (StageRecord& s : stages_)
    if (s.name == name) {
      s.milliseconds += milliseconds;
      s.peakRssBytes = std::max(s.peakRssBytes, peakRssBytes);
      return;
    }
  stages_.push_back({name, milliseconds, peakRssBytes});
}

std::vector<StageRecord> CompileProfile::stages() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stages_;
}

double CompileProfile::totalMilliseconds() const {
  double total = 0;
  for (const StageRecord& s : stages()) total += s.milliseconds;
  return total;
}

void CompileProfile::count(const std::string& name, size_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [existing, value] : counts_)
    if (existing == name) {
      value += n;
      return;
    }
  counts_.emplace_back(name, n);
}

std::vector<std::pair<std::string, size_t>> CompileProfile::counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counts_;
}

std::string CompileProfile::table() const {
  double total = totalMilliseconds();
  std::string out = fmt::format("{:<32} {:>10} {:>6} {:>10}\n", "stage", "ms", "%", "peak MB");
  for (const StageRecord& s : stages())
    out += fmt::format("{:<32} {:>10.1f} {:>5.1f}% {:>10.1f}\n", s.name, s.milliseconds,
                       total > 0 ? 100 * s.milliseconds / total : 0.0, static_cast<double>(s.peakRssBytes) / (1 << 20));
  out += fmt::format("{:<32} {:>10.1f}\n", "total", total);
  for (const auto& [name, value] : counts()) out += fmt::format("{:<32} {:>10}\n", name, value);
  return out;
}

std::string CompileProfile::json() const {
  std::string out = "{\"stages\": [";
  bool first = true;
  for (const StageRecord& s : stages()) {
    out += fmt::format("{}{{\"name\": \"{}\", \"ms\": {:.3f}, \"peak_mb\": {:.1f}}}", first ? "" : ", ", s.name,
                       s.milliseconds, static_cast<double>(s.peakRssBytes) / (1 << 20));
    first = false;
  }
  out += fmt::format("], \"total_ms\": {:.3f}, \"counts\": {{", totalMilliseconds());
  first = true;
  for (const auto& [name, value] : counts()) {
    out += fmt::format("{}\"{}\": {}", first ? "" : ", ", name, value);
    first = false;
  }
  return out + "}}\n";
}

StageTimer::StageTimer(CompileProfile* profile, std::string name)
    : profile_(profile), name_(std::move(name)), start_(std::chrono::steady_clock::now()) {
  if (profile_) resetPeakResident();
}

StageTimer::~StageTimer() {
  if (!profile_) return;
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  profile_->add(name_, ms, peakResidentBytes());
}

}  // namespace kiln
