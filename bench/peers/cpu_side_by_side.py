#!/usr/bin/env python3
"""The CPU side by side: kiln's cpu backend, jax.jit (XLA:CPU) and torch.compile (Inductor's C++
backend) on this host, in one run, over the `cpu` group of cases.py.

  cpu_side_by_side.py [--kiln build/tools/kiln] [--frameworks jax,torch] [--reps 20] [--keep DIR]
                      [-o OUT.md]

Writes each case's kiln program (cases.py --emit-kiln), runs `kiln bench FILE --backend cpu --json`
on it, runs harness.py --group cpu --allow-cpu for each framework that imports (a missing one is
reported and left out), and joins the records with compare.py --kiln-backend cpu into Markdown:
kiln's time and each peer's, the ratios, GB/s against the same run's memcpy and TFLOP/s. The
library GEMM peak of the same run is the matmul_1024x1024x1024_f32 case (kiln hands it to oneDNN).
The training steps (train_cases.cpu_train_cases: one Adam step of a 784 -> 1024 -> 1024 -> 10 MLP,
batch 256, and of a CNN on 3x32x32 images, batch 32) go through train_kiln.py on kiln's side,
checked against NumPy first.
"""
import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
KILN_WARMUP_RUNS = 50  # untimed `kiln bench` runs per case (main() says why)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kiln", default=os.path.join(REPO, "build/tools/kiln"))
    ap.add_argument("--frameworks", default="jax,torch", help="peers to run where installed (default jax,torch)")
    ap.add_argument("--reps", type=int, default=20, help="kiln bench timed runs per case (default 20)")
    ap.add_argument("--keep", help="keep the .kiln files and JSON lines in this folder")
    ap.add_argument("-o", "--out", help="write the Markdown here (default stdout)")
    a = ap.parse_args(argv)
    import cases
    work = a.keep or tempfile.mkdtemp(prefix="kiln-cpu-side-by-side-")
    os.makedirs(work, exist_ok=True)
    kiln_lines = os.path.join(work, "kiln.jsonl")
    peer_lines = os.path.join(work, "peers.jsonl")
    for path in (kiln_lines, peer_lines):
        open(path, "w").close()
    for case in cases.cpu_cases():
        path = os.path.join(work, case.name + ".kiln")
        with open(path, "w") as f:
            f.write(case.kiln_text)
        # As many untimed runs as the peers' harness makes before the middle of its samples (3 + 3,
        # then 25 samples of calls batched to 2 ms): with kiln's default 5, a column mean whose
        # 16 MiB input the L3 keeps from run to run was timed before the cache held it (0.63 ms,
        # 0.38 warm; jax.jit 0.39-0.43).
        out = subprocess.run([a.kiln, "bench", path, "--backend", "cpu", "--json", "--reps", str(a.reps),
                              "--warmup", str(KILN_WARMUP_RUNS)], capture_output=True, text=True)
        if out.returncode != 0:
            print(f"kiln bench {case.name} failed: {out.stderr.strip()}", file=sys.stderr)
            continue
        with open(kiln_lines, "a") as f:
            f.write(out.stdout)
        print(f"kiln: {case.name} done", file=sys.stderr)
    # kiln's side of the training steps: train_kiln.py builds, checks and times each step.
    import train_cases
    for case in train_cases.cpu_train_cases():
        out = subprocess.run([sys.executable, os.path.join(HERE, "train_kiln.py"), "--kiln", a.kiln, "--backend", "cpu",
                              "--cases", case.name, "--work", work, "--out", kiln_lines, "--reps", str(a.reps)],
                             stdout=subprocess.DEVNULL)
        print(f"kiln: {case.name} {'done' if out.returncode == 0 else 'failed'}", file=sys.stderr)
    for framework in a.frameworks.split(","):
        module = {"jax": "jax", "torch": "torch"}.get(framework)  # jax's training step also needs optax
        if not module or importlib.util.find_spec(module) is None:
            print(f"{framework}: not installed here, left out (pip install {module})", file=sys.stderr)
            continue
        subprocess.run([sys.executable, os.path.join(HERE, "harness.py"), "--framework", framework, "--group", "cpu",
                        "--allow-cpu", "--copy-mib", "256", "--out", peer_lines], stdout=subprocess.DEVNULL, check=False)
    cmd = [sys.executable, os.path.join(REPO, "bench/compare.py"), "--kiln", kiln_lines, "--peers", peer_lines,
           "--kiln-backend", "cpu"]
    if a.out:
        cmd += ["-o", a.out]
    return subprocess.run(cmd).returncode


if __name__ == "__main__":
    sys.exit(main())
