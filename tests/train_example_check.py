#!/usr/bin/env python3
"""Trains an example classifier of examples/train/ with `kiln train` on the CPU and checks that it
learns: the loss of the last 10 steps (mean) is at least 10x below the first step's, and their mean
accuracy reaches the level docs/training.md states (MLP 0.95, CNN 0.90). With --compare-backend, the
first --compare-steps steps also run on that backend (cuda: the GPU simulator in ctest) and their
losses must equal the CPU's within float tolerance."""
import argparse
import csv
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = {
    # name: (dataset kind, samples, model, params, batch, steps, optimizer, lr, accuracy threshold)
    "mlp": ("blobs", 600, "mlp_classifier.kiln", "w1,b1,w2,b2,w3,b3", 64, 300, "adam", "0.01", 0.95),
    "cnn": ("bars", 400, "cnn_classifier.kiln", "k1,c1,k2,c2,w,b", 32, 100, "adam", "0.01", 0.90),
}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kiln", required=True)
    p.add_argument("--example", choices=sorted(EXAMPLES), required=True)
    p.add_argument("--workdir", required=True)
    p.add_argument("--compare-backend", help="also train on this backend and compare its losses with the CPU's")
    p.add_argument("--compare-steps", type=int, default=20)
    a = p.parse_args()
    kind, n, model, params, batch, steps, opt, lr, threshold = EXAMPLES[a.example]
    data = os.path.join(a.workdir, "data")
    subprocess.run([sys.executable, os.path.join(ROOT, "examples/train/make_dataset.py"), kind, data, "--n", str(n)],
                   check=True)

    def train(backend, n, log):
        subprocess.run([a.kiln, "train", os.path.join(ROOT, "examples/train", model), "--backend", backend,
                        "--params", params, "--data", "x=%s/x.npy,y=%s/y.npy" % (data, data), "--batch", str(batch),
                        "--steps", str(n), "--optimizer", opt, "--lr", lr, "--log", log], check=True)
        with open(log) as f:
            return list(csv.DictReader(f))

    rows = train("cpu", steps, os.path.join(a.workdir, "log.csv"))
    if a.compare_backend:
        other = train(a.compare_backend, a.compare_steps, os.path.join(a.workdir, a.compare_backend + ".csv"))
        assert len(other) == a.compare_steps, "expected %d log rows, got %d" % (a.compare_steps, len(other))
        worst = 0.0
        for cpu_row, row in zip(rows, other):
            want, got = float(cpu_row["loss"]), float(row["loss"])
            worst = max(worst, abs(got - want) / max(abs(want), 1e-3))
            if abs(got - want) > 1e-4 * max(abs(want), 1e-3):
                sys.exit("%s: step %s loss on %s is %.9g, on cpu %.9g" % (a.example, row["step"], a.compare_backend, got, want))
        print("%s: %d steps on %s match the cpu's losses (worst relative difference %.2g)" %
              (a.example, a.compare_steps, a.compare_backend, worst))
    assert len(rows) == steps, "expected %d log rows, got %d" % (steps, len(rows))
    first = float(rows[0]["loss"])
    last = sum(float(r["loss"]) for r in rows[-10:]) / 10
    acc = sum(float(r["accuracy"]) for r in rows[-10:]) / 10
    print("%s: loss %.4g -> %.4g (%.1fx), accuracy %.3f (needs %.2f)" % (a.example, first, last, first / last, acc, threshold))
    if first / last < 10:
        sys.exit("%s: the loss dropped only %.1fx (needs 10x)" % (a.example, first / last))
    if acc < threshold:
        sys.exit("%s: accuracy %.3f is below %.2f" % (a.example, acc, threshold))


if __name__ == "__main__":
    main()
