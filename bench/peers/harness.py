#!/usr/bin/env python3
"""Peers' side of kiln's benchmark: the cases of cases.py through jax.jit and torch.compile.

  harness.py [--framework all|torch|jax] [--cases A,B] [--group large,train,example] [--out FILE]
  harness.py --self-test [--kiln PATH]     checks cases, byte/FLOP models, the NumPy mirror of every
                                           example and the runner, without torch or jax
  harness.py --list                        the cases

One JSON line per (framework, case) on stdout (and appended to --out):
  {framework, case, dtype, shape, median_ms, gbps, tflops, copy_gbps, pct_of_copy, device, ...}
with a device-to-device copy measured first in the same process (case "d2d_copy"). bench/peers/
README.md documents the fields. A framework that is missing, or sees no GPU, is skipped with a
note on stderr (exit 0); a case that fails gives a record with "error" and the run goes on.
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cases as casedefs  # noqa: E402

FRAMEWORKS = ("torch", "jax")
CHECK_ROWS = 64  # rows of a large case checked against NumPy (row-independent cases only)


def note(msg):
    print(f"peers: {msg}", file=sys.stderr, flush=True)


# --- NumPy: the float64 reference and the FLOP counter ------------------------------------------

class NumpyOps:
    """The ops interface of cases.py in NumPy (float64 in, float64 out). Counts matmul and conv
    FLOPs as it goes, so the self-test can check each case's declared FLOPs."""

    def __init__(self):
        import numpy as np
        self.np = np
        self.flops = 0

    def matmul(self, a, b):
        out = self.np.matmul(a, b)
        self.flops += 2 * out.size * a.shape[-1]
        return out

    def softmax(self, x, axis):
        e = self.np.exp(x - x.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)

    def log_softmax(self, x, axis):
        m = x.max(axis=axis, keepdims=True)
        return x - m - self.np.log(self.np.exp(x - m).sum(axis=axis, keepdims=True))

    def layer_norm(self, x, scale, bias, eps):
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        return (x - mean) / self.np.sqrt(var + eps) * scale + bias

    def tanh(self, x): return self.np.tanh(x)
    def sqrt(self, x): return self.np.sqrt(x)
    def abs(self, x): return self.np.abs(x)
    def sin(self, x): return self.np.sin(x)
    def maximum(self, a, b): return self.np.maximum(a, b)
    def relu(self, x): return self.np.maximum(x, 0.0)
    def transpose(self, x, perm): return self.np.transpose(x, perm)
    def contiguous(self, x): return self.np.ascontiguousarray(x)
    def reshape(self, x, shape): return self.np.reshape(x, shape)
    def mean(self, x, axis): return x.mean(axis=axis)
    def argmax(self, x, axis): return self.np.argmax(x, axis=axis).astype(self.np.int64)
    def take(self, table, ids): return table[ids]

    def conv2d(self, x, w, pads):
        np = self.np
        n, c, h, wd = x.shape
        o, _, kh, kw = w.shape
        top, left, bottom, right = pads
        xp = np.zeros((n, c, h + top + bottom, wd + left + right))
        xp[:, :, top:top + h, left:left + wd] = x
        oh, ow = xp.shape[2] - kh + 1, xp.shape[3] - kw + 1
        y = np.zeros((n, o, oh, ow))
        for i in range(kh):
            for j in range(kw):
                y += np.einsum("nchw,oc->nohw", xp[:, :, i:i + oh, j:j + ow], w[:, :, i, j])
        self.flops += 2 * y.size * c * kh * kw
        return y

    def max_pool2d(self, x, k):
        n, c, h, w = x.shape
        x = x[:, :, :h // k * k, :w // k * k]
        return x.reshape(n, c, h // k, k, w // k, k).max(axis=(3, 5))

    def cross_entropy(self, logits, labels):
        lp = self.log_softmax(logits, -1)
        return -lp[self.np.arange(len(labels)), labels].mean()

    def map(self, f, xs):
        return self.np.stack([f(x) for x in xs])

    def while_loop(self, cond, body, init):
        state = init
        while cond(*state):
            state = body(*state)
        return state


def numpy_eval(case, inputs):
    """Runs the case's math in float64 NumPy; returns (list of results, FLOPs counted)."""
    import numpy as np
    o = NumpyOps()
    args = [np.asarray(inputs[t.name], dtype=np.float64 if t.dtype in casedefs.FLOAT_DTYPES else np.int64)
            for t in case.params]
    out = case.fn(o, *args)
    return [np.asarray(r) for r in (out if isinstance(out, tuple) else (out,))], o.flops


def rel_error(got, want):
    """||got - want|| / ||want|| for floats; the fraction of differing elements for integers."""
    import numpy as np
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return math.inf
    if np.issubdtype(want.dtype, np.integer):
        return float(np.count_nonzero(got.astype(np.int64) != want)) / max(want.size, 1)
    got = got.astype(np.float64)
    if not np.all(np.isfinite(got)):
        return math.inf
    denom = float(np.linalg.norm(want))
    return float(np.linalg.norm(got - want)) / (denom if denom else 1.0)


def tolerance(case, precision):
    if case.dtype in ("bf16", "f16"):
        return 3e-2
    if case.flops and precision == "tf32":
        return 1e-2
    return 1e-4


# --- timing -------------------------------------------------------------------------------------

def measure(time_batch, warmup, samples, target_ms, max_batch=10000):
    """time_batch(k) -> milliseconds for k back-to-back calls, measured on the device (events) or
    ending in a synchronisation. Warms up, picks k so one sample lasts about target_ms, and returns
    the per-call median, 10th and 90th percentiles and k."""
    for _ in range(warmup):
        time_batch(1)
    est = statistics.median(time_batch(1) for _ in range(3))
    k = int(min(max_batch, max(1, math.ceil(target_ms / max(est, 1e-4)))))
    per_call = sorted(time_batch(k) / k for _ in range(samples))
    q = lambda p: per_call[min(len(per_call) - 1, int(p * len(per_call)))]  # noqa: E731
    return {"median_ms": statistics.median(per_call), "p10_ms": q(0.1), "p90_ms": q(0.9), "batch": k,
            "samples": samples}


def _clean(v):
    if isinstance(v, float):
        return None if not math.isfinite(v) else float(f"{v:.6g}")
    return v


def make_record(framework, case_name, dtype, shape, device, median_ms=None, nbytes=0, flops=0, copy_gbps=None,
                **extra):
    """The JSON record: the documented fields first (bench/peers/README.md), then extras."""
    gbps = nbytes / (median_ms * 1e-3) / 1e9 if median_ms and nbytes else None
    tflops = flops / (median_ms * 1e-3) / 1e12 if median_ms and flops else None
    rec = {"framework": framework, "case": case_name, "dtype": dtype, "shape": shape, "median_ms": median_ms,
           "gbps": gbps, "tflops": tflops, "copy_gbps": copy_gbps,
           "pct_of_copy": 100.0 * gbps / copy_gbps if gbps and copy_gbps else None, "device": device,
           "bytes": nbytes, "flops": flops}
    rec.update(extra)
    rec.setdefault("error", None)
    return {k: _clean(v) for k, v in rec.items()}


def emit(rec, out_file=None):
    line = json.dumps(rec, allow_nan=False)
    print(line, flush=True)
    if out_file:
        with open(out_file, "a") as f:
            f.write(line + "\n")


# --- running one framework --------------------------------------------------------------------

def run_case(backend, case, cfg, copy_gbps):
    """Times one case on one backend and returns its record (raises on failure)."""
    import numpy as np
    inputs = casedefs.make_inputs(case)
    args = [backend.to_device(inputs[t.name], t.dtype) for t in case.params]
    del inputs
    ops = backend.ops
    f = backend.compile(lambda *a: case.fn(ops, *a))
    t0 = time.perf_counter()
    out = f(*args)
    backend.sync(out)
    compile_s = time.perf_counter() - t0
    stats = measure(lambda k: backend.time_batch(f, args, k), cfg.warmup, cfg.samples, cfg.target_ms)

    check, err = "skipped", None
    if cfg.check:
        out = f(*args)  # fresh results (torch's CUDA-graph modes reuse output buffers between calls)
        backend.sync(out)
        results = out if isinstance(out, (tuple, list)) else (out,)
        rows = CHECK_ROWS if case.row_params is not None else None
        ref_inputs = {}
        for t, a in zip(case.params, args):
            sliced = rows if (rows and t.name in case.row_params and t.shape) else None
            ref_inputs[t.name] = backend.to_numpy(a, sliced)
        want, _ = numpy_eval(case, ref_inputs)
        got = [backend.to_numpy(r, rows) for r in results]
        errs = [rel_error(g, np.asarray(w)) for g, w in zip(got, want)]
        err = max(errs) if len(got) == len(want) else math.inf
        check = "ok" if err <= tolerance(case, cfg.precision) else "FAIL"
    del out, args
    backend.free()
    return case_record(backend, case, cfg, copy_gbps, stats, compile_s, check, err, backend.mode)


def case_record(backend, case, cfg, copy_gbps, stats, compile_s, check, err, mode, **extra):
    """A timed case's record: measure()'s stats with the case's byte and FLOP models."""
    return make_record(backend.name, case.name, case.dtype, case.shape, backend.device,
                       median_ms=stats["median_ms"], nbytes=case.bytes_moved, flops=case.flops,
                       copy_gbps=copy_gbps, p10_ms=stats["p10_ms"], p90_ms=stats["p90_ms"],
                       batch=stats["batch"], samples=stats["samples"], compile_s=compile_s, check=check,
                       rel_err=err, group=case.group, version=backend.version, mode=mode,
                       precision=cfg.precision, **extra)


def run_framework(backend, case_list, cfg):
    """The copy baseline, then every case in order, within cfg.budget_s seconds. Returns the number of
    cases that failed."""
    start = time.perf_counter()
    copy_gbps = None
    try:
        nbytes = cfg.copy_mib << 20
        stats = measure(lambda k: backend.copy_batch(nbytes, k), cfg.warmup, cfg.samples, cfg.target_ms)
        copy_gbps = 2 * nbytes / (stats["median_ms"] * 1e-3) / 1e9
        emit(make_record(backend.name, "d2d_copy", "u8", f"{cfg.copy_mib}MiB", backend.device,
                         median_ms=stats["median_ms"], nbytes=2 * nbytes, copy_gbps=copy_gbps,
                         p10_ms=stats["p10_ms"], p90_ms=stats["p90_ms"], batch=stats["batch"],
                         samples=stats["samples"], group="baseline", version=backend.version,
                         note=backend.copy_note), cfg.out)
    except Exception as e:  # noqa: BLE001: a failed baseline must not stop the cases
        emit(make_record(backend.name, "d2d_copy", "u8", f"{cfg.copy_mib}MiB", backend.device,
                         error=f"{type(e).__name__}: {e}"), cfg.out)
    backend.free()
    from train_cases import TrainCase
    from train_run import run_train_case  # it imports this module's case_record and measure
    failures = 0
    for case in case_list:
        if time.perf_counter() - start > cfg.budget_s:
            emit(make_record(backend.name, case.name, case.dtype, case.shape, backend.device, group=case.group,
                             error=f"skipped: the {cfg.budget_s:.0f} s budget of --budget-s is spent"), cfg.out)
            continue
        try:
            run = run_train_case if isinstance(case, TrainCase) else run_case
            rec = run(backend, case, cfg, copy_gbps)
            failures += rec["check"] == "FAIL"
        except Exception as e:  # noqa: BLE001: one failing case gives an error record, the run goes on
            failures += 1
            msg = f"{type(e).__name__}: {e}".strip().splitlines()
            rec = make_record(backend.name, case.name, case.dtype, case.shape, backend.device, group=case.group,
                              error=" | ".join(msg[:3])[:500])
            if cfg.verbose:
                traceback.print_exc()
            try:
                backend.free()
            except Exception:  # noqa: BLE001
                pass
        emit(rec, cfg.out)
    return failures


def load_backend(name, cfg):
    """The backend object, or None (with a note) if the framework or a GPU is missing."""
    if name not in FRAMEWORKS:
        raise SystemExit(f"unknown framework '{name}' (expected {', '.join(FRAMEWORKS)} or all)")
    try:
        mod = __import__(f"{name}_peer")
    except Exception as e:  # noqa: BLE001: ImportError, or a framework that breaks on import
        note(f"{name} is not installed or does not import here ({type(e).__name__}: {e}): skipping {name}")
        return None
    try:
        return mod.Backend(cfg)
    except mod.NoDevice as e:
        note(f"{name} sees no GPU ({e}): skipping {name} (--allow-cpu runs it on the CPU)")
        return None


def run_all(argv, cfg):
    """--framework all: each framework in its own process (their allocators and caches stay apart),
    one after the other."""
    rc = 0
    for fw in FRAMEWORKS:
        child = [sys.executable, os.path.abspath(__file__), "--framework", fw] + strip_framework(argv)
        env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false", PYTHONUNBUFFERED="1")
        note(f"running {fw}: {' '.join(child[1:])}")
        rc |= subprocess.call(child, env=env)
    return rc


def strip_framework(argv):
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a == "--framework":
            skip = True
            continue
        if a.startswith("--framework="):
            continue
        out.append(a)
    return out


# --- command line -----------------------------------------------------------------------------

def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--framework", default="all", help="all (default), torch or jax")
    ap.add_argument("--cases", help="comma-separated case names (default: all; see --list)")
    ap.add_argument("--group", help="only these groups of cases, comma-separated: large, train, example")
    ap.add_argument("--out", help="also append the JSON lines to this file")
    ap.add_argument("--budget-s", type=float, default=240.0,
                    help="per framework: cases that would start after this many seconds are skipped (default 240)")
    ap.add_argument("--samples", type=int, default=25, help="timed samples per case (default 25)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed calls after the compiling one (default 3)")
    ap.add_argument("--target-ms", type=float, default=2.0,
                    help="each sample times back-to-back calls lasting about this long (default 2 ms)")
    ap.add_argument("--copy-mib", type=int, default=1024, help="size of the copy baseline (default 1024 MiB)")
    ap.add_argument("--tf32", action="store_true",
                    help="let f32 matmul/conv use TF32 (default: IEEE f32 in both frameworks, as kiln)")
    ap.add_argument("--torch-mode", default="default",
                    help="torch.compile mode (default, reduce-overhead, max-autotune, ...)")
    ap.add_argument("--no-check", dest="check", action="store_false", help="skip the check against NumPy")
    ap.add_argument("--allow-cpu", action="store_true", help="run on the CPU when no GPU is seen (debugging)")
    ap.add_argument("--verbose", action="store_true", help="print tracebacks of failing cases")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("--self-test", action="store_true", help="test cases and harness without torch/jax")
    ap.add_argument("--kiln", help="with --self-test: also `kiln check` every generated case")
    cfg = ap.parse_args(argv)
    cfg.precision = "tf32" if cfg.tf32 else "ieee"
    return cfg


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    cfg = parse(argv)
    if cfg.self_test:
        try:
            import numpy  # noqa: F401
        except ImportError:
            print("self-test: NumPy is not installed; only the cases' byte models were checked")
            casedefs.all_cases()
            return 0
        import selftest
        return 1 if selftest.self_test(cfg.kiln) else 0
    if cfg.list:
        return casedefs.main([])
    if cfg.framework == "all":
        return run_all(argv, cfg)
    groups = cfg.group.split(",") if cfg.group else None
    case_list = casedefs.select(cfg.cases.split(",") if cfg.cases else None, groups)
    backend = load_backend(cfg.framework, cfg)
    if backend is None:
        return 0
    note(f"{backend.name} {backend.version} on {backend.device}: {len(case_list)} cases, budget {cfg.budget_s:.0f} s")
    failures = run_framework(backend, case_list, cfg)
    note(f"{backend.name}: done, {failures} case(s) failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
