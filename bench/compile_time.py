#!/usr/bin/env python3
"""Compile-time benchmark over synthetic graphs: time per op from 100 to 100k ops.

  compile_time.py [--kiln PATH] [--target cpu|cuda] [--emit none|asm|ptx] [--shapes chain,wide,residual]
                  [--sizes 100,1000,10000,100000] [--timeout S] [--json] [--check]
                  [--min-stage-ms MS] [--keep DIR]

For each graph shape and size it writes a .kiln file with about that many op statements, runs
`kiln compile FILE --target T --emit none --time-passes --json` (the compile a run does: one
object or PTX module per distinct kernel, on every core; --emit asm or ptx times the one-module,
one-thread compile that prints code) with KILN_CACHE_DIR=off (so nothing comes from the compile
cache) and prints a table: ops, distinct kernels, the compiler's total ms, the process'
wall ms and max RSS, microseconds per op, peak MB and the three slowest stages. Then, per
shape, the per-op time at the largest size that finished over the per-op time at 1k ops,
against the goal (at most 2x from 1k to 100k ops), and the stages whose own per-op time grows
more than 2x over that range (the superlinear ones).

Shapes:
  chain     one long elementwise chain over f32[64,64] (add a parameter, mul by a constant,
            tanh, exp, neg, max, ...): every op reads the previous one, so CSE merges nothing.
  wide      many short independent branches from the same inputs, each with its own scalar
            constant, summed by a balanced tree of adds into one result.
  residual  repeated blocks x = norm(x + relu(x @ W + b)) over f32[8,64], the norm written out
            as reduce_mean / sub / mul / rsqrt (a layer norm without scale and bias).

Ops are counted as the op statements of the function (constants included, `return` not).
With --json, one JSON object per compile goes to stdout (all stage data, for bench/RESULTS.md)
and the table to stderr. A compile that fails or runs past --timeout is reported as such and
the benchmark goes on.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAPES = ("chain", "wide", "residual")
DEFAULT_SIZES = (100, 1000, 10000, 100000)
GOAL_RATIO = 2.0   # per-op time may grow at most this much from 1k ops to the largest size
BASE_SIZE = 1000   # the size the ratios are taken against

# ---------------------------------------------------------------------------------------------
# Graph generators. Each returns (kiln text, number of op statements).


class Body:
    """Collects the op statements of one function and names their results %v0, %v1, ..."""

    def __init__(self):
        self.lines = []

    def op(self, rhs):
        name = f"%v{len(self.lines)}"
        self.lines.append(f"  {name} = {rhs}")
        return name

    def const(self, value):
        """A scalar f32 constant; callers pass distinct values so CSE cannot merge them."""
        return self.op(f"constant {value:.9g} : f32[]")

    def count(self):
        return len(self.lines)

    def function(self, params, result_type, result):
        head = f"func @main({', '.join(params)}) -> {result_type} {{"
        return "\n".join([head, *self.lines, f"  return {result}", "}", ""])


def distinct(i, base=0.5, step=1e-6):
    """The i-th of a run of distinct constants near `base` (never exactly 0 or 1, so
    canonicalize finds no identity such as x*1 or x+0 to rewrite)."""
    return base + step * (i + 1)


def gen_chain(n):
    """A chain of n elementwise ops over f32[64,64]. The cycle below never puts an op right
    after its inverse (neg after neg, log after exp), so no identity folds part of it away."""
    b = Body()
    cur = "%x"
    step = 0
    while b.count() < n:
        kind = step % 8
        if kind == 0:
            cur = b.op(f"add {cur}, %p0")
        elif kind == 1 and b.count() + 2 <= n:
            c = b.const(distinct(step))
            cur = b.op(f"mul {cur}, {c}")
        elif kind == 2:
            cur = b.op(f"tanh {cur}")
        elif kind == 3:
            cur = b.op(f"exp {cur}")
        elif kind == 4:
            cur = b.op(f"neg {cur}")
        elif kind == 5 and b.count() + 2 <= n:
            c = b.const(distinct(step, base=-0.25))
            cur = b.op(f"max {cur}, {c}")
        elif kind == 6:
            cur = b.op(f"sub {cur}, %p1")
        else:
            cur = b.op(f"sigmoid {cur}")
        step += 1
    t = "f32[64,64]"
    return b.function([f"%x: {t}", f"%p0: {t}", f"%p1: {t}"], t, cur), b.count()


def add_tree(b, values):
    """Sums `values` with a balanced tree of adds (len(values) - 1 ops); returns the root."""
    while len(values) > 1:
        paired = [b.op(f"add {values[i]}, {values[i + 1]}") for i in range(0, len(values) - 1, 2)]
        if len(values) % 2:
            paired.append(values[-1])
        values = paired
    return values[0]


def gen_wide(n):
    """About n ops: branches of 4 ops (constant, mul %x by it, tanh, add %y) all reading the
    same inputs, then a balanced tree of adds: 5 ops per branch, less one."""
    b = Body()
    branches = []
    for i in range(max(1, (n + 1) // 5)):
        c = b.const(distinct(i))
        t = b.op(f"mul %x, {c}")
        t = b.op(f"tanh {t}")
        branches.append(b.op(f"add {t}, %y"))
    root = add_tree(b, branches)
    t = "f32[64,64]"
    return b.function([f"%x: {t}", f"%y: {t}"], t, root), b.count()


RESIDUAL_WEIGHTS = 4  # blocks cycle over this many weight parameters (keeps the text small)


def residual_block(b, x, i):
    """x + relu(x @ W + b), then normalised over the last axis: 12 ops."""
    w = i % RESIDUAL_WEIGHTS
    h = b.op(f"matmul {x}, %w{w}")
    h = b.op(f"add {h}, %b{w}")
    h = b.op(f"relu {h}")
    x = b.op(f"add {x}, {h}")
    mean = b.op(f"reduce_mean {x} {{axes = [-1], keepdims = true}}")
    d = b.op(f"sub {x}, {mean}")
    sq = b.op(f"mul {d}, {d}")
    var = b.op(f"reduce_mean {sq} {{axes = [-1], keepdims = true}}")
    eps = b.const(distinct(i, base=1e-5, step=1e-9))
    var = b.op(f"add {var}, {eps}")
    inv = b.op(f"rsqrt {var}")
    return b.op(f"mul {d}, {inv}")


def gen_residual(n):
    """ceil(n / 12) residual blocks over f32[8,64] (n rounded up to a whole block)."""
    b = Body()
    x = "%x"
    for i in range(max(1, -(-n // 12))):
        x = residual_block(b, x, i)
    params = ["%x: f32[8,64]"]
    params += [f"%w{k}: f32[64,64]" for k in range(RESIDUAL_WEIGHTS)]
    params += [f"%b{k}: f32[64]" for k in range(RESIDUAL_WEIGHTS)]
    return b.function(params, "f32[8,64]", x), b.count()


GENERATORS = {"chain": gen_chain, "wide": gen_wide, "residual": gen_residual}

# ---------------------------------------------------------------------------------------------
# Running one compile.


def run_child(cmd, env, timeout_s, stdout_path, stderr_path):
    """Runs cmd with stdout/stderr to files; returns (exit status or None on timeout, wall s,
    max RSS MB of that process alone). os.wait4 gives the child's own rusage; a timer kills its
    process group when the timeout passes."""
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, start_new_session=True)
        timed_out = threading.Event()

        def kill():
            timed_out.set()
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout_s, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # already reaped: keep Popen quiet
    rss_mb = usage.ru_maxrss / 1024.0  # kilobytes on Linux
    return (None if timed_out.is_set() else proc.returncode), wall, rss_mb


def count_kernels(code_path, target):
    """Kernels are functions named k<N>_<what>: `.globl kN_` in host asm, `.entry kN_` in PTX."""
    pattern = re.compile(r"^\s*\.globl\s+k\d+_" if target == "cpu" else r"\.entry\s+k\d+_")
    try:
        with open(code_path, errors="replace") as f:
            return sum(1 for line in f if pattern.search(line))
    except OSError:
        return None


def compile_one(kiln, path, target, timeout_s, emit):
    """Compiles one file; returns a result dict (status ok, timeout or error; wall ms and max
    RSS always, the compiler's stages, total and kernel count when ok)."""
    base = os.path.splitext(path)[0]
    code = base + (".s" if target == "cpu" else ".ptx")
    cmd = [kiln, "compile", path, "--target", target, "--emit", emit, "--time-passes", "--json"]
    if emit != "none":
        cmd += ["-o", code]
    env = dict(os.environ, KILN_CACHE_DIR="off")
    rc, wall, rss = run_child(cmd, env, timeout_s, base + ".out", base + ".err")
    result = {"wall_ms": round(wall * 1e3, 3), "max_rss_mb": round(rss, 1)}
    if rc is None:
        return dict(result, status="timeout")
    if rc != 0:
        with open(base + ".err", errors="replace") as f:
            lines = f.read().strip().splitlines()
        return dict(result, status="error", rc=rc, message=lines[-1] if lines else "")
    try:
        with open(base + ".out") as f:
            report = json.load(f)
    except ValueError as e:
        return dict(result, status="error", rc=rc, message=f"no JSON report on stdout ({e})")
    counts = report.get("counts", {})
    kernels = counts.get("distinct kernels") if emit == "none" else count_kernels(code, target)
    return dict(result, status="ok", total_ms=report["total_ms"], stages=report["stages"],
                kernels=kernels, counts=counts)


def check_file(kiln, path):
    """`kiln check` on a generated file; returns the error text, or None when it is valid."""
    proc = subprocess.run([kiln, "check", path], capture_output=True, text=True)
    return None if proc.returncode == 0 else (proc.stderr.strip() or f"exit {proc.returncode}")

# ---------------------------------------------------------------------------------------------
# Reporting.


def stage_ms(result):
    """Milliseconds per stage name (summed, should a stage name appear more than once)."""
    totals = {}
    for stage in result.get("stages", []):
        totals[stage["name"]] = totals.get(stage["name"], 0.0) + stage["ms"]
    return totals


def slowest(result, k=3):
    top = sorted(stage_ms(result).items(), key=lambda kv: -kv[1])[:k]
    return ", ".join(f"{name} {ms:.0f}" if ms >= 10 else f"{name} {ms:.1f}" for name, ms in top)


ROW = "{:<9} {:>7} {:>7} {:>11} {:>11} {:>8} {:>8} {:>8}  {}"


def print_header(out):
    print(ROW.format("shape", "ops", "kernels", "total ms", "wall ms", "us/op", "peak MB",
                     "RSS MB", "slowest stages (ms)"), file=out)


def print_row(r, out):
    if r["status"] != "ok":
        what = {"timeout": f"TIMEOUT after {r['wall_ms'] / 1e3:.0f} s",
                "invalid": f"INVALID (kiln check): {r.get('message', '')}",
                "error": f"ERROR (exit {r.get('rc')}): {r.get('message', '')}"}[r["status"]]
        print(ROW.format(r["shape"], r["ops"], "-", "-", f"{r['wall_ms']:.1f}", "-", "-",
                         f"{r['max_rss_mb']:.0f}", what), file=out)
        return
    peak = max((s["peak_mb"] for s in r["stages"]), default=0.0)
    kernels = "?" if r["kernels"] is None else r["kernels"]
    print(ROW.format(r["shape"], r["ops"], kernels, f"{r['total_ms']:.1f}", f"{r['wall_ms']:.1f}",
                     f"{r['us_per_op']:.2f}", f"{peak:.0f}", f"{r['max_rss_mb']:.0f}", slowest(r)),
          file=out)


def summarize_shape(shape, results, min_stage_ms, out):
    """The goal line for one shape and its superlinear stages: per-op time at the largest size
    that finished over that at BASE_SIZE ops."""
    done = [r for r in results if r["status"] == "ok"]
    base = next((r for r in done if r["size"] == BASE_SIZE), None)
    big = max(done, key=lambda r: r["size"], default=None)
    unfinished = [str(r["size"]) for r in results if r["status"] != "ok"]
    note = f" (did not finish: {', '.join(unfinished)})" if unfinished else ""
    if base is None or big is None or big["size"] <= BASE_SIZE:
        print(f"{shape}: no ratio (needs {BASE_SIZE} ops and a larger size to finish){note}",
              file=out)
        return
    ratio = big["us_per_op"] / base["us_per_op"]
    verdict = "PASS" if ratio <= GOAL_RATIO and not unfinished else "FAIL"
    print(f"{shape}: per-op time {big['size']}/{BASE_SIZE} = {ratio:.2f}x "
          f"({base['us_per_op']:.2f} -> {big['us_per_op']:.2f} us/op): {verdict} "
          f"(goal <= {GOAL_RATIO:g}x){note}", file=out)
    # A stage's per-op ratio; stages that stay under min_stage_ms at the largest size are noise.
    small, large = stage_ms(base), stage_ms(big)
    grow = []
    for name, ms in large.items():
        if ms < min_stage_ms or small.get(name, 0.0) <= 0.0:
            continue
        r = (ms / big["ops"]) / (small[name] / base["ops"])
        if r > GOAL_RATIO:
            grow.append((r, name, small[name], ms))
    for r, name, ms_small, ms_large in sorted(grow, reverse=True):
        print(f"  superlinear: {name:<28} {r:8.1f}x per op  ({ms_small:.2f} ms at {base['ops']} "
              f"ops -> {ms_large:.0f} ms at {big['ops']} ops)", file=out)
    if not grow:
        print(f"  no stage grows more than {GOAL_RATIO:g}x per op", file=out)

# ---------------------------------------------------------------------------------------------


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--kiln", default=os.path.join(REPO, "build", "tools", "kiln"),
                   help="kiln binary (default: build/tools/kiln under the repo root)")
    p.add_argument("--target", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--emit", choices=("none", "asm", "ptx"), default="none",
                   help="none (default): the runtime's compile, each distinct kernel on its own and in "
                        "parallel; asm/ptx: the whole function as one module on one thread")
    p.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated: " + ", ".join(SHAPES))
    p.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)),
                   help="comma-separated op counts")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per compile (default 600)")
    p.add_argument("--json", action="store_true",
                   help="one JSON line per compile on stdout; the table goes to stderr")
    p.add_argument("--check", action="store_true", help="`kiln check` each generated file first")
    p.add_argument("--min-stage-ms", type=float, default=1.0,
                   help="ignore stages under this many ms at the largest size when looking for "
                        "superlinear ones (default 1)")
    p.add_argument("--keep", metavar="DIR", help="write the graphs and outputs here and keep them")
    args = p.parse_args()
    args.shapes = [s for s in args.shapes.split(",") if s]
    bad = [s for s in args.shapes if s not in GENERATORS]
    if bad:
        p.error(f"unknown shape(s) {', '.join(bad)}; choose from {', '.join(SHAPES)}")
    args.sizes = sorted(int(s) for s in args.sizes.split(",") if s)
    if not os.access(args.kiln, os.X_OK):
        p.error(f"no kiln binary at {args.kiln} (build it, or pass --kiln)")
    return args


