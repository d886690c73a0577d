// DeviceWorkers: every device's part of a run at once, runs from several threads taking turns.
#include "runtime/device_workers.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace kiln {
namespace {

// Each device waits (up to 10 s) until all have arrived: passes only if they run at the same time.
TEST(DeviceWorkers, RunsEveryDeviceAtOnce) {
  DeviceWorkers workers(3);
  for (int run = 0; run < 50; ++run) {
    std::atomic<int> arrived{0};
    std::vector<int> ran(3, 0);
    workers.run([&](int d) {
      ++ran[static_cast<size_t>(d)];
      ++arrived;
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (arrived.load() < 3 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    });
    EXPECT_EQ(arrived.load(), 3);
    EXPECT_EQ(ran, std::vector<int>({1, 1, 1})) << "run " << run;
  }
}

// Two threads' runs never interleave on the workers: a run sees only its own devices.
TEST(DeviceWorkers, RunsFromSeveralThreadsTakeTurns) {
  DeviceWorkers workers(2);
  std::atomic<int> inside{0}, overlapped{0}, calls{0};
  auto caller = [&] {
    for (int i = 0; i < 200; ++i)
      workers.run([&](int) {
        if (++inside > 2) ++overlapped;
        ++calls;
        --inside;
      });
  };
  std::thread a(caller), b(caller);
  a.join();
  b.join();
  EXPECT_EQ(overlapped.load(), 0);
  EXPECT_EQ(calls.load(), 2 * 200 * 2);
}

TEST(DeviceWorkers, OneDeviceRunsOnTheCaller) {
  DeviceWorkers workers(1);
  std::thread::id where;
  workers.run([&](int d) {
    EXPECT_EQ(d, 0);
    where = std::this_thread::get_id();
  });
  EXPECT_EQ(where, std::this_thread::get_id());
}

}  // namespace
}  // namespace kiln
