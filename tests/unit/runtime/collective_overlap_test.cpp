// Overlap of gradient reductions with the backward pass on the CPU backend (CollectiveMode): with
// a stand-in for a second replica, a data-parallel training step starts each bucket's all_reduce
// right after its kernel, keeps computing the earlier layers' gradients, and waits only before the
// first kernel that reads the bucket; the reductions run on another thread; results equal the
// synchronous run's bit for bit. Orders are checked, never timings. (The real MPI runs are the
// mpi_* ctest entries.)
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

#include "frontend/parser.h"
#include "passes/train_step.h"
#include "runtime/collectives/communicator.h"
#include "runtime/executable.h"
#include "runtime/random_inputs.h"

namespace kiln {
namespace {

// Three layers, so that small buckets split the gradients: the last layer's are computed first.
constexpr const char* kMlp = R"(
func @loss(%w1: f32[16,64], %b1: f32[64], %w2: f32[64,64], %b2: f32[64], %w3: f32[64,4], %b3: f32[4],
           %x: f32[32,16], %y: i32[32]) -> f32[] {
  %h1 = matmul %x, %w1
  %z1 = add %h1, %b1
  %a1 = tanh %z1
  %h2 = matmul %a1, %w2
  %z2 = add %h2, %b2
  %a2 = tanh %z2
  %h3 = matmul %a2, %w3
  %logits = add %h3, %b3
  %l = softmax_cross_entropy %logits, %y
  %loss = reduce_mean %l
  return %loss
}
)";

// Replicas that all hold this process's values: the sum of N copies is N times the value, the mean
// the value itself. Records the threads it was called on; fails the call numbered `failAt`.
class IdenticalReplicas final : public collectives::Communicator {
 public:
  explicit IdenticalReplicas(int failAt = -1) : failAt_(failAt) {}
  int rank() const override { return 0; }
  int size() const override { return 2; }
  std::chrono::milliseconds timeout() const override { return std::chrono::seconds(10); }
  Status allReduce(void* data, int64_t count, DType dtype, collectives::ReduceKind kind, const std::string& what) override {
    threads.push_back(std::this_thread::get_id());
    if (calls++ == failAt_) return Error("rank 0: MPI_Reduce for " + what + " failed: injected");
    if (dtype != DType::F32) return Error("this stand-in reduces f32 only");
    if (kind == collectives::ReduceKind::Sum)
      for (int64_t i = 0; i < count; ++i) static_cast<float*>(data)[i] *= 2;
    return {};
  }
  Status broadcast(void*, int64_t, int, const std::string&) override { return {}; }
  Status barrier(const std::string&) override { return {}; }
  [[noreturn]] void abortAll(const std::string& message) override {
    ADD_FAILURE() << message;
    std::abort();
  }

  std::vector<std::thread::id> threads;  // written by one thread at a time (the reductions are serial)
  std::atomic<int> calls{0};

