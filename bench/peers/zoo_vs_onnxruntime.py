#!/usr/bin/env python3
"""The model zoo on the CPU: one inference of each real-size model by kiln and by onnxruntime, in
the same minutes.

  zoo_vs_onnxruntime.py [--kiln build/tools/kiln ...] [--zoo build/tests/zoo_real]
                        [--models resnet50,mobilenetv2,...] [--rounds 2] [--reps 10]

For each round and model: `kiln bench MODEL --backend cpu --reps N` for every binary given (the
whole step's median: one inference, batch 1), then onnxruntime's CPU provider with as many
intra-op threads as kiln's pool (OMP_NUM_THREADS, else every core), the median of 20 `run`s
after 5 warm-up, on inputs of the model's shapes (floats uniform in [0, 1), integer ids 1).
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


def kiln_ms(kiln, model, reps):
    out = subprocess.run([kiln, "bench", model, "--backend", "cpu", "--reps", str(reps)],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        if line.startswith("total"):
            fields = line.split()
            return float(fields[fields.index("ms") - 1])
    raise RuntimeError(f"no total in kiln bench's output for {model}:\n{out}")


def onnxruntime_ms(model, threads):
    import numpy as np
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
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
    args = ap.parse_args(argv)
    kilns = args.kiln or ["build/tools/kiln"]
    threads = int(os.environ.get("OMP_NUM_THREADS") or os.cpu_count())
    header = "| round | model | " + " | ".join(f"kiln {k}" for k in kilns) + f" | onnxruntime ({threads} threads) |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for r in range(1, args.rounds + 1):
        for name in args.models.split(","):
            model = os.path.join(args.zoo, name, "model.onnx")
            if not os.path.exists(model):
                sys.exit(f"error: {model} does not exist (ctest -R model_zoo_real_generate writes the zoo)")
            cells = [f"{kiln_ms(k, model, args.reps):.1f}" for k in kilns]
            print(f"| {r} | {name} | " + " | ".join(cells) + f" | {onnxruntime_ms(model, threads):.1f} |", flush=True)


if __name__ == "__main__":
    main()
