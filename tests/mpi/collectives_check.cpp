// Run under mpirun by ctest (tests/CMakeLists.txt): the MPI communicator's collectives across real
// processes. Modes:
//   reduce  every dtype, sum and mean: each rank's result equals the exact reduction (within the
//           dtype's rounding) and is bit-identical on every rank; broadcast and barrier too.
//   die     rank 1 exits mid-run while the others wait in an all-reduce: the job must end, non-zero.
//   stall   rank 1 sleeps past the 1 s collective timeout: rank 0 must name itself and the call and
//           abort the job.
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "ir/tensor.h"
#include "runtime/collectives/communicator.h"

using namespace kiln;
using namespace kiln::collectives;

namespace {

int failures = 0;
void expect(bool ok, const std::string& what) {
  if (!ok) {
    fmt::print(stderr, "FAIL: {}\n", what);
    ++failures;
  }
}

// Rank r's value at element i: distinct per rank and element, exact in every dtype (quarters only
// for floats; f16 and bf16 hold them exactly at these magnitudes).
double input(int rank, int64_t i, DType dtype) {
  return static_cast<double>((i * 7 + rank * 3) % 23) - 11.0 + (isFloat(dtype) ? 0.25 * rank : 0.0);
}

void checkReduce(Communicator& comm, DType dtype, ReduceKind kind) {
  const int64_t n = 1000;
  Tensor t({dtype, {n}});
  for (int64_t i = 0; i < n; ++i) t.setDouble(i, input(comm.rank(), i, dtype));
  std::string what = fmt::format("{} {}", dtypeName(dtype), kind == ReduceKind::Sum ? "sum" : "mean");
  Status s = comm.allReduce(t.data(), n, dtype, kind, what);
  expect(s.ok(), what + ": " + (s.ok() ? "" : s.error().str()));
  for (int64_t i = 0; i < n; ++i) {
    double want = 0;
    for (int r = 0; r < comm.size(); ++r) want += input(r, i, dtype);
    if (kind == ReduceKind::Mean) want = isInt(dtype) ? std::trunc(want / comm.size()) : want / comm.size();
    double got = t.getDouble(i), tol = dtype == DType::F16 || dtype == DType::BF16 ? 0.02 * std::abs(want) + 0.02 : 1e-6;
    if (std::abs(got - want) > tol) {
      expect(false, fmt::format("rank {}: {} element {}: got {}, want {}", comm.rank(), what, i, got, want));
      break;
    }
  }
  // Bit-identical everywhere: compare with rank 0's bytes.
  std::vector<char> mine(static_cast<const char*>(t.data()), static_cast<const char*>(t.data()) + t.type().byteSize());
  std::vector<char> root = mine;
  expect(comm.broadcast(root.data(), static_cast<int64_t>(root.size()), 0, "rank 0's result").ok(), "broadcast");
  expect(root == mine, fmt::format("rank {}: {} differs from rank 0's bits", comm.rank(), what));
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "reduce";
  CommunicatorOptions options;
  if (mode == "stall") options.timeout = std::chrono::milliseconds(1000);
  auto comm = worldCommunicator(options);
  if (!comm) {
    fmt::print(stderr, "{}\n", comm.error().str());
    return 1;
  }
  Communicator& c = **comm;
  if (mode == "reduce") {
    expect(c.size() > 1, "expected several ranks (run under mpirun -np N)");
    for (DType t : {DType::F32, DType::F64, DType::I32, DType::I64, DType::I8, DType::F16, DType::BF16})
      for (ReduceKind k : {ReduceKind::Sum, ReduceKind::Mean}) checkReduce(c, t, k);
    expect(c.barrier("the end").ok(), "barrier");
    if (c.rank() == 0 && failures == 0) fmt::print("collectives: {} ranks agree on every reduction\n", c.size());
    return failures == 0 ? 0 : 1;
  }
  float x = 1;
  if (mode == "die" && c.rank() == 1) std::_Exit(3);
  if (mode == "stall" && c.rank() == 1) std::this_thread::sleep_for(std::chrono::seconds(20));
  Status s = c.allReduce(&x, 1, DType::F32, ReduceKind::Sum, "the gradient of %w");
  fmt::print(stderr, "rank {}: the all-reduce returned ({}) although rank 1 is gone\n", c.rank(), s.ok() ? "ok" : s.error().str());
  return 0;
}
