/* gpusim's own calls, beside the CUDA driver API that libkiln_gpusim.so exports. A program that
 * loaded the driver with dlopen looks these up with dlsym: finding gpusimIsSimulator tells it is
 * running on the simulator, and it can then print the simulator's reports and per-kernel counters.
 *
 * Environment knobs read at cuInit:
 *   KILN_GPUSIM_DEVICES=N       number of simulated H100s (default 1; 0: cuInit gives NO_DEVICE)
 *   KILN_GPUSIM_BUDGET=N        warp instructions per launch before CUDA_ERROR_LAUNCH_TIMEOUT
 *                               (default 1e9: about a minute of interpretation at worst; 0: no limit)
 *   KILN_GPUSIM_CHECKS=all|memcheck  all (default): memcheck, initcheck and racecheck;
 *                               memcheck: bounds and alignment checks only
 * Launch faults and checker findings are also printed on stderr, each line prefixed "gpusim: ". */
#ifndef GPUSIM_GPUSIM_H
#define GPUSIM_GPUSIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1: this driver is gpusim. */
int gpusimIsSimulator(void);

/* The full report of the last failed call or launch fault in this process (kernel, PTX line,
 * block and thread, address, nearest allocation), "" if none. Valid until the calling thread's
 * next call to gpusimLastReport. */
const char* gpusimLastReport(void);

/* What one kernel launch did (gpusim::KernelStats), counted per warp-level request as Nsight
 * Compute counts. */
typedef struct GpusimKernelStats {
  char name[256]; /* the kernel's name, truncated to fit */
  uint32_t grid[3], block[3];
  uint32_t registers_per_thread; /* from the PTX's .reg declarations: an upper bound on ptxas' */
  uint32_t static_shared_bytes, dynamic_shared_bytes, local_bytes_per_thread;
  uint64_t warp_instructions;   /* inst_executed */
  uint64_t thread_instructions; /* thread_inst_executed */
  uint64_t global_load_requests, global_load_sectors, global_load_bytes;
  uint64_t global_store_requests, global_store_sectors, global_store_bytes;
  uint64_t atomic_requests;
  uint64_t shared_requests, shared_wavefronts;
  uint32_t blocks_per_sm;
  double theoretical_occupancy, achieved_occupancy, sm_coverage;
  double sector_efficiency;          /* bytes asked for / (32 x sectors touched), 1 = ideal */
  double shared_wavefronts_per_request; /* 1 = conflict-free; bank conflicts per request = this - 1 */
} GpusimKernelStats;

/* Launches recorded since the start or the last reset, in completion order (a launch that faulted
 * is not recorded: its report is gpusimLastReport's). */
size_t gpusimKernelStatsCount(void);
/* Copies launch i's counters into *out, at most out_size bytes of them (pass sizeof *out: a caller
 * built against an older, shorter struct gets the prefix it knows, fields are only ever appended);
 * 0 on success, -1 if i is out of range. */
int gpusimKernelStatsGet(size_t i, GpusimKernelStats* out, size_t out_size);
void gpusimKernelStatsReset(void);

/* For the vendor-library stand-ins (libkiln_gpusim_cublaslt.so, docs/gpusim.md), which compute on
 * the host over the simulated device's memory, ordered on streams as kernels are. */

/* The current context's device ordinal, or -1 without one. */
int gpusimCurrentDevice(void);

/* Queues fn(device, user) on `stream` (a CUstream; NULL: the legacy stream) of the current
 * context as the device work of the library call `name`, ordered as a kernel launch is. Under
 * stream capture it becomes a graph node and may run several times. fn returns 0, or a CUresult
 * that becomes the context's sticky error as a kernel's fault does (report it first with
 * gpusimReport). `release(user)`, if given, runs once the work can no longer run. Returns the
 * CUresult of queueing (`release` has run if that failed). */
int gpusimLaunchHostWork(void* stream, const char* name, int (*fn)(int device, void* user), void* user,
                         void (*release)(void* user));

/* Access modes of gpusimDeviceMemory. */
enum { GPUSIM_READ = 1, GPUSIM_WRITE = 2 };

/* The host address of `bytes` of device `device`'s memory at `address`, for the `access` given
 * (GPUSIM_READ and/or GPUSIM_WRITE): NULL, with a report naming `what` and the nearest allocation,
 * where the range is not inside one live allocation. A write marks the bytes written; reading
 * bytes never written is reported as initcheck reports a kernel's read (KILN_GPUSIM_CHECKS=all),
 * and the address is still returned. */
void* gpusimDeviceMemory(int device, uint64_t address, size_t bytes, int access, const char* what);

/* Records `report` as gpusimLastReport's and prints it on stderr, each line prefixed "gpusim: ". */
void gpusimReport(const char* report);

#ifdef __cplusplus
}
#endif

#endif /* GPUSIM_GPUSIM_H */
