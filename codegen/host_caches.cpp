// hostCaches: the host's L2 and last-level cache sizes, as codegen sees them.
#include "codegen/host_caches.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <utility>

namespace kiln::codegen {

namespace {

std::string firstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// "512K", "32768K", "1M" -> bytes; 0 for anything else.
int64_t parseSize(const std::string& text) {
  size_t end = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &end);
  } catch (...) {
    return 0;
  }
  char unit = end < text.size() ? text[end] : '\0';
  int64_t scale = unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : unit == 'G' ? int64_t{1} << 30 : 1;
  return value > 0 ? value * scale : 0;
}

// The summed sizes of the distinct level-`level` caches of the host's CPUs, from sysfs; 0 if none is listed.
int64_t sysfsCacheBytes(int level, unsigned cpus) {
  std::set<std::pair<std::string, int64_t>> instances;  // (the CPUs sharing it, its size)
  for (unsigned cpu = 0; cpu < cpus; ++cpu)
    for (int index = 0; index < 8; ++index) {
      std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/cache/index" + std::to_string(index) + "/";
      std::string levelText = firstLine(dir + "level");
      if (levelText.empty()) break;
      if (levelText != std::to_string(level) || firstLine(dir + "type") == "Instruction") continue;
      if (int64_t size = parseSize(firstLine(dir + "size")); size > 0) instances.insert({firstLine(dir + "shared_cpu_list"), size});
    }
  int64_t total = 0;
  for (const auto& instance : instances) total += instance.second;
  return total;
}

}  // namespace

const HostCaches& hostCaches() {
  static const HostCaches caches = [] {
    unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
    HostCaches c;
    c.l2Bytes = sysfsCacheBytes(2, cpus);
    if (c.l2Bytes == 0) {
      long perCore = sysconf(_SC_LEVEL2_CACHE_SIZE);
      c.l2Bytes = (perCore > 0 ? perCore : int64_t{1} << 20) * cpus;
    }
    c.lastLevelBytes = sysfsCacheBytes(3, cpus);
    return c;
  }();
  return caches;
}

}  // namespace kiln::codegen
