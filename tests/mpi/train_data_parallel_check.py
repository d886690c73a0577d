#!/usr/bin/env python3
"""Data-parallel `kiln train` under mpirun, on the CPU backend (ctest mpi_train_data_parallel) or, with
--backend cuda, one simulated GPU per rank with NCCL's stand-in between them
(mpi_train_data_parallel_cuda_mlp, _cnn):

  1. mpirun -np 2 and -np 4 (with --accumulate 2 too; with one bucket and with several, whose
     reductions overlap the backward pass) end with parameters bit-identical on every rank (kiln
     train checks and says so) and equal, within f32 rounding, to one process training on the same
     global batches;
  2. --replicas 2 starts the two ranks itself; on the CPU, hybrid parallelism (mpirun -np 2 x
     --pipeline-stages 2 --micro-batches 2, both schedules, and mpirun -np 2 x --devices 2 --split;
     on cuda the latter with 4 simulated GPUs, two per rank) equals one process too;
  3. a rank that dies mid-run ends every rank with a non-zero exit within the timeout, and the
     checkpoint written before it stays valid: --resume continues from it;
  4. a rank that hangs mid-run makes the others' reductions pass --collective-timeout: rank 0
     names itself and the call (on cuda, NCCL's stand-in also names the rank it waits for) and
     the job ends.
"""
import os
import subprocess
import sys

import numpy as np

from mpi_check import MODELS, start


def main():
    a = start(__doc__.splitlines()[0], 256)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    model, PARAMS, _ = MODELS[a.model]
    common = [model, "--backend", a.backend, "--params", ",".join(PARAMS), "--data", "x=data/x.npy,y=data/y.npy",
              "--batch", "32", "--optimizer", "momentum", "--lr", "0.05"]

    def train(ranks, save, *extra, fault=None, check=True, gpus=None):
        cmd = [a.kiln, "train"] + common + ["--save", save] + list(extra)
        if ranks > 1:
            cmd = [a.mpirun, "-np", str(ranks)] + cmd
        e = dict(env, KILN_TRAIN_FAULT=fault) if fault else env
        if gpus:
            e = dict(e, KILN_GPUSIM_DEVICES=str(gpus))
        r = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=120)
        if check and r.returncode != 0:
            sys.exit("failed: %s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
        return r

    def same(x, y, what):
        for name in PARAMS:
            u, v = np.load(os.path.join(x, name + ".npy")), np.load(os.path.join(y, name + ".npy"))
            err = float(np.abs(u - v).max())
            if err > 1e-5:
                sys.exit("%s: %s differs by %g" % (what, name, err))
        print("ok: %s" % what)

    train(1, "single", "--steps", "12")
    # Small buckets: several reductions per step, each overlapping the gradients still computed.
    for ranks, extra in ((2, ["--bucket-bytes", "4096"]), (4, []), (4, ["--accumulate", "2", "--bucket-bytes", "1024"])):
        out = "np%d%s" % (ranks, "acc" if "--accumulate" in extra else "")
        r = train(ranks, out, "--steps", "12", *extra)
        if "replicas: all %d hold the same parameters" % ranks not in r.stdout:
            sys.exit("%s: kiln train did not confirm identical replicas:\n%s" % (out, r.stdout))
        same("single", out, "mpirun -np %d %s equals one process, ranks bit-identical" % (ranks, " ".join(extra)))

    # Hybrid: data parallel across 2 ranks x each rank's batch pipelined through 2 devices (CPU
    # devices; on cuda each rank takes 2 GPUs of its own, local rank r GPUs 2r and 2r + 1).
    if a.backend == "cuda" and a.model == "mlp":
        r = train(2, "hybrid_placed", "--steps", "12", "--devices", "2", "--split", gpus=4)
        if "replicas: all 2 hold the same parameters" not in r.stdout or "pipeline:" in r.stdout:
            sys.exit("hybrid_placed: no identical replicas, or a pipeline report nobody asked for:\n%s" % r.stdout)
        same("single", "hybrid_placed", "mpirun -np 2 x --devices 2 --split on 4 simulated GPUs equals one process")
    if a.backend == "cpu":
        for schedule in ("gpipe", "1f1b"):
            out = "hybrid_" + schedule
            r = train(2, out, "--steps", "12", "--pipeline-stages", "2", "--micro-batches", "2", "--schedule", schedule)
            if "replicas: all 2 hold the same parameters" not in r.stdout or "pipeline: 2 stages x 2" not in r.stdout:
                sys.exit("%s: no identical replicas or no pipeline report:\n%s" % (out, r.stdout))
            same("single", out, "mpirun -np 2 x --pipeline-stages 2 --micro-batches 2 (%s) equals one process" % schedule)
        # Model parallel without pipelining: each rank's step split across 2 devices by compute.
        r = train(2, "hybrid_placed", "--steps", "12", "--devices", "2", "--split")
        if "replicas: all 2 hold the same parameters" not in r.stdout:
            sys.exit("hybrid_placed: no identical replicas:\n%s" % r.stdout)
        same("single", "hybrid_placed", "mpirun -np 2 x --devices 2 --split equals one process")

    r = subprocess.run([a.kiln, "train"] + common + ["--steps", "12", "--save", "replicas2", "--replicas", "2"],
                       env=os.environ.copy(),
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0 or "replicas: all 2 hold the same parameters" not in r.stdout:
        sys.exit("--replicas 2 failed:\n%s%s" % (r.stdout, r.stderr))
    same("single", "replicas2", "--replicas 2 equals one process")

    # Failure: 6 steps saved, then a run resuming from them loses rank 1 before its step 9.
    train(2, "ckpt", "--steps", "6")
    r = train(2, "ckpt", "--steps", "6", "--resume", "ckpt", "--collective-timeout", "20", fault="exit:1:9", check=False)
    if r.returncode == 0:
        sys.exit("a dead rank went unnoticed:\n%s%s" % (r.stdout, r.stderr))
    if "exiting before step 9" not in r.stderr:
        sys.exit("the fault was not injected:\n%s" % r.stderr)
    print("ok: rank 1 died, the job ended with exit %d" % r.returncode)
    train(2, "ckpt", "--steps", "6", "--resume", "ckpt")
    same("single", "ckpt", "6 steps, a failed resume, then 6 resumed steps equal 12 steps")

    # A rank that hangs: rank 0's reduction (on its reduction thread) passes the 2 s deadline, names
    # itself and the call, and ends the job.
    r = train(2, "stall", "--steps", "4", "--collective-timeout", "2", fault="stall:1:3", check=False)
    if r.returncode == 0 or "stalling before step 3" not in r.stderr:
        sys.exit("a stalled rank went unnoticed:\n%s%s" % (r.stdout, r.stderr))
    # The CPU's reductions go through MPI; cuda's through NCCL on its own stream.
    call = "MPI_Reduce for all_reduce of %" if a.backend == "cpu" else "NCCL collective for the step's all_reduce"
    if "rank 0 of 2: " + call not in r.stderr or "did not complete within 2000 ms" not in r.stderr:
        sys.exit("the timeout message does not name the rank and the call:\n%s" % r.stderr)
    if a.backend == "cuda" and "waits for rank(s) 1 to reach the collective" not in r.stderr:
        sys.exit("the timeout message does not name the stalled rank:\n%s" % r.stderr)
    print("ok: rank 1 stalled, rank 0 timed out after 2 s and ended the job (exit %d)" % r.returncode)


if __name__ == "__main__":
    main()
