// The all_reduce op's step in a compiled program (all_reduce_step.h).
#include "runtime/collectives/all_reduce_step.h"

#include <fmt/format.h>

namespace kiln::collectives {

bool isAllReduce(const Op& op) { return op.kind() == OpKind::AllReduce; }

Expected<Communicator*> communicatorFor(Communicator* given) {
  if (given) return given;
  return worldCommunicator();
}

Status allReduceInPlace(const Op& op, void* data, Communicator& comm) {
  if (comm.size() == 1) return {};
  const TensorType& t = op.result()->type();
  ReduceKind kind = op.attr("reduce").getString() == "mean" ? ReduceKind::Mean : ReduceKind::Sum;
  std::string what = fmt::format("all_reduce of %{} at line {}", op.operand(0)->name(), op.loc().line);
  Status s = comm.allReduce(data, t.numElements(), t.dtype, kind, what);
  if (!s) return s.error().at(op.loc());
  return {};
}

}  // namespace kiln::collectives
