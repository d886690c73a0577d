#!/usr/bin/env python3
"""Synthetic, learnable datasets for kiln's training examples, as .npy files (standard library only).

  make_dataset.py blobs  OUTDIR [--n N] [--seed S]   # OUTDIR/x.npy f32[N,2], OUTDIR/y.npy i32[N]: 3 spirals' arms
  make_dataset.py bars   OUTDIR [--n N] [--seed S]   # OUTDIR/x.npy f32[N,1,8,8], OUTDIR/y.npy i32[N]: bar orientation

blobs: points on three interleaved spiral arms (class = arm) with Gaussian noise; an MLP separates them.
bars: 8x8 images with one noisy bar, horizontal, vertical, or either diagonal (4 classes); a small CNN learns them.
"""
import argparse
import math
import os
import random
import struct


def write_npy(path, descr, shape, values, fmt):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, "".join("%d, " % d for d in shape) if len(shape) == 1 else ", ".join(str(d) for d in shape))
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * pad + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(struct.pack("<%d%s" % (len(values), fmt), *values))


def spirals(n, rng):
    xs, ys = [], []
    for i in range(n):
        label = i % 3
        t = rng.uniform(0.15, 1.0)
        angle = 2 * math.pi * label / 3 + 3.0 * t
        xs += [t * math.cos(angle) + rng.gauss(0, 0.03), t * math.sin(angle) + rng.gauss(0, 0.03)]
        ys.append(label)
    return xs, ys


def bars(n, rng):
    xs, ys = [], []
    for i in range(n):
        label = i % 4
        img = [[rng.gauss(0, 0.1) for _ in range(8)] for _ in range(8)]
        k = rng.randrange(1, 7)
        for j in range(8):
            r, c = [(k, j), (j, k), (j, j), (j, 7 - j)][label]
            img[r][c] += 1.0
        xs += [v for row in img for v in row]
        ys.append(label)
    return xs, ys


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("kind", choices=["blobs", "bars"])
    p.add_argument("outdir")
    p.add_argument("--n", type=int, default=600)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    rng = random.Random(a.seed)
    os.makedirs(a.outdir, exist_ok=True)
    if a.kind == "blobs":
        xs, ys = spirals(a.n, rng)
        write_npy(os.path.join(a.outdir, "x.npy"), "<f4", (a.n, 2), xs, "f")
    else:
        xs, ys = bars(a.n, rng)
        write_npy(os.path.join(a.outdir, "x.npy"), "<f4", (a.n, 1, 8, 8), xs, "f")
    write_npy(os.path.join(a.outdir, "y.npy"), "<i4", (a.n,), ys, "i")


if __name__ == "__main__":
    main()
