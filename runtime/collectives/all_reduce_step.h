// How a compiled program runs the `all_reduce` op: its kernel (the one-replica identity, a copy)
// writes the result buffer, which is then reduced in place across the replicas, synchronously or
// on the communicator's reduction thread while later kernels run (runtime/executable.h,
// CollectiveMode).
#pragma once

#include "codegen/kernel_plan.h"
#include "ir/ir.h"
#include "runtime/collectives/communicator.h"

namespace kiln::collectives {

// True for a kernel made of one `all_reduce` (fusion never groups it with other ops).
bool isAllReduce(const Op& op);
// The all_reduce a kernel consists of, or null for every other kernel.
const Op* allReduceOf(const codegen::KernelGroup& group);
// Sum or mean, from the op's `reduce` attribute.
ReduceKind reduceKindOf(const Op& op);
// "all_reduce of %g at line 12": how errors and timeouts name the op.
std::string describeAllReduce(const Op& op);
// The communicator a run uses: `given`, else this process's world.
Expected<Communicator*> communicatorFor(Communicator* given);
// Reduces `op`'s result, already holding this replica's value in host memory at `data`, across
// the replicas of `comm` (nothing to do for one replica). Errors carry the op's location.
Status allReduceInPlace(const Op& op, void* data, Communicator& comm);

}  // namespace kiln::collectives
