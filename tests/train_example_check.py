#!/usr/bin/env python3
"""Trains an example classifier of examples/train/ with `kiln train` on the CPU and checks that it
learns: the loss of the last 10 steps (mean) is at least 10x below the first step's, and their mean
accuracy reaches the level docs/training.md states (MLP 0.95, CNN 0.90)."""
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
    a = p.parse_args()
    kind, n, model, params, batch, steps, opt, lr, threshold = EXAMPLES[a.example]
    data = os.path.join(a.workdir, "data")
    subprocess.run([sys.executable, os.path.join(ROOT, "examples/train/make_dataset.py"), kind, data, "--n", str(n)],
                   check=True)
    log = os.path.join(a.workdir, "log.csv")
    subprocess.run([a.kiln, "train", os.path.join(ROOT, "examples/train", model), "--backend", "cpu",
                    "--params", params, "--data", "x=%s/x.npy,y=%s/y.npy" % (data, data), "--batch", str(batch),
                    "--steps", str(steps), "--optimizer", opt, "--lr", lr, "--log", log], check=True)
    with open(log) as f:
        rows = list(csv.DictReader(f))
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
