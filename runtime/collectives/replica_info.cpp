// Which replica this process is, from the environment the launcher (mpirun) sets.
#include <cstdlib>
#include <string>

#include "runtime/collectives/communicator.h"

namespace kiln::collectives {

namespace {
// The first of `names` that is set to an integer, or -1.
int envInt(std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (const char* v = std::getenv(name); v && *v) {
      char* end = nullptr;
      long n = std::strtol(v, &end, 10);
      if (*end == '\0' && n >= 0) return static_cast<int>(n);
    }
  return -1;
}
}  // namespace

ReplicaInfo replicaFromEnvironment() {
  ReplicaInfo info;
  int size = envInt({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"});
  int rank = envInt({"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"});
  if (size < 1 || rank < 0) return info;
  info.size = size;
  info.rank = rank;
  int local = envInt({"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK"});
  info.localRank = local >= 0 ? local : rank;
  info.launchedByMpi = true;
  return info;
}

}  // namespace kiln::collectives
