// A communicator's all-reduces on a thread of their own: the thread that runs kernels starts a
// gradient bucket's reduction and goes on with the rest of the backward pass while it is on the
// wire, and waits for it only before the first kernel that reads its result (the CPU backend's
// overlap of communication with computation; the CUDA program gets the same from a second stream).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "ir/status.h"

namespace kiln::collectives {

// Reductions run one at a time in the order they were started. Every replica starts the same
// reductions in the same order, so MPI matches them up exactly as it matches blocking calls, and
// the communicator's deadline and abort apply unchanged on this thread.
class ReductionThread {
 public:
  using Ticket = uint64_t;
  struct Outcome {
    Status status;
    double milliseconds = 0;  // how long the reduction itself ran on the thread
  };

  ReductionThread();
  // Runs what was started, then joins.
  ~ReductionThread();
  ReductionThread(const ReductionThread&) = delete;
  ReductionThread& operator=(const ReductionThread&) = delete;

  // Queues `reduction` and returns at once. It must leave alone memory the caller uses until the
  // ticket is waited for, and the caller must not touch the memory it reduces until then.
  Ticket start(std::function<Status()> reduction);
  // Blocks until that reduction has run; its status and duration. Each ticket is waited for once.
  Outcome wait(Ticket ticket);

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable work_, done_;
  std::deque<std::pair<Ticket, std::function<Status()>>> queue_;
  std::map<Ticket, Outcome> finished_;
  Ticket next_ = 1;
  // After a failure, reductions started before it was seen are not run (the replicas that did not
  // fail will not enter them): up to this ticket they fail at once, naming the first failure.
  Ticket poisonedUpTo_ = 0;
  std::string poison_;
  bool stopping_ = false;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace kiln::collectives
