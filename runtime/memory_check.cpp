// Host memory size and the per-tensor fit check.
#include "runtime/memory_check.h"

#include <fmt/format.h>
#include <unistd.h>

namespace kiln {

uint64_t hostMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || pageSize <= 0) return UINT64_MAX;  // unknown: do not guess
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(pageSize);
}

std::string formatBytes(uint64_t bytes) {
  static const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB", "EB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1000 && u < 6) v /= 1000, ++u;
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

namespace {
// Bytes of a tensor type, saturating instead of overflowing for absurd shapes.
uint64_t saturatedBytes(const TensorType& t) {
  unsigned __int128 bytes = dtypeSize(t.dtype);
  for (int64_t d : t.shape) {
    bytes *= static_cast<uint64_t>(d < 0 ? 0 : d);
    if (bytes > UINT64_MAX) return UINT64_MAX;
  }
  return static_cast<uint64_t>(bytes);
}

Status checkValue(const Value& v, const std::string& what, const SourceLoc& loc, uint64_t limit) {
  uint64_t bytes = saturatedBytes(v.type());
  if (bytes <= limit) return {};
  return Error(fmt::format("{} is {}, which needs {}: more than this machine's {} of memory", what, v.type().str(),
                           formatBytes(bytes), formatBytes(limit)),
               loc);
}
}  // namespace

Status checkTensorsFit(const Function& function, uint64_t limit) {
  for (Value* p : function.params()) KILN_TRY(checkValue(*p, "parameter %" + p->name(), function.loc(), limit));
  Status status;
  walkOps(function.body(), [&](const Op* op) {
    for (Value* r : op->results())
      if (status.ok()) status = checkValue(*r, std::string(op->name()) + ": the result", op->loc(), limit);
  });
  return status;
}

}  // namespace kiln
