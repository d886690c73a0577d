// The all_reduce op's step in a compiled program (all_reduce_step.h).
#include "runtime/collectives/all_reduce_step.h"

#include <fmt/format.h>

namespace kiln::collectives {

bool isAllReduce(const Op& op) { return op.kind() == OpKind::AllReduce; }

const Op* allReduceOf(const codegen::KernelGroup& group) {
  return group.ops.size() == 1 && isAllReduce(*group.ops[0]) ? group.ops[0] : nullptr;
}

ReduceKind reduceKindOf(const Op& op) {
  return op.attr("reduce").getString() == "mean" ? ReduceKind::Mean : ReduceKind::Sum;
}

std::string describeAllReduce(const Op& op) {
  return fmt::format("all_reduce of %{} at line {}", op.operand(0)->name(), op.loc().line);
}

Expected<Communicator*> communicatorFor(Communicator* given) {
  if (given) return given;
  return worldCommunicator();
}

Status allReduceInPlace(const Op& op, void* data, Communicator& comm) {
  if (comm.size() == 1) return {};
  const TensorType& t = op.result()->type();
  Status s = comm.allReduce(data, t.numElements(), t.dtype, reduceKindOf(op), describeAllReduce(op));
  if (!s) return s.error().at(op.loc());
  return {};
}

}  // namespace kiln::collectives
