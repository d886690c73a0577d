// The communicator of one replica: every collective is the identity.
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

#include "runtime/collectives/communicator.h"

namespace kiln::collectives {

namespace {
class SingleReplica final : public Communicator {
 public:
  explicit SingleReplica(CommunicatorOptions options) : options_(options) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::chrono::milliseconds timeout() const override { return options_.timeout; }
  Status allReduce(void*, int64_t, DType, ReduceKind, const std::string&) override { return {}; }
  Status broadcast(void*, int64_t, int, const std::string&) override { return {}; }
  Status barrier(const std::string&) override { return {}; }
  [[noreturn]] void abortAll(const std::string& message) override {
    fmt::print(stderr, "{}\n", message);
    std::exit(1);
  }

 private:
  CommunicatorOptions options_;
};
}  // namespace

std::unique_ptr<Communicator> singleReplica(const CommunicatorOptions& options) {
  return std::make_unique<SingleReplica>(options);
}

}  // namespace kiln::collectives
