// Splitting an unplaced function across devices by compute, for a model too big for one device
// or to keep several busy: `kiln run|train|opt|explain|bench --devices N --split`.
#pragma once

#include <memory>

#include "ir/ir.h"

namespace kiln::passes {

// Puts the top-level ops of `f` (which must carry no `device` yet) on devices 0..devices-1 in
// program order, in runs of about equal cost, then places it (placeDevices: transfers at the
// cuts). An op's cost balances compute and memory: the mean of its share of the function's
// compute (dense math, ir/op_cost.h, plus the elements it writes) and its share of the
// parameters' bytes (those it is the first to read, which its device will hold). The cut before
// device k goes near k/devices of the total: among the cuts within a tenth of a device's share of
// it, the one that sends the fewest bytes, else the nearest. So a long chain becomes `devices`
// consecutive stages, as GPipe cuts a model, without cutting a wide activation where a narrow one
// is close by.
Status splitAcrossDevices(Function& f, int devices);

// What every `--devices N [--split]` entry point does: splitAcrossDevices when `split`, else
// placeDevices (the function's own `device` attributes).
Status placeOnDevices(Function& f, int devices, bool split);
// The same on a copy of `f`, for a caller that must leave `f` as written: the copy's module.
Expected<std::unique_ptr<Module>> placedCopy(const Function& f, int devices, bool split);

}  // namespace kiln::passes
