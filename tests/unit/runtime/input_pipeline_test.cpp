// The input pipeline: batches in the order a synchronous gather of the whole arrays gives, across
// shards, epochs and replicas; shards checked when opened; a failing producer's error at its
// batch; no hang when the consumer stops early.
#include "runtime/input_pipeline.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ir/npy.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

class InputPipelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kiln_input_pipeline_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Rows [begin, end) of `whole` as a .npy shard.
  std::string shard(const std::string& name, const Tensor& whole, int64_t begin, int64_t end) {
    TensorType type = whole.type();
    type.shape[0] = end - begin;
    Tensor part(type);
    size_t row = whole.byteSize() / static_cast<size_t>(whole.shape()[0]);
    std::memcpy(part.data(), static_cast<const char*>(whole.data()) + begin * row, part.byteSize());
    std::string path = (dir_ / name).string();
    EXPECT_TRUE(writeNpy(path, part).ok());
    return path;
  }

  fs::path dir_;
};

Tensor counting(TensorType type, double scale) {
  Tensor t(type);
  for (int64_t i = 0; i < t.numElements(); ++i) t.setDouble(i, scale * static_cast<double>(i));
  return t;
}

// What reading the whole arrays synchronously gives for update `step` (kiln train's order).
Tensor expectedBatch(const Tensor& whole, int64_t step, int64_t batch, uint64_t seed, int shard, int shards) {
  int64_t n = whole.shape()[0], perEpoch = n / batch, share = batch / shards;
  std::vector<int64_t> perm = epochPermutation(seed, step / perEpoch, n);
  TensorType type = whole.type();
  type.shape[0] = share;
  Tensor out(type);
  size_t row = whole.byteSize() / static_cast<size_t>(n);
  for (int64_t i = 0; i < share; ++i)
    std::memcpy(static_cast<char*>(out.data()) + i * row,
                static_cast<const char*>(whole.data()) + perm[(step % perEpoch) * batch + shard * share + i] * row, row);
  return out;
}

TEST_F(InputPipelineTest, BatchesFollowTheSynchronousOrderAcrossShardsEpochsAndReplicas) {
  Tensor x = counting({DType::F32, {50, 3}}, 0.5), y = counting({DType::I32, {50}}, 1);
  std::vector<InputSource> sources = {
      {"x", {shard("x0.npy", x, 0, 7), shard("x1.npy", x, 7, 30), shard("x2.npy", x, 30, 50)}},
      {"y", {shard("y0.npy", y, 0, 25), shard("y1.npy", y, 25, 50)}}};
  for (int shards : {1, 2}) {
    for (int s = 0; s < shards; ++s) {
      auto p = InputPipeline::open(sources);
      ASSERT_TRUE(p) << p.error().str();
      EXPECT_EQ((*p)->length(), 50);
      EXPECT_EQ((*p)->types()[0].str(), "f32[50,3]");
      InputPipelineOptions o;
      o.batch = 8;  // 6 updates per epoch: 14 updates cross two epoch boundaries
      o.seed = 9;
      o.shard = s;
      o.shards = shards;
      o.firstStep = 3;
      o.steps = 14;
      o.depth = 3;
      ASSERT_TRUE((*p)->start(o).ok());
      for (int64_t k = 0; k < o.steps; ++k) {
        double waited = -1;
        auto batch = (*p)->next(&waited);
        ASSERT_TRUE(batch) << batch.error().str();
        EXPECT_GE(waited, 0);
        EXPECT_TRUE((*batch)[0] == expectedBatch(x, o.firstStep + k, 8, 9, s, shards)) << "update " << k;
        EXPECT_TRUE((*batch)[1] == expectedBatch(y, o.firstStep + k, 8, 9, s, shards)) << "update " << k;
      }
      auto after = (*p)->next();
      ASSERT_FALSE(after);
      EXPECT_NE(after.error().str().find("produced all 14 batches"), std::string::npos);
    }
  }
}

TEST_F(InputPipelineTest, BadShardsAreErrorsWhenOpened) {
  Tensor x = counting({DType::F32, {10, 2}}, 1);
  std::string good = shard("good.npy", x, 0, 10);
  // Truncated: the header promises 10 rows, the file holds fewer bytes.
  std::string truncated = (dir_ / "truncated.npy").string();
  {
    std::string bytes = encodeNpy(x);
    std::ofstream(truncated, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size() - 12));
  }
  auto p = InputPipeline::open({{"x", {good, truncated}}});
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().str().find("truncated.npy: truncated .npy data"), std::string::npos) << p.error().str();
  std::string other = shard("other.npy", counting({DType::F32, {4, 3}}, 1), 0, 4);
  auto mixed = InputPipeline::open({{"x", {good, other}}});
  ASSERT_FALSE(mixed);
  EXPECT_NE(mixed.error().str().find("shards must agree in all but axis 0"), std::string::npos) << mixed.error().str();
  auto missing = InputPipeline::open({{"x", {(dir_ / "nope.npy").string()}}});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().str().find("nope.npy"), std::string::npos);
  auto p2 = InputPipeline::open({{"x", {good}}, {"y", {shard("short.npy", x, 0, 4)}}});
  ASSERT_FALSE(p2);
  EXPECT_NE(p2.error().str().find("differ in length: x has 10 samples, y has 4"), std::string::npos) << p2.error().str();
  auto p3 = InputPipeline::open({{"x", {good}}});
  ASSERT_TRUE(p3);
  EXPECT_FALSE((*p3)->next());  // not started
  InputPipelineOptions big;
  big.batch = 11;
  EXPECT_FALSE((*p3)->start(big).ok());
}

TEST_F(InputPipelineTest, AFailingProducerStopsAtItsBatchAndStoppingNeverHangs) {
  Tensor x = counting({DType::F32, {40, 2}}, 1);
  std::vector<InputSource> sources = {{"x", {shard("x.npy", x, 0, 40)}}};
  auto p = InputPipeline::open(sources);
  ASSERT_TRUE(p);
  InputPipelineOptions o;
  o.batch = 4;
  o.steps = 10;
  o.fault = [](int64_t update) { return update == 2 ? Status(Error("disk on fire at sample 9")) : Status(); };
  ASSERT_TRUE((*p)->start(o).ok());
  EXPECT_TRUE((*p)->next());
  EXPECT_TRUE((*p)->next());
  auto failed = (*p)->next();
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().message(), "input of step 3: disk on fire at sample 9");
  EXPECT_FALSE((*p)->next());  // nothing after the failure, and no wait for it
  // A consumer that stops early: the producer is blocked on a full queue, and the destructor ends it.
  auto q = InputPipeline::open(sources);
  ASSERT_TRUE(q);
  o.fault = nullptr;
  o.steps = 1000;
  ASSERT_TRUE((*q)->start(o).ok());
  EXPECT_TRUE((*q)->next());
  auto start = std::chrono::steady_clock::now();
  q->reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace kiln
