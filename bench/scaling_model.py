#!/usr/bin/env python3
"""Predicts data-parallel efficiency on N GPUs from one GPU's measured step (docs/scaling.md).

  scaling_model.py --bench STEP.jsonl [--gpus 2,4,8] [--nodes 2,4] [inputs below]
  scaling_model.py --step-ms T1 --bucket-bytes B1,B2,... [...]

STEP.jsonl is `kiln bench STEP.kiln --json` of the data-parallel training step (one process, or
under mpirun): its compute time (the data-parallel "compute_ms", else the "total" line) is T1 and
its all_reduce kernels' bytes are the buckets. The model, per step of a rank (weak scaling: the
per-GPU batch stays the same, so compute stays T1):

  ring all-reduce of a bucket of S bytes over N ranks:  t(S) = a + 2 (N - 1) / N * S / busbw
  buckets become ready evenly over the backward pass (a fraction --backward of T1), in order, and
  are reduced one at a time: finish_i = max(ready_i, finish_{i-1}) + t(S_i)
  exposed E = finish_last - end of backward   (the part of the reductions not hidden)
  step T_N = T1 + E,  efficiency = T1 / T_N,  speedup = N * efficiency,  overlap = 1 - E / sum t

busbw is NCCL's bus bandwidth (nccl-tests' busbw, which already folds in the 2 (N - 1) / N of a
ring) and `a` its latency per collective: NVLink figures within a node, the network's across
nodes (the slowest link of the ring). Defaults are the H100 figures of docs/scaling.md, which
are inputs quoted from their sources, not measurements of kiln.
"""
import argparse
import json
import sys


def ring_time_ms(nbytes, ranks, busbw_gbps, latency_us):
    """Milliseconds for a ring all-reduce of `nbytes` over `ranks` at bus bandwidth busbw (GB/s)."""
    if ranks < 2:
        return 0.0
    return latency_us / 1e3 + 2.0 * (ranks - 1) / ranks * nbytes / (busbw_gbps * 1e9) * 1e3


def exposed_ms(step_ms, backward_fraction, bucket_times_ms):
    """Reduction time left on the critical path: buckets become ready evenly over the backward
    pass and go over the link one at a time, the last when the backward pass ends."""
    backward = backward_fraction * step_ms
    start_of_backward = step_ms - backward
    k = len(bucket_times_ms)
    finish = start_of_backward
    for i, t in enumerate(bucket_times_ms):
        ready = start_of_backward + backward * (i + 1) / k
        finish = max(ready, finish) + t
    return max(0.0, finish - step_ms) if k else 0.0


def predict(step_ms, buckets, ranks, busbw_gbps, latency_us, backward_fraction):
    times = [ring_time_ms(b, ranks, busbw_gbps, latency_us) for b in buckets]
    reduce_ms = sum(times)
    e = exposed_ms(step_ms, backward_fraction, times)
    step = step_ms + e
    return {"ranks": ranks, "allreduce_ms": reduce_ms, "exposed_ms": e, "step_ms": step,
            "overlap": (1 - e / reduce_ms) if reduce_ms > 0 else None,
            "efficiency": step_ms / step, "speedup": ranks * step_ms / step}


def from_bench(path):
    """T1 and the bucket sizes from kiln bench --json output."""
    records = [json.loads(line) for line in open(path) if line.strip()]
    dp = [r for r in records if r.get("section") == "data_parallel"]
    step = [r for r in dp if r["kernel"] == "step"]
    total = [r for r in records if r.get("kernel") == "total"]
    if step:
        t1 = step[0]["compute_ms"]
    elif total:
        t1 = total[0]["median_ms"]
    else:
        sys.exit("%s: no step time (neither a data_parallel step line nor a total line)" % path)
    buckets = [r["bytes"] for r in dp if r["kernel"] != "step"]
    if not buckets:
        sys.exit("%s: no all_reduce buckets: bench the data-parallel step (kiln train --print-step --replicas N)" % path)
    return t1, buckets


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bench", help="kiln bench --json output of the data-parallel step")
    p.add_argument("--step-ms", type=float, help="T1: one GPU's step time (compute only), ms")
    p.add_argument("--bucket-bytes", help="bytes of each bucket, in the order they are reduced, comma-separated")
    p.add_argument("--gpus", default="2,4,8", help="ranks within one node to predict (default 2,4,8)")
    p.add_argument("--nodes", default="2,4,8", help="node counts to predict, with --gpus-per-node each (default 2,4,8)")
    p.add_argument("--gpus-per-node", type=int, default=8)
    p.add_argument("--busbw-intra", type=float, default=450.0, help="NCCL busbw within a node, GB/s (H100 NVLink)")
    p.add_argument("--latency-intra-us", type=float, default=20.0, help="per all-reduce latency within a node, us")
    p.add_argument("--busbw-inter", type=float, default=45.0, help="NCCL busbw across nodes, GB/s (400 Gb/s NIC per GPU)")
    p.add_argument("--latency-inter-us", type=float, default=50.0, help="per all-reduce latency across nodes, us")
    p.add_argument("--backward", type=float, default=2 / 3, help="backward share of the step (default 2/3)")
    p.add_argument("--json", action="store_true", help="one JSON line per prediction")
    a = p.parse_args(argv)
    if a.bench:
        t1, buckets = from_bench(a.bench)
    elif a.step_ms and a.bucket_bytes:
        t1, buckets = a.step_ms, [int(b) for b in a.bucket_bytes.split(",")]
    else:
        p.error("give --bench, or --step-ms and --bucket-bytes")
    rows = []
    for n in [int(x) for x in a.gpus.split(",") if x]:
        rows.append(dict(predict(t1, buckets, n, a.busbw_intra, a.latency_intra_us, a.backward), where="1 node"))
    for nodes in [int(x) for x in a.nodes.split(",") if x]:
        n = nodes * a.gpus_per_node
        rows.append(dict(predict(t1, buckets, n, a.busbw_inter, a.latency_inter_us, a.backward),
                         where="%d nodes" % nodes))
    if a.json:
        for r in rows:
            print(json.dumps(dict(r, step1_ms=t1, bytes=sum(buckets), buckets=len(buckets))))
        return 0
    print("T1 = %.4g ms, %d buckets, %d bytes per step" % (t1, len(buckets), sum(buckets)))
    print("| GPUs | where | all-reduce ms | exposed ms | overlap | step ms | efficiency | speedup |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        overlap = "-" if r["overlap"] is None else "%.0f%%" % (100 * r["overlap"])
        print("| %d | %s | %.4g | %.4g | %s | %.4g | %.1f%% | %.2fx |" % (
            r["ranks"], r["where"], r["allreduce_ms"], r["exposed_ms"], overlap, r["step_ms"],
            100 * r["efficiency"], r["speedup"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
