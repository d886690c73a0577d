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

Status checkCudaReplicas(const Function& f, Communicator* given) {
  const Op* allReduce = nullptr;
  walkOps(f.body(), [&](const Op* op) {
    if (!allReduce && isAllReduce(*op)) allReduce = op;
  });
  if (!allReduce) return {};
  auto comm = communicatorFor(given);
  if (!comm) return comm.error().at(allReduce->loc());
  if ((*comm)->size() == 1) return {};
  return Error(fmt::format("all_reduce across {} replicas on the GPU needs NCCL, which this kiln does not drive yet; "
                           "use --backend cpu for data-parallel runs",
                           (*comm)->size()),
               allReduce->loc());
}

}  // namespace kiln::collectives
