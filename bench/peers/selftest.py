"""harness.py --self-test: checks the cases, their byte and FLOP models, the NumPy mirror of every
example and the runner, with NumPy alone (no torch, no JAX, no GPU); with --kiln also that kiln
parses every generated case and plans the one-kernel ones as modelled. The training steps' part is
train_selftest.py. ctest runs it as peers_self_test (label bench)."""

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import time

import cases as casedefs
import train_selftest
from harness import HERE, NumpyOps, make_record, numpy_eval, rel_error, run_framework


def self_test(kiln=None):
    """Checks what can be checked without a GPU framework. Returns the number of failures."""
    import numpy as np
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)
            print(f"FAIL: {what}")

    all_cases = casedefs.all_cases()
    names = [c.name for c in all_cases]
    expect(len(names) == len(set(names)), "case names are unique")
    for d in casedefs.EXAMPLES_DIRS:
        if os.path.isdir(d):
            stems = sorted(f[:-5] for f in os.listdir(d) if f.endswith(".kiln"))
            expect(sorted(c.name for c in casedefs.example_cases()) == stems,
                   f"every examples/*.kiln is a case ({stems})")
            break

    # Byte and FLOP models, worked out by hand.
    by = {c.name: c for c in all_cases}
    expect(by["softmax_8192x8192_f32"].bytes_moved == 2 * 8192 * 8192 * 4, "softmax f32 moves 2 x 256 MiB")
    expect(by["softmax_8192x8192_bf16"].bytes_moved == 2 * 8192 * 8192 * 2, "softmax bf16 moves 2 x 128 MiB")
    expect(by["layer_norm_8192x8192_f32"].bytes_moved == 2 * 8192 * 8192 * 4 + 2 * 8192 * 4,
           "layer norm reads x, scale, bias and writes y")
    expect(by["elementwise_chain_65536x1024_f32"].bytes_moved == 4 * (3 * 65536 * 1024 + 1024 + 1),
           "chain reads x, r, b, s and writes y")
    expect(by["mlp_4096x1024x4096_bf16"].flops == 2 * 2 * 4096 * 1024 * 4096, "MLP FLOPs: two products")
    n = sum(casedefs.Tensor("p", s, "f32").numel for s in casedefs.ADAM_LARGE_SHAPES)
    expect(by["adam_update_large_f32"].bytes_moved == 7 * 4 * n, "Adam reads p, g, m, v and writes p, m, v")
    expect(by["elementwise_chain"].bytes_moved == 4 * (3 * 512 * 1024 + 1024 + 1), "example chain bytes")
    rec = make_record("x", "c", "f32", "1", "dev", median_ms=2.0, nbytes=4e9, flops=2e9, copy_gbps=4000.0)
    expect(rec["gbps"] == 2000.0 and rec["tflops"] == 1.0 and rec["pct_of_copy"] == 50.0,
           f"GB/s, TFLOP/s and % of copy from time, bytes and FLOPs ({rec})")
    fields = ["framework", "case", "dtype", "shape", "median_ms", "gbps", "tflops", "copy_gbps", "pct_of_copy",
              "device"]
    expect(list(rec)[:len(fields)] == fields, "the documented fields come first, in order")
    expect(make_record("x", "c", "f32", "1", "d", error="boom")["median_ms"] is None, "an error record has no time")

    readme = os.path.join(HERE, "README.md")
    if os.path.exists(readme):
        with open(readme) as f:
            text = f.read()
        undocumented = [n for n in names if f"`{n}`" not in text]
        expect(not undocumented, f"bench/peers/README.md names every case (missing: {undocumented})")

    # The generators reproduce the examples' signatures at the examples' sizes.
    expect(casedefs.signature(casedefs.kiln_elementwise_chain(512, 1024, "f32"))
           == (by["elementwise_chain"].params, by["elementwise_chain"].outputs), "chain generator at 512x1024 has examples/elementwise_chain.kiln's parameters")
    sig = casedefs.signature(casedefs.kiln_adam([(256, 128), (128,), (128, 10), (10,)]))
    expect(sig == (by["adam_update"].params, by["adam_update"].outputs),
           "Adam generator with the example's shapes has examples/adam_update.kiln's signature")

    # Every example: the NumPy mirror of fn equals numpy_reference.py's model on its inputs, the
    # results have the declared types, and the declared FLOPs equal the counted ones.
    ref = None
    for d in [os.path.join(HERE, "..", "..", "tests", "lit", "Inputs"), os.path.join(HERE, "..", "lit", "Inputs")]:
        if os.path.exists(os.path.join(d, "numpy_reference.py")):
            sys.path.insert(0, d)
            import numpy_reference as ref  # noqa: F811
            break
    expect(ref is not None, "tests/lit/Inputs/numpy_reference.py is found")
    for case in casedefs.example_cases():
        if ref is None:
            break
        inputs, expected, _ = ref.build(case.name)
        expect(sorted(inputs) == sorted(t.name for t in case.params), f"{case.name}: parameters match the model")
        got, flops = numpy_eval(case, inputs)
        expect(flops == case.flops, f"{case.name}: declared FLOPs {case.flops} == counted {flops}")
        expect(len(got) == len(case.outputs) == len(expected), f"{case.name}: number of results")
        for g, w, t in zip(got, expected, case.outputs):
            expect(g.shape == tuple(t.shape), f"{case.name}: {t.name} shape {g.shape} == declared {t}")
            err = rel_error(g, np.asarray(w, dtype=g.dtype))
            expect(err < 1e-9, f"{case.name}: {t.name} matches numpy_reference.py (rel err {err:.2g})")

    # Large cases at small sizes: the same factories against independent NumPy formulas.
    small = [casedefs.softmax_case(8, 16, "f32"), casedefs.layer_norm_case(8, 16, "f32"),
             casedefs.elementwise_chain_case(8, 16, "f32"), casedefs.mlp_case(8, 16, 32, "f32"),
             casedefs.adam_case([(8, 16), (16,), (4, 4)])]
    for case in small:
        inputs = casedefs.make_inputs(case)
        got, flops = numpy_eval(case, inputs)
        x = {k: np.asarray(v, dtype=np.float64) for k, v in inputs.items()}
        if case.name.startswith("softmax"):
            e = np.exp(x["x"] - x["x"].max(-1, keepdims=True))
            want = [e / e.sum(-1, keepdims=True)]
        elif case.name.startswith("layer_norm"):
            want = [(x["x"] - x["x"].mean(-1, keepdims=True)) / np.sqrt(x["x"].var(-1, keepdims=True) + 1e-5)
                    * x["scale"] + x["bias"]]
        elif case.name.startswith("elementwise"):
            a = x["x"] + x["b"]
            want = [np.maximum((np.tanh(a * x["s"]) * 0.5 + 0.5) * a + x["r"], 0.5)]
        elif case.name.startswith("mlp"):
            want = [np.maximum(x["x"] @ x["w1"] + x["b1"], 0) @ x["w2"] + x["b2"]]
        else:
            want = []
            for i in range(1, 4):
                p, g, m, v = (x[f"{n}{i}"] for n in "pgmv")
                m2, v2 = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
                want += [p - 0.001 * m2 / (np.sqrt(v2) + 1e-8), m2, v2]
        expect(flops == case.flops, f"{case.name}: declared FLOPs == counted")
        expect(len(got) == len(want) == len(case.outputs), f"{case.name}: number of results")
        for g, w, t in zip(got, want, case.outputs):
            expect(g.shape == t.shape and rel_error(g, w) < 1e-12, f"{case.name}: {t.name} matches its formula")
        expect(all(np.any(v != 0) for v in inputs.values()), f"{case.name}: no input is all zeros")
        # The row slice the device check uses is a real sub-problem: fn of the first rows = rows of fn.
        sliced = {k: (v[:3] if k in case.row_params and np.ndim(v) else v) for k, v in inputs.items()}
        part, _ = numpy_eval(case, sliced)
        expect(all(rel_error(p, g[:3]) < 1e-12 for p, g in zip(part, got)),
               f"{case.name}: results on the first rows' inputs are the first rows of the results")
    big = casedefs.make_inputs(casedefs.softmax_case(2048, 4096, "f32"))["x"]
    expect(big.shape == (2048, 4096) and big.dtype == np.float32 and 0.9 < big.std() < 1.1,
           "large inputs tile a random pool (right shape, dtype and spread)")

    # The runner end to end on a fake backend (NumPy on the CPU, host timers): records for the
    # copy, each case, an error record for a case that raises, and a skip record past the budget.
    class Cfg:
        warmup, samples, target_ms, copy_mib, budget_s, check, precision, verbose, out = 1, 3, 0.2, 1, 60, \
            True, "ieee", False, None

    class FakeBackend:
        name, version, mode, device, copy_note = "numpy", np.__version__, "eager", "cpu", "np.copyto"
        ops = NumpyOps()

        def to_device(self, a, dtype): return np.asarray(a, dtype=np.float64 if dtype in casedefs.FLOAT_DTYPES
                                                          else np.int64)
        def compile(self, fn): return fn
        def sync(self, out): pass
        def free(self): pass
        def to_numpy(self, x, rows=None): return np.asarray(x)[:rows] if rows else np.asarray(x)

        def time_batch(self, f, args, k):
            t0 = time.perf_counter()
            for _ in range(k):
                f(*args)
            return (time.perf_counter() - t0) * 1e3

        def copy_batch(self, nbytes, k):
            src, dst = np.ones(nbytes, np.uint8), np.empty(nbytes, np.uint8)
            t0 = time.perf_counter()
            for _ in range(k):
                np.copyto(dst, src)
            return (time.perf_counter() - t0) * 1e3

    broken = casedefs.softmax_case(4, 8, "f32")
    broken.name, broken.fn = "broken", lambda o, x: o.no_such_op(x)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        fails = run_framework(FakeBackend(), [small[0], small[4], broken, by["softmax"]], Cfg())
        Cfg.budget_s = -1
        run_framework(FakeBackend(), [small[0]], Cfg())
    recs = [json.loads(line) for line in buf.getvalue().splitlines()]
    cases_seen = [r["case"] for r in recs]
    expect(cases_seen == ["d2d_copy", small[0].name, small[4].name, "broken", "softmax", "d2d_copy",
                          small[0].name], f"runner emits copy, cases, error, skip in order ({cases_seen})")
    expect(all(list(r)[:len(fields)] == fields for r in recs), "every record starts with the documented fields")
    ok = [r for r in recs[:5] if r["case"] != "broken"]
    expect(all(r["median_ms"] > 0 and r["gbps"] > 0 and r["error"] is None for r in ok), "timed records have times")
    expect(all(r["check"] == "ok" for r in ok[1:]), f"fake backend's results pass the check ({[r.get('check') for r in ok]})")
    expect(recs[1]["pct_of_copy"] is not None and recs[1]["copy_gbps"] == recs[0]["copy_gbps"],
           "cases carry the copy bandwidth of their run")
    expect(recs[3]["error"] and "no_such_op" in recs[3]["error"] and fails == 1, "a failing case is an error record")
    expect(recs[6]["error"] and recs[6]["error"].startswith("skipped"), "past the budget, cases are skipped")

    # The training steps: reference, models, runner and (with --kiln) kiln's step.
    Cfg.budget_s = 60
    train_selftest.self_test(expect, FakeBackend, Cfg, kiln)

    # With --kiln: kiln parses every generated case, and where DESIGN.md's performance contract says
    # a case is one kernel, `kiln explain` plans one kernel moving exactly the modelled bytes.
    if kiln:
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            for case in casedefs.large_cases():
                path = os.path.join(tmp, f"{case.name}.kiln")
                with open(path, "w") as f:
                    f.write(case.kiln_text)
                r = subprocess.run([kiln, "check", path], capture_output=True, text=True)
                expect(r.returncode == 0, f"kiln check {case.name}.kiln: {r.stderr.strip()}")
                if not case.one_kernel:
                    continue
                r = subprocess.run([kiln, "explain", path, "--target", "cuda"], capture_output=True, text=True)
                m = re.search(r"^(\d+) kernels?, (\d+) bytes read, (\d+) bytes written", r.stdout, re.M)
                got = (int(m.group(1)), int(m.group(2)) + int(m.group(3))) if m else r.stdout[-300:] + r.stderr
                expect(got == (1, case.bytes_moved),
                       f"kiln explain {case.name}.kiln: 1 kernel moving the modelled {case.bytes_moved} bytes (got {got})")
    print(f"self-test: {len(all_cases)} cases; " + ("ok" if not failures else f"{len(failures)} FAILED"))
    return len(failures)
