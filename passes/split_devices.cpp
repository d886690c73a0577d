// splitAcrossDevices: each op's share of the function's compute and of its parameters' memory,
// summed over the ops in program order, cut near each 1/devices of the total where the fewest
// bytes cross.
#include "passes/split_devices.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ir/clone.h"
#include "ir/op_cost.h"
#include "passes/placement.h"

namespace kiln::passes {

namespace {

double compute(const Op& op) {
  double written = 0;
  for (const Value* r : op.results()) written += static_cast<double>(r->type().numElements());
  return denseFlops(op) + written;
}

// crossing[c]: the bytes of the values a cut between ops[c-1] and ops[c] would send, those read
// on both sides of it (made before it, or parameters first read before it, and read after it).
// Constants are made again on each device rather than sent, and results leave from where they
// are, so neither counts.
std::vector<double> bytesCrossingEachCut(const std::vector<Op*>& ops) {
  std::unordered_map<const Value*, size_t> first, last;  // by index in ops
  for (size_t i = 0; i < ops.size(); ++i) {
    for (const Value* v : ops[i]->operands()) {
      const Op* def = v->definingOp();
      if (def && def->kind() == OpKind::Constant) continue;
      first.emplace(v, i);  // a result's maker comes first: overwritten below
      last[v] = i;
    }
    for (const Value* r : ops[i]->results()) first[r] = i;
  }
  std::vector<double> delta(ops.size() + 1, 0);  // difference array over cuts 1..n-1
  for (const auto& [v, at] : first) {
    auto end = last.find(v);
    if (end == last.end() || end->second <= at) continue;
    double bytes = static_cast<double>(v->type().byteSize());
    delta[at + 1] += bytes;  // crosses every cut c with at < c <= last
    delta[end->second + 1] -= bytes;
  }
  std::vector<double> crossing(ops.size() + 1, 0);
  for (size_t c = 1; c <= ops.size(); ++c) crossing[c] = crossing[c - 1] + delta[c];
  return crossing;
}

// Where the cut at `ideal` of the cost goes: among the cuts after `after` within `band` of it,
// the one that sends the fewest bytes (the nearer to `ideal` of equals); with none in the band,
// the nearest. So a cut moves off a wide activation (a transformer MLP's inner layer) to a
// narrower one close by, and the stages stay within the band of equal.
size_t chooseCut(const std::vector<double>& before, const std::vector<double>& crossing, double ideal, double band,
                 size_t after) {
  auto off = [&](size_t c) { return std::abs(before[c] - ideal); };
  std::optional<size_t> fewest;
  size_t nearest = after;
  for (size_t c = after; c < before.size(); ++c) {
    if (off(c) < off(nearest)) nearest = c;
    if (off(c) <= band && (!fewest || std::pair(crossing[c], off(c)) < std::pair(crossing[*fewest], off(*fewest))))
      fewest = c;
  }
  return fewest.value_or(nearest);
}

}  // namespace

Status splitAcrossDevices(Function& f, int devices) {
  if (devices < 1) return Error("--devices must be at least 1, not " + std::to_string(devices));
  if (isPlaced(f))
    return Error("@" + f.name() + " is placed already ({device = N} on its ops): --split places a function that is not",
                 f.loc());
  // Per op: its compute, and the bytes of the parameters it is the first to read (a parameter
  // lives where its first user runs: that device holds it).
  std::vector<Op*> ops;
  std::vector<double> work, memory;
  double totalWork = 0, totalMemory = 0;
  std::unordered_set<const Value*> held;
  for (const auto& op : f.body().ops()) {
    if (op.get() == f.body().terminator()) continue;
    double bytes = 0;
    for (const Value* v : op->operands())
      if (!v->definingOp() && held.insert(v).second) bytes += static_cast<double>(v->type().byteSize());
    ops.push_back(op.get());
    work.push_back(compute(*op));
    memory.push_back(bytes);
    totalWork += work.back();
    totalMemory += bytes;
  }
  // An op's cost: the mean of its share of the compute and its share of the parameters' memory,
  // so the devices get about equal parts of both where the model allows.
  auto cost = [&](size_t i) {
    double c = totalWork > 0 ? work[i] / totalWork : 0, m = totalMemory > 0 ? memory[i] / totalMemory : 0;
    return totalMemory > 0 ? (c + m) / 2 : c;
  };
  std::vector<double> before(ops.size() + 1, 0);  // before[c]: the cost of ops[0..c)
  for (size_t i = 0; i < ops.size(); ++i) before[i + 1] = before[i] + cost(i);
  std::vector<double> crossing = bytesCrossingEachCut(ops);
  // Device k takes ops[cut[k-1]..cut[k]).
  std::vector<size_t> cut(static_cast<size_t>(devices) + 1, 0);
  cut[static_cast<size_t>(devices)] = ops.size();
  for (int k = 1; k < devices; ++k)
    cut[static_cast<size_t>(k)] = chooseCut(before, crossing, static_cast<double>(k) / devices, 0.1 / devices,
                                            cut[static_cast<size_t>(k) - 1]);
  for (int k = 0; k < devices; ++k)  // the cuts never go back: chooseCut starts at the one before
    for (size_t i = cut[static_cast<size_t>(k)]; i < cut[static_cast<size_t>(k) + 1]; ++i)
      ops[i]->setAttr(kDeviceAttr, Attr(int64_t{k}));
  return placeDevices(f, devices);
}

Status placeOnDevices(Function& f, int devices, bool split) {
  return split ? splitAcrossDevices(f, devices) : placeDevices(f, devices);
}

Expected<std::unique_ptr<Module>> placedCopy(const Function& f, int devices, bool split) {
  std::unique_ptr<Module> copy = cloneFunction(f);
  KILN_TRY(placeOnDevices(*copy->functions().front(), devices, split));
  return copy;
}

}  // namespace kiln::passes