def run(args, workdir):
    table = sys.stderr if args.json else sys.stdout
    print(f"kiln compile --target {args.target} --emit {args.emit} --time-passes (KILN_CACHE_DIR=off), "
          f"timeout {args.timeout:g} s; kiln: {args.kiln}", file=table)
    print_header(table)
    by_shape = {}
    for shape in args.shapes:
        for size in args.sizes:
            text, ops = GENERATORS[shape](size)
            path = os.path.join(workdir, f"{shape}_{size}.kiln")
            with open(path, "w") as f:
                f.write(text)
            error = check_file(args.kiln, path) if args.check else None
            if error:
                r = {"status": "invalid", "message": error.splitlines()[-1],
                     "wall_ms": 0.0, "max_rss_mb": 0.0}
            else:
                r = compile_one(args.kiln, path, args.target, args.timeout, args.emit)
            r.update(shape=shape, size=size, ops=ops, target=args.target)
            if r["status"] == "ok":
                r["us_per_op"] = r["total_ms"] * 1e3 / ops
            by_shape.setdefault(shape, []).append(r)
            print_row(r, table)
            table.flush()
            if args.json:
                print(json.dumps(r), flush=True)
    print(file=table)
    for shape, results in by_shape.items():
        summarize_shape(shape, results, args.min_stage_ms, table)


def main():
    args = parse_args()
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        run(args, args.keep)
    else:
        with tempfile.TemporaryDirectory(prefix="kiln-compile-time-") as workdir:
            run(args, workdir)


if __name__ == "__main__":
    main()
