// The host's cache sizes, for codegen choices that depend on what stays in the caches between one
// kernel and the next (streaming_stores.h).
#pragma once

#include <cstdint>

namespace kiln::codegen {

struct HostCaches {
  // The L2 caches of all the host's cores together, each shared one counted once.
  int64_t l2Bytes = 0;
  // The last-level (L3) caches together, each counted once; 0 where the host does not say.
  int64_t lastLevelBytes = 0;
};

// Read once per process from /sys/devices/system/cpu/cpu*/cache (per cache instance, so SMT
// siblings sharing an L2 and the cores of a CCX sharing an L3 count it once). Where sysfs says
// nothing, the L2 is sysconf's per-core size (1 MiB if unknown) times the hardware threads, and the
// L3 unknown: sysconf's L3 is the whole socket's on some VMs (256 MiB on a 2-vCPU EPYC guest
// whose cores reach 32 MiB).
const HostCaches& hostCaches();

}  // namespace kiln::codegen
