#!/usr/bin/env python3
"""The GPU kernel goals on the simulator: every bench/gpusim case through the H100 model.

  bench/gpusim/kernels.py [--kiln PATH] [--driver PATH] [--cases a,b] [--json]

Runs `kiln bench CASE.kiln --backend cuda --json` on the GPU simulator (KILN_CUDA_DRIVER, by
default build/gpusim/libkiln_gpusim.so) for each .kiln file here, and prints a markdown table,
kernel by kernel: bytes read, sector efficiency, shared-memory wavefronts per request, blocks, SM
coverage, achieved occupancy, the modelled time, the roofline bound and their ratio. Kernels that
read 4 MB or more are checked against the goals of docs/gpu-performance.md: sector efficiency at
least 0.9, SM coverage 1.0, at most 1.1 wavefronts per request, modelled time within 1.25x of the
roofline; cases whose file says "Compute-bound" in its opening comment are listed, not checked (the
goals are for memory-bound kernels). Everything here is simulated or modelled; nothing is a
measured time.
"""
import argparse
import glob
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
GOALS = {"sector_efficiency": 0.9, "sm_coverage": 1.0, "bank_conflicts_per_request": 1.1, "ratio": 1.25}
CHECKED_BYTES = 4 << 20


def misses(k):
    """The goals kernel `k` misses (empty when it meets them all)."""
    out = []
    if k["sector_efficiency"] < GOALS["sector_efficiency"]:
        out.append("sectors")
    if k["sm_coverage"] < GOALS["sm_coverage"]:
        out.append("SMs")
    if k["bank_conflicts_per_request"] > GOALS["bank_conflicts_per_request"]:
        out.append("banks")
    if k["roofline_us"] > 0 and k["modelled_us"] / k["roofline_us"] > GOALS["ratio"]:
        out.append("time")
    return out


def run_case(kiln, path, env):
    proc = subprocess.run([kiln, "bench", path, "--backend", "cuda", "--json"], env=env, capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{path}: kiln bench failed:\n{proc.stderr}")
    kernels = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return [k for k in kernels if k["name"] != "total"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--kiln", default=os.path.join(REPO, "build", "tools", "kiln"))
    p.add_argument("--driver", default=os.path.join(REPO, "build", "gpusim", "libkiln_gpusim.so"))
    p.add_argument("--cases", help="comma-separated case names (default: every .kiln file here)")
    p.add_argument("--json", action="store_true", help="one JSON object per kernel, with its case, instead")
    args = p.parse_args()
    env = dict(os.environ, KILN_CUDA_DRIVER=args.driver)
    paths = sorted(glob.glob(os.path.join(HERE, "*.kiln")))
    if args.cases:
        wanted = args.cases.split(",")
        paths = [q for q in paths if os.path.splitext(os.path.basename(q))[0] in wanted]
    print("| case | kernel | read | sector eff | wavefronts/req | blocks | SMs | occupancy | modelled us | "
          "roofline us | ratio | goals |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    failed = 0
    for path in paths:
        case = os.path.splitext(os.path.basename(path))[0]
        with open(path) as f:
            compute_bound = "Compute-bound" in "".join(line for line in f if line.startswith("#"))
        for k in run_case(args.kiln, path, env):
            if args.json:
                print(json.dumps(dict(k, case=case)))
                continue
            checked = k["bytes_read"] >= CHECKED_BYTES and not compute_bound
            missed = misses(k) if checked else []
            failed += bool(missed)
            verdict = ("miss: " + ", ".join(missed) if missed else "met") if checked else (
                "(compute-bound)" if compute_bound else "(under 4 MB)")
            ratio = f"{k['modelled_us'] / k['roofline_us']:.2f}x" if k["roofline_us"] > 0 else "-"
            print(f"| {case} | {k['name']} | {k['bytes_read'] / 1e6:.1f} MB | {k['sector_efficiency']:.2f} | "
                  f"{k['bank_conflicts_per_request']:.2f} | {k['blocks']} | {k['sm_coverage']:.2f} | "
                  f"{k['achieved_occupancy']:.2f} | {k['modelled_us']:.1f} | {k['roofline_us']:.1f} | "
                  f"{ratio} | {verdict} |")
    if not args.json:
        print(f"\n{failed} memory-bound kernel(s) reading 4 MB or more miss a goal (simulated counters, "
              "modelled times)")


if __name__ == "__main__":
    sys.exit(main())
