#!/usr/bin/env python3
"""The simulator's census: every PTX kiln's code generator emits must load in gpusim.

Compiles every example and lit .kiln file, and the ONNX tier-1/2 node tests, to PTX with
`kiln compile --emit ptx` at sm_80 (IEEE) and sm_90 (--fast-math), then runs gpusim-ptxcheck on all
of it: a form the simulator's decoder does not know fails this test with the file and line, so
codegen cannot outrun the simulator. Inputs kiln itself refuses (the diagnostics tests' broken
files) are counted and listed, not hidden.
"""
import argparse
import concurrent.futures
import os
import subprocess
import sys

CONFIGS = [("sm_80", []), ("sm_90", ["--fast-math"])]


def kiln_files(root):
    out = []
    for top in ("examples", os.path.join("tests", "lit")):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            out += [os.path.join(dirpath, n) for n in sorted(names) if n.endswith(".kiln")]
    return sorted(out)


def onnx_models(node_dir, tier_files):
    out = []
    for tier in tier_files:
        with open(tier) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 2 and not line.startswith("#"):
                    model = os.path.join(node_dir, parts[1], "model.onnx")
                    if os.path.exists(model):
                        out.append(model)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--ptxcheck", required=True)
    ap.add_argument("--root", required=True, help="kiln's source folder")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--onnx-node-dir")
    ap.add_argument("--tier", action="append", default=[])
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()

    inputs = kiln_files(args.root)
    if args.onnx_node_dir:
        inputs += onnx_models(args.onnx_node_dir, args.tier)
    os.makedirs(args.workdir, exist_ok=True)
    env = dict(os.environ, KILN_CACHE_DIR=os.path.join(args.workdir, "cache"))

    jobs = []
    for i, path in enumerate(inputs):
        for arch, flags in CONFIGS:
            ptx = os.path.join(args.workdir, f"{i:04d}_{arch}.ptx")
            jobs.append((path, arch, flags, ptx))

    def compile_one(job):
        path, arch, flags, ptx = job
        r = subprocess.run([args.kiln, "compile", path, "--target", "cuda", "--gpu-arch", arch, *flags,
                            "--emit", "ptx", "-o", ptx], capture_output=True, text=True, env=env)
        return job, r.returncode, r.stderr.strip().splitlines()[:1]

    refused, produced = [], []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for (path, arch, flags, ptx), rc, err in pool.map(compile_one, jobs):
            if rc == 0 and os.path.exists(ptx):
                produced.append((path, arch, ptx))
            else:
                refused.append(f"{os.path.relpath(path, args.root) if path.startswith(args.root) else path} "
                               f"({arch}): {err[0] if err else 'exit ' + str(rc)}")

    failed = 0
    by_ptx = {ptx: (path, arch) for path, arch, ptx in produced}
    ptx_files = list(by_ptx)
    for start in range(0, len(ptx_files), 200):
        batch = ptx_files[start:start + 200]
        r = subprocess.run([args.ptxcheck, *batch], capture_output=True, text=True)
        for line in r.stderr.splitlines():
            ptx, _, message = line.partition(": ")
            source = by_ptx.get(ptx)
            print(f"FAIL {source[0]} ({source[1]}): {message}" if source else line)
            failed += 1
        if r.returncode not in (0, 1):
            print(f"gpusim-ptxcheck exited {r.returncode}: {r.stdout}{r.stderr}")
            return 1

    print(f"census: {len(inputs)} inputs x {len(CONFIGS)} configurations: {len(produced)} PTX files, "
          f"{failed} not loadable by the simulator; {len(refused)} compiles refused by kiln (listed below)")
    for line in refused:
        print("  refused: " + line)
    return 1 if failed or not produced else 0


if __name__ == "__main__":
    sys.exit(main())
