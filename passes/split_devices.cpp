// splitAcrossDevices: running cost over the ops in program order, cut at each 1/devices of the
// total.
#include "passes/split_devices.h"

#include <algorithm>
#include <vector>

#include "ir/op_cost.h"
#include "passes/placement.h"

namespace kiln::passes {

namespace {

double cost(const Op& op) {
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
  std::vector<Op*> ops;
  double total = 0;
  for (const auto& op : f.body().ops()) {
    if (op.get() == f.body().terminator()) continue;
    ops.push_back(op.get());
    total += cost(*op);
  }
  double done = 0;
  for (Op* op : ops) {
    // The device whose share the middle of this op's cost falls into.
    double middle = done + cost(*op) / 2;
    done += cost(*op);
    int device = total > 0 ? static_cast<int>(middle / total * devices) : 0;
    op->setAttr(kDeviceAttr, Attr(int64_t{std::clamp(device, 0, devices - 1)}));
  }
  return placeDevices(f, devices);
}

}  // namespace kiln::passes
