#!/usr/bin/env python3
"""`kiln bench` of a data-parallel training step under mpirun -np 2 on the CPU (ctest
mpi_bench_data_parallel), or with --backend cuda on simulated GPUs, where the table shows how each
bucket's all-reduce overlapped the kernels queued after it (mpi_bench_data_parallel_cuda): the step comes from `kiln train --print-step --replicas 2` with small
buckets; the table has the data-parallel section and --json its per-bucket and per-step lines,
with every field present and consistent (bytes add up to the gradients and metrics, times are
non-negative, the overlap is a fraction). Timings are machine-dependent and never compared with
thresholds.
"""
import json
import subprocess
import sys

from mpi_check import MLP, MLP_PARAMS, start

# examples/train/mlp_classifier.kiln: 2 -> 64 -> 64 -> 3; the loss and the accuracy are averaged too.
GRADIENT_FLOATS = 2 * 64 + 64 + 64 * 64 + 64 + 64 * 3 + 3
METRIC_FLOATS = 2


def main():
    a = start(__doc__.splitlines()[0], 128)
    subprocess.run([a.kiln, "train", MLP, "--params", ",".join(MLP_PARAMS), "--data", "x=data/x.npy,y=data/y.npy",
                    "--batch", "64", "--optimizer", "adam", "--print-step", "--replicas", "2", "--bucket-bytes", "4096",
                    "-o", "step.kiln"], check=True)

    def bench(*extra):
        cmd = [a.mpirun, "-np", "2", a.kiln, "bench", "step.kiln", "--backend", a.backend, "--reps", "3", "--warmup", "1"]
        r = subprocess.run(cmd + list(extra), capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            sys.exit("failed: %s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
        return r.stdout

    table = bench()
    if a.backend == "cuda":
        # The simulator has no clock: the overlap is the work queued on the compute stream while each
        # bucket's all-reduce ran on the NCCL stream. The gradient buckets are reduced while the
        # backward pass goes on, so at least one has kernels queued behind it.
        lines = [line for line in table.splitlines() if "all_reduce" in line and "on the NCCL stream while" in line]
        overlapped = [line for line in lines if " while 0 kernel(s)" not in line]
        if "each all-reduce's overlap" not in table or len(lines) < 3 or not overlapped:
            sys.exit("the simulated table lacks the all-reduces' overlap:\n%s" % table)
        print("ok: %d all-reduces, %d of them overlapping later kernels (simulated order)" % (len(lines), len(overlapped)))
        return
    for want in ("data parallel over 2 ranks", "per step: ", "all-reduce ", "overlap ", "host waited "):
        if want not in table:
            sys.exit("the table lacks %r:\n%s" % (want, table))
    if table.count("@main_batch32_step on cpu") != 1:
        sys.exit("rank 0 alone should print the table:\n%s" % table)
    print("ok: the table has the data-parallel section, printed once")

    lines = [json.loads(line) for line in bench("--json").splitlines() if line.strip()]
    dp = [r for r in lines if r.get("section") == "data_parallel"]
    buckets = [r for r in dp if r["kernel"] != "step"]
    steps = [r for r in dp if r["kernel"] == "step"]
    if len(steps) != 1 or len(buckets) < 3:
        sys.exit("expected 1 step line and >= 3 buckets (4 KiB buckets), got:\n%s" % "\n".join(map(str, dp)))
    step = steps[0]
    for r in buckets:
        for key in ("case", "backend", "device", "ranks", "bytes", "sync_ms", "overlapped_ms", "wait_ms"):
            if key not in r:
                sys.exit("bucket line lacks %s: %s" % (key, r))
        if "all_reduce" not in r["kernel"] or r["ranks"] != 2 or r["bytes"] <= 0:
            sys.exit("bad bucket line: %s" % r)
        if min(r["sync_ms"], r["overlapped_ms"], r["wait_ms"]) < 0:
            sys.exit("negative time: %s" % r)
    for key in ("step_ms", "step_sync_ms", "compute_ms", "allreduce_ms", "exposed_ms", "exposed_sync_ms", "wait_ms"):
        if not isinstance(step.get(key), (int, float)) or step[key] < 0:
            sys.exit("step line: bad %s: %s" % (key, step))
    if step["compute_ms"] <= 0 or step["step_ms"] <= 0 or step["allreduce_ms"] <= 0:
        sys.exit("step line: a step and its reductions take time: %s" % step)
    if step["buckets"] != len(buckets) or step["bytes"] != sum(r["bytes"] for r in buckets):
        sys.exit("step line disagrees with its buckets: %s" % step)
    if step["bytes"] != 4 * (GRADIENT_FLOATS + METRIC_FLOATS):
        sys.exit("reduced %d bytes per step, expected every gradient and metric once (%d)"
                 % (step["bytes"], 4 * (GRADIENT_FLOATS + METRIC_FLOATS)))
    if abs(step["exposed_ms"] - max(0.0, step["step_ms"] - step["compute_ms"])) > 1e-3:
        sys.exit("exposed_ms is not step_ms - compute_ms: %s" % step)
    for key in ("overlap", "overlap_by_wait"):
        if key not in step or not (step[key] is None or 0 <= step[key] <= 1):
            sys.exit("%s is not a fraction: %s" % (key, step))
    if step["overlap_by_wait"] is None:
        sys.exit("the CPU host waits for reductions, so overlap_by_wait has a value: %s" % step)
    total = [r for r in lines if r.get("kernel") == "total"]
    if len(total) != 1 or abs(total[0]["median_ms"] - step["step_ms"]) > 1e-3:
        sys.exit("the total line should be the overlapped step: %s" % total)
    print("ok: %d buckets, %d bytes per step, step %.3f ms, compute %.3f ms, all-reduce %.3f ms, overlap %s"
          % (len(buckets), step["bytes"], step["step_ms"], step["compute_ms"], step["allreduce_ms"], step["overlap"]))


if __name__ == "__main__":
    main()
