// splitAcrossDevices: each op's share of the function's compute and of its parameters' memory,
// summed over the ops in program order, cut at each 1/devices of the total.
#include "passes/split_devices.h"

#include <algorithm>
#include <unordered_set>
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
  double done = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    // The device whose share the middle of this op's cost falls into.
    double middle = done + cost(i) / 2;
    done += cost(i);
    int device = static_cast<int>(middle * devices);
    ops[i]->setAttr(kDeviceAttr, Attr(int64_t{std::clamp(device, 0, devices - 1)}));
  }
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
