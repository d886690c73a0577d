#!/usr/bin/env python3
"""The H100/H200 model against times measured on a real GPU: how wrong the model is.

  bench/gpusim/model_error.py [--kiln PATH] [--driver PATH] [--measured FILE] [--model h200] [--cases a,b]

For each case of FILE (default h200_measured.json: kiln's step times from the H200 run in
bench/RESULTS.md), generates the case's .kiln text (bench/peers/cases.py), runs
`kiln bench --backend cuda --json --model MODEL` on the GPU simulator and prints the step's
modelled time beside the measured one, their ratio, and what bounds each kernel in the model.
The comparison means something only for the kernels that were measured: run it with a kiln built
at the measured commit (FILE's kiln_commit) to find the model's error; with a later kiln it shows
what the model predicts for the new kernels, to be checked on the next GPU. Simulated counters and
modelled times, set against recorded measurements; nothing here is timed.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "bench", "peers"))
import cases  # noqa: E402  (bench/peers/cases.py: the generated cases)


def modelled(kiln, driver, text, model):
    """The step's modelled and roofline microseconds, and its kernels' JSON objects, on the simulator."""
    with tempfile.NamedTemporaryFile("w", suffix=".kiln", delete=False) as f:
        f.write(text)
        path = f.name
    try:
        proc = subprocess.run([kiln, "bench", path, "--backend", "cuda", "--json", "--model", model],
                              env=dict(os.environ, KILN_CUDA_DRIVER=driver), capture_output=True, text=True)
    finally:
        os.unlink(path)
    if proc.returncode != 0:
        raise SystemExit(f"kiln bench failed:\n{proc.stderr}")
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    total = next(r for r in rows if r["name"] == "total")
    return total["modelled_us"], total["roofline_us"], [r for r in rows if r["name"] != "total"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--kiln", default=os.path.join(REPO, "build", "tools", "kiln"))
    p.add_argument("--driver", default=os.path.join(REPO, "build", "gpusim", "libkiln_gpusim.so"))
    p.add_argument("--measured", default=os.path.join(HERE, "h200_measured.json"))
    p.add_argument("--model", default="h200")
    p.add_argument("--cases", help="comma-separated case names (default: every measured case)")
    args = p.parse_args()
    with open(args.measured) as f:
        measured = json.load(f)
    known = {c.name: c for c in cases.large_cases() + cases.cpu_cases()}
    names = args.cases.split(",") if args.cases else list(measured["kiln_ms"])
    print(f"Measured: {measured['machine']}, kiln {measured['kiln_commit']}, {measured['date']}. "
          f"Modelled: `kiln bench --model {args.model}` on the GPU simulator.\n")
    print("| case | measured us | modelled us | roofline us | modelled / measured | kernels: modelled us |")
    print("|---|---:|---:|---:|---:|---|")
    ratios = []
    for name in names:
        if name not in known or name not in measured["kiln_ms"]:
            raise SystemExit(f"{name}: not a measured case of bench/peers/cases.py")
        got = measured["kiln_ms"][name] * 1000
        model_us, roofline_us, kernels = modelled(args.kiln, args.driver, known[name].kiln_text, args.model)
        ratios.append(model_us / got)
        detail = ", ".join(f"{k['name']} {k['modelled_us']:.1f}" for k in kernels)
        print(f"| {name} | {got:.1f} | {model_us:.1f} | {roofline_us:.1f} | {model_us / got:.2f} | {detail} |")
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"\nmodelled / measured: geometric mean {geo:.2f}, from {min(ratios):.2f} to {max(ratios):.2f} "
          f"over {len(ratios)} cases (1.00 = exact; below 1 the model is optimistic)")


if __name__ == "__main__":
    sys.exit(main())
