// How a compiled program runs the `all_reduce` op: its kernel (the one-replica identity, a copy)
// writes the result buffer, which is then reduced in place across the replicas.
#pragma once

#include "ir/ir.h"
#include "runtime/collectives/communicator.h"

namespace kiln::collectives {

// True for a kernel made of one `all_reduce` (fusion never groups it with other ops).
bool isAllReduce(const Op& op);
// The communicator a run uses: `given`, else this process's world.
Expected<Communicator*> communicatorFor(Communicator* given);
// Reduces `op`'s result, already holding this replica's value in host memory at `data`, across
// the replicas of `comm` (nothing to do for one replica). Errors carry the op's location.
Status allReduceInPlace(const Op& op, void* data, Communicator& comm);

}  // namespace kiln::collectives
