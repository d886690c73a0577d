#!/usr/bin/env python3
"""The model zoo: one inference of each real-size model by kiln and by onnxruntime, in the same
minutes, on the CPU or on the GPU.

  zoo_vs_onnxruntime.py [--kiln build/tools/kiln ...] [--zoo build/tests/zoo_real]
                        [--models resnet50,mobilenetv2,...] [--rounds 2] [--reps 10]
                        [--backend cpu|cuda]

For each round and model: `kiln bench MODEL --backend B --reps N` for every binary given (the
whole step's median: one inference, batch 1), then onnxruntime with the matching provider: on the
CPU with as many intra-op threads as kiln's pool (OMP_NUM_THREADS, else every core), on cuda its
CUDAExecutionProvider ("n/a" where the installed onnxruntime lacks it) with inputs and outputs on
the host, as `kiln bench` times a step from host inputs; the median of 20 `run`s after 5
warm-up, on inputs of the model's shapes (floats uniform in [0, 1), integer ids 1).
Prints a Markdown table, one row per round and model, times in ms. The models are the ones
tests/models/make_models.py writes (ctest's model_zoo_real_generate).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

DEFAULT_MODELS = "resnet50,mobilenetv2,efficientnet_b0,vit_b16,bert_encoder,gpt2_decoder"


def kiln_ms(kiln, model, reps, backend):
    out = subprocess.run([kiln, "bench", model, "--backend", backend, "--reps", str(reps)],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        if line.startswith("total"):
            fields = line.split()
            return float(fields[fields.index("ms") - 1])
    raise RuntimeError(f"no total in kiln bench's output for {model}:\n{out}")


def onnxruntime_ms(model, threads, backend):
    import numpy as np
    import onnxruntime as ort
    provider = "CUDAExecutionProvider" if backend == "cuda" else "CPUExecutionProvider"
    if provider not in ort.get_available_providers():
        return None
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(model, options, providers=[provider])
    feeds = {}
    for i in session.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        feeds[i.name] = (np.random.default_rng(0).random(shape, dtype=np.float32) if "float" in i.type
                         else np.ones(shape, np.int64))
    for _ in range(5):
        session.run(None, feeds)
    times = []
    for _ in range(20):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kiln", action="append", help="kiln binaries to time (default build/tools/kiln)")
    ap.add_argument("--zoo", default="build/tests/zoo_real")
    ap.add_argument("--models", default=DEFAULT_MODELS)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--backend", choices=["cpu", "cuda"], default="cpu")
    args = ap.parse_args(argv)
    kilns = args.kiln or ["build/tools/kiln"]
    threads = int(os.environ.get("OMP_NUM_THREADS") or os.cpu_count())
    peer = f"onnxruntime ({threads} threads)" if args.backend == "cpu" else "onnxruntime (CUDA provider)"
    header = "| round | model | " + " | ".join(f"kiln {k}" for k in kilns) + f" | {peer} |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for r in range(1, args.rounds + 1):
        for name in args.models.split(","):
            model = os.path.join(args.zoo, name, "model.onnx")
            if not os.path.exists(model):
                sys.exit(f"error: {model} does not exist (ctest -R model_zoo_real_generate writes the zoo)")
            digits = 1 if args.backend == "cpu" else 2
            cells = [f"{kiln_ms(k, model, args.reps, args.backend):.{digits}f}" for k in kilns]
            peer_ms = onnxruntime_ms(model, threads, args.backend)
            cells.append("n/a" if peer_ms is None else f"{peer_ms:.{digits}f}")
            print(f"| {r} | {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