 private:
  int failAt_;
};

struct Step {
  std::unique_ptr<Module> module;
  std::unique_ptr<Executable> exe;
  std::vector<Tensor> inputs;
};

// The data-parallel sgd step of kMlp with 1 KiB buckets, compiled for the CPU.
Step compileStep() {
  Step s;
  auto m = parseModule(kMlp, "mlp.kiln");
  EXPECT_TRUE(m.ok()) << m.error().str();
  s.module = std::move(*m);
  passes::TrainSpec spec;
  spec.params = {"w1", "b1", "w2", "b2", "w3", "b3"};
  spec.optimizer = *passes::parseOptimizer("sgd");
  spec.dataParallel = true;
  spec.bucketBytes = 1024;
  auto step = passes::buildTrainStep(*s.module, *s.module->lookup("loss"), spec, "step");
  EXPECT_TRUE(step.ok()) << step.error().str();
  codegen::CompileOptions options;
  options.target = codegen::Target::Cpu;
  auto exe = Executable::compile(**step, options);
  EXPECT_TRUE(exe.ok()) << exe.error().str();
  s.exe = std::move(*exe);
  s.inputs = randomInputs(s.exe->function(), 3);
  return s;
}

// The schedule entry "<what> <kernel>"'s position, or -1.
int position(const std::vector<std::string>& schedule, const std::string& entry) {
  auto it = std::find(schedule.begin(), schedule.end(), entry);
  return it == schedule.end() ? -1 : static_cast<int>(it - schedule.begin());
}

std::string joined(const std::vector<std::string>& schedule) {
  std::string s;
  for (const std::string& e : schedule) s += e + "\n";
  return s;
}

TEST(CollectiveOverlap, ReductionsStartEarlyAndAreWaitedForOnlyByTheirReaders) {
  Step s = compileStep();
  const codegen::BlockPlan& plan = s.exe->plan();
  IdenticalReplicas replicas;
  std::vector<std::string> schedule;
  ExecuteOptions options;
  options.communicator = &replicas;
  options.schedule = &schedule;
  auto overlapped = s.exe->run(s.inputs, options);
  ASSERT_TRUE(overlapped.ok()) << overlapped.error().str();
  SCOPED_TRACE(joined(schedule));
  if (std::getenv("KILN_PRINT_SCHEDULE")) std::printf("%s", joined(schedule).c_str());

  int buckets = 0;
  bool overlappedABackwardMatmul = false;
  for (const codegen::Step& step : plan.steps) {
    const codegen::KernelGroup& g = plan.groups[static_cast<size_t>(step.group)];
    if (g.ops.size() != 1 || g.ops[0]->kind() != OpKind::AllReduce) continue;
    ++buckets;
    int kernel = position(schedule, "kernel " + g.name), start = position(schedule, "start " + g.name),
        wait = position(schedule, "wait " + g.name);
    ASSERT_GE(kernel, 0);
    EXPECT_EQ(start, kernel + 1) << g.name << ": the reduction starts right after its kernel";
    ASSERT_GT(wait, start) << g.name << " is waited for after it started";
    // The first kernel that reads the bucket's result comes right after the wait (and other waits).
    std::string reader;
    for (const codegen::Step& later : plan.steps) {
      const codegen::KernelGroup& r = plan.groups[static_cast<size_t>(later.group)];
      if (position(schedule, "kernel " + r.name) > kernel &&
          std::count(r.inputs.begin(), r.inputs.end(), g.results[0]) && reader.empty())
        reader = r.name;
    }
    if (!reader.empty()) {
      int read = position(schedule, "kernel " + reader);
      EXPECT_GT(read, wait) << g.name << " is waited for before " << reader << " reads it";
      for (int i = wait + 1; i < read; ++i)
        EXPECT_EQ(schedule[static_cast<size_t>(i)].rfind("wait ", 0), 0u) << g.name << ": waited for too early";
    }
    for (int i = start + 1; i < wait; ++i)
      overlappedABackwardMatmul |= schedule[static_cast<size_t>(i)].find("matmul") != std::string::npos;
  }
  EXPECT_GE(buckets, 3) << "1 KiB buckets split the gradients";
  EXPECT_TRUE(overlappedABackwardMatmul) << "an earlier layer's gradient matmul runs while a bucket is reduced";
  ASSERT_EQ(replicas.threads.size(), static_cast<size_t>(buckets));
  for (std::thread::id t : replicas.threads) EXPECT_NE(t, std::this_thread::get_id()) << "reduced on another thread";

  // The same step with synchronous reductions, and with none (identical replicas: mean = value).
  for (CollectiveMode mode : {CollectiveMode::Synchronous, CollectiveMode::Skipped}) {
    std::vector<std::string> serial;
    options.collectives = mode;
    options.schedule = &serial;
    auto other = s.exe->run(s.inputs, options);
    ASSERT_TRUE(other.ok()) << other.error().str();
    EXPECT_EQ(std::count_if(serial.begin(), serial.end(), [](const std::string& e) { return e.rfind("wait ", 0) == 0; }),
              0);
    ASSERT_EQ(other->size(), overlapped->size());
    for (size_t i = 0; i < other->size(); ++i)
      EXPECT_EQ(std::memcmp((*other)[i].data(), (*overlapped)[i].data(), (*other)[i].byteSize()), 0) << "result " << i;
  }
}

TEST(CollectiveOverlap, TimingsCoverEveryBucket) {
  Step s = compileStep();
  IdenticalReplicas replicas;
  std::vector<CollectiveTiming> timings;
  ExecuteOptions options;
  options.communicator = &replicas;
  options.collectiveTimings = &timings;
  ASSERT_TRUE(s.exe->run(s.inputs, options).ok());
  ASSERT_EQ(timings.size(), static_cast<size_t>(replicas.calls.load()));
  int64_t bytes = 0;
  for (const CollectiveTiming& t : timings) {
    EXPECT_NE(t.kernel.find("all_reduce"), std::string::npos);
    EXPECT_GT(t.bytes, 0);
    EXPECT_GE(t.milliseconds, 0);
    EXPECT_GE(t.waitedMilliseconds, 0);
    bytes += t.bytes;
  }
  int64_t gradients = (16 * 64 + 64 + 64 * 64 + 64 + 64 * 4 + 4) * 4, loss = 4;
  EXPECT_EQ(bytes, gradients + loss) << "every gradient byte is reduced once, and the loss";
}

TEST(CollectiveOverlap, AFailedReductionFailsTheRunAndTheNextRunWorks) {
  Step s = compileStep();
  IdenticalReplicas replicas(/*failAt=*/1);
  ExecuteOptions options;
  options.communicator = &replicas;
  auto failed = s.exe->run(s.inputs, options);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().message().find("rank 0: MPI_Reduce for all_reduce of %"), std::string::npos)
      << failed.error().str();
  EXPECT_NE(failed.error().message().find("failed: injected"), std::string::npos) << failed.error().str();
  int before = replicas.calls.load();
  auto again = s.exe->run(s.inputs, options);
  EXPECT_TRUE(again.ok()) << again.error().str();
  EXPECT_GT(replicas.calls.load(), before);
}

}  // namespace
}  // namespace kiln
