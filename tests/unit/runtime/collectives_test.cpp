// The communicator a process gets: one replica unless an MPI launcher set the rank environment,
// and which rank / local rank the launcher's variables say (the MPI runs themselves are the
// mpi_* ctest entries, tests/mpi/collectives_check.cpp).
#include <gtest/gtest.h>

#include <cstdlib>

#include "runtime/collectives/communicator.h"

namespace kiln::collectives {
namespace {

// Sets environment variables for one test and restores them after.
class ScopedEnv {
 public:
  ScopedEnv(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (auto [name, value] : vars) {
      const char* old = std::getenv(name);
      saved_.push_back({name, old ? std::optional<std::string>(old) : std::nullopt});
      setenv(name, value, 1);
    }
  }
  ~ScopedEnv() {
    for (auto& [name, old] : saved_) old ? setenv(name, old->c_str(), 1) : unsetenv(name);
  }

 private:
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

TEST(Collectives, WithoutALauncherThereIsOneReplica) {
  if (std::getenv("OMPI_COMM_WORLD_SIZE")) GTEST_SKIP() << "this test binary itself runs under mpirun";
  ReplicaInfo info = replicaFromEnvironment();
  EXPECT_FALSE(info.launchedByMpi);
  EXPECT_EQ(info.size, 1);
  auto world = worldCommunicator();
  ASSERT_TRUE(world.ok()) << world.error().str();
  EXPECT_EQ((*world)->size(), 1);
  float x[3] = {1, 2, 3};
  EXPECT_TRUE((*world)->allReduce(x, 3, DType::F32, ReduceKind::Mean, "x").ok());
  EXPECT_EQ(x[2], 3.0f) << "one replica: the identity";
}

TEST(Collectives, OpenMpiEnvironmentGivesRankSizeAndLocalRank) {
  ScopedEnv env({{"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}});
  ReplicaInfo info = replicaFromEnvironment();
  EXPECT_TRUE(info.launchedByMpi);
  EXPECT_EQ(info.size, 8);
  EXPECT_EQ(info.rank, 5);
  EXPECT_EQ(info.localRank, 1);
}

TEST(Collectives, MalformedEnvironmentMeansNoLauncher) {
  ScopedEnv env({{"OMPI_COMM_WORLD_SIZE", "two"}, {"OMPI_COMM_WORLD_RANK", "0"}});
  EXPECT_FALSE(replicaFromEnvironment().launchedByMpi);
}

}  // namespace
}  // namespace kiln::collectives
