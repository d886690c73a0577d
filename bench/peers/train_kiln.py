#!/usr/bin/env python3
"""kiln's side of the training-step benchmark (train_cases.py): for each case, writes the loss
function and the step's inputs as .npy files, has `kiln train --print-step` build the step function
(forward + gradient + Adam update, the one kiln train compiles), checks one step run by `kiln run`
against the NumPy reference (train_reference.py), and times the step with `kiln bench --json`.

  train_kiln.py --kiln PATH [--backend cpu|cuda] [--cases A,B] [--work DIR] [--out FILE]
                [--reps N] [--warmup N] [--no-check]

Prints kiln bench's JSON lines (and appends them to --out) with the check added to the total line
("check", "rel_err", "check_detail"), so bench/compare.py joins them with the peers' records as it
does for every case: the step file is written as WORK/<case>.kiln, so kiln bench names it <case>.
A case that fails prints a line saying why on stderr, and the run goes on (exit 1 at the end).

kiln bench runs the step on the same inputs every time (it does not carry the new parameters into
the next run, and so does not donate them): where a result is written changes no byte moved, so
the step time is that of a training loop's step.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cases  # noqa: E402
import train_cases  # noqa: E402


def kiln_cmd(kiln, *args, timeout=600):
    r = subprocess.run([kiln, *args], capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"kiln {args[0]} exited {r.returncode}: {(r.stderr or r.stdout).strip()[-600:]}")
    return r.stdout


def build_step(case, kiln, work):
    """Writes WORK/<case>/loss.kiln and the batch (x.npy, y.npy), and WORK/<case>.kiln: the step
    `kiln train --print-step` builds, checked to have docs/training.md's layout. Returns its path."""
    import numpy as np
    d = os.path.join(work, case.name)
    os.makedirs(d, exist_ok=True)
    loss = os.path.join(d, "loss.kiln")
    with open(loss, "w") as f:
        f.write(case.kiln_text)
    inputs = train_cases.make_train_inputs(case)
    for name in ("x", "y"):
        np.save(os.path.join(d, f"{name}.npy"), inputs[name])
    step = os.path.join(work, f"{case.name}.kiln")
    kiln_cmd(kiln, "train", loss, "--params", ",".join(case.param_names),
             "--data", f"x={os.path.join(d, 'x.npy')},y={os.path.join(d, 'y.npy')}", "--batch", str(case.batch),
             "--optimizer", "adam", "--print-step", "-o", step)
    with open(step) as f:
        got = cases.signature(f.read())
    want = ([(t.name, t.shape, t.dtype) for t in case.params], [(t.shape, t.dtype) for t in case.outputs])
    have = ([(t.name, t.shape, t.dtype) for t in got[0]], [(t.shape, t.dtype) for t in got[1]])
    if have != want:
        raise RuntimeError(f"{case.name}: kiln train --print-step's signature {have} is not docs/training.md's "
                           f"step layout {want}")
    return step


def write_inputs(case, work):
    """Every step input as WORK/<case>/NAME.npy. Returns (["--input", "NAME=PATH", ...], the inputs)."""
    import numpy as np
    inputs = train_cases.make_train_inputs(case)
    flags = []
    for name, value in inputs.items():
        path = os.path.join(work, case.name, f"{name}.npy")
        np.save(path, value)
        flags += ["--input", f"{name}={path}"]
    return flags, inputs


def run_step(kiln, step, flags, backend, out_dir):
    """One step through `kiln run`: {result name: array} by train_cases.TrainCase.outputs' names."""
    import numpy as np
    kiln_cmd(kiln, "run", step, "--backend", backend, "--out", out_dir, *flags)
    with open(step) as f:
        n = len(cases.signature(f.read())[1])
    return [np.load(os.path.join(out_dir, f"result_{i}.npy")) for i in range(n)]


def check(case, kiln, step, flags, inputs, backend, work):
    """(ok, rel err, detail) of one kiln step against the NumPy reference."""
    from train_reference import check_step, reference_step
    results = run_step(kiln, step, flags, backend, os.path.join(work, case.name, f"out_{backend}"))
    got = {t.name: r for t, r in zip(case.outputs, results)}
    return check_step(case, got, reference_step(case, inputs))


def bench(case, kiln, step, flags, backend, reps, warmup, checked):
    lines = kiln_cmd(kiln, "bench", step, "--backend", backend, "--json", "--reps", str(reps), "--warmup",
                     str(warmup), *flags).splitlines()
    records = [json.loads(line) for line in lines if line.startswith("{")]
    for r in records:
        if r.get("kernel") == "total" and checked is not None:
            ok, err, detail = checked
            r.update(check="ok" if ok else "FAIL", rel_err=err, check_detail=detail)
    return records


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kiln", required=True, help="the kiln binary (or a script that runs it)")
    ap.add_argument("--backend", default="cuda", help="cpu or cuda (default cuda)")
    ap.add_argument("--cases", help="comma-separated training cases (default: all of train_cases.py)")
    ap.add_argument("--work", help="folder for the step files and inputs (default: a temporary one)")
    ap.add_argument("--out", help="also append the JSON lines to this file")
    ap.add_argument("--reps", type=int, default=50, help="kiln bench --reps (default 50)")
    ap.add_argument("--warmup", type=int, default=5, help="kiln bench --warmup (default 5)")
    ap.add_argument("--no-check", dest="check", action="store_false", help="skip the check against NumPy")
    args = ap.parse_args(argv)
    known = {c.name: c for c in train_cases.train_cases() + train_cases.cpu_train_cases()}
    names = args.cases.split(",") if args.cases else list(known)
    unknown = [n for n in names if n not in known]
    if unknown:
        ap.error(f"unknown training case(s) {', '.join(unknown)}; known: {', '.join(known)}")
    work = args.work or tempfile.mkdtemp(prefix="kiln-train-bench-")
    failed = 0
    for name in names:
        case = known[name]
        try:
            step = build_step(case, args.kiln, work)
            flags, inputs = write_inputs(case, work)
            checked = check(case, args.kiln, step, flags, inputs, args.backend, work) if args.check else None
            if checked and not checked[0]:
                failed += 1
                print(f"train_kiln: {name}: check FAILED: {checked[2]}", file=sys.stderr)
            for r in bench(case, args.kiln, step, flags, args.backend, args.reps, args.warmup, checked):
                line = json.dumps(r)
                print(line, flush=True)
                if args.out:
                    with open(args.out, "a") as f:
                        f.write(line + "\n")
        except Exception as e:  # noqa: BLE001: one failing case must not stop the others
            failed += 1
            print(f"train_kiln: {name}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
