// The reduction thread (reduction_thread.h), and the communicator's one.
#include "runtime/collectives/reduction_thread.h"

#include <chrono>

#include "runtime/collectives/communicator.h"

namespace kiln::collectives {

ReductionThread::ReductionThread() : thread_([this] { loop(); }) {}

ReductionThread::~ReductionThread() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_.notify_one();
  thread_.join();
}

ReductionThread::Ticket ReductionThread::start(std::function<Status()> reduction) {
  Ticket ticket;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ticket = next_++;
    queue_.emplace_back(ticket, std::move(reduction));
  }
  work_.notify_one();
  return ticket;
}

ReductionThread::Outcome ReductionThread::wait(Ticket ticket) {
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return finished_.count(ticket) > 0; });
  Outcome outcome = std::move(finished_.at(ticket));
  finished_.erase(ticket);
  return outcome;
}

void ReductionThread::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left to run
    auto [ticket, reduction] = std::move(queue_.front());
    queue_.pop_front();
    Outcome outcome;
    if (ticket <= poisonedUpTo_) {
      outcome.status = Error("not run: an earlier all-reduce of the same step failed (" + poison_ + ")");
    } else {
      lock.unlock();
      auto begin = std::chrono::steady_clock::now();
      outcome.status = reduction();
      outcome.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
      lock.lock();
      if (!outcome.status) poisonedUpTo_ = next_ - 1, poison_ = outcome.status.error().message();
    }
    finished_.emplace(ticket, std::move(outcome));
    done_.notify_all();
  }
}

Communicator::Communicator() = default;
Communicator::~Communicator() = default;

ReductionThread& Communicator::reductionThread() {
  std::lock_guard<std::mutex> lock(threadMutex_);
  if (!thread_) thread_ = std::make_unique<ReductionThread>();
  return *thread_;
}

}  // namespace kiln::collectives
