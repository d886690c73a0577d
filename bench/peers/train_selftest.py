"""The training-step cases' part of `harness.py --self-test` (NumPy only, no torch, JAX or GPU): the
NumPy reference step against a hand-worked case and against finite differences, bf16 rounding, the
byte and FLOP models worked by hand, the runner end to end on a NumPy step, and with --kiln, that
`kiln train --print-step` builds every case's step with the documented layout, that kiln plans it,
and that kiln's compiled step matches the reference on the example."""

import contextlib
import io
import json
import math
import os
import tempfile

import numpy as np

import train_cases as tc
from train_reference import adam, bf16_round, check_step, gradients, reference_step


def tiny_case(widths, batch, precision="f32", lr=0.1):
    return tc.TrainCase(name="tiny", widths=tuple(widths), batch=batch, precision=precision, lr=lr)


def worst_gradient_error(case, inputs):
    """The largest relative difference between the reference's gradients and central differences."""
    y = inputs["y"].astype(np.int64)
    loss = lambda p: gradients(case, p, inputs["x"], y)[0]  # noqa: E731
    grads = gradients(case, inputs, inputs["x"], y)[2]
    worst = 0.0
    for name in case.param_names:
        num = np.zeros_like(inputs[name])
        for idx in np.ndindex(num.shape):
            hi, lo = dict(inputs), dict(inputs)
            hi[name], lo[name] = inputs[name].copy(), inputs[name].copy()
            hi[name][idx] += 1e-6
            lo[name][idx] -= 1e-6
            num[idx] = (loss(hi) - loss(lo)) / 2e-6
        worst = max(worst, float(np.abs(num - grads[name]).max() / np.abs(num).max()))
    return worst


def check_reference(expect):
    # Hand-worked: one dense layer (no hidden layer), W = 0, b = 0, x = [[1, 2]], y = [0]. The logits
    # are [0, 0], so p = [1/2, 1/2], loss = ln 2, accuracy 1 (argmax of a tie is the first class),
    # d logits = p - onehot(0) = [-1/2, 1/2], dW = x^T [-1/2, 1/2], db = [-1/2, 1/2]. Adam's first
    # step (m = v = 0, t = 1): m' = 0.1 g, v' = 0.001 g^2 and p' = -lr g / (|g| + 1e-8).
    case = tiny_case((2, 2), 1)
    z = np.zeros
    inputs = {"w1": z((2, 2)), "b1": z(2), "m_w1": z((2, 2)), "m_b1": z(2), "v_w1": z((2, 2)), "v_b1": z(2),
              "x": np.array([[1.0, 2.0]]), "y": np.array([0]), "lr": np.array(0.1), "step": np.array(1.0)}
    got = reference_step(case, inputs)
    g_w, g_b = np.array([[-0.5, 0.5], [-1.0, 1.0]]), np.array([-0.5, 0.5])
    want = {"loss": math.log(2), "accuracy": 1.0, "new_w1": -0.1 * g_w / (abs(g_w) + 1e-8),
            "new_b1": -0.1 * g_b / (abs(g_b) + 1e-8), "new_m_w1": 0.1 * g_w, "new_m_b1": 0.1 * g_b,
            "new_v_w1": 0.001 * g_w ** 2, "new_v_b1": 0.001 * g_b ** 2}
    for k, w in want.items():
        expect(np.allclose(got[k], w, rtol=1e-12, atol=1e-15), f"reference step, hand-worked {k}: {got[k]} == {w}")
    ok, err, detail = check_step(case, got, got)
    expect(ok and err == 0, f"a step checks against itself ({detail})")
    worse = dict(got, new_w1=got["new_w1"] * 1.01)
    expect(not check_step(case, worse, got)[0], "a 1% error in a parameter fails the check")

    # Adam's later steps: the bias corrections at t = 3, written out.
    p, g, m, v = 1.0, 0.5, 0.2, 0.3
    m2, v2 = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
    want_p = p - 0.01 / (1 - 0.9 ** 3) * m2 / (math.sqrt(v2) / math.sqrt(1 - 0.999 ** 3) + 1e-8)
    expect(np.allclose(adam(p, g, m, v, 0.01, 3, (0.9, 0.999), 1e-8), (want_p, m2, v2), rtol=1e-14),
           "Adam's update with bias corrections at t = 3")

    # The backward pass against central differences, in float64: two tanh layers deep, and the CNN
    # (both convolutions, both pools) on 4x4 images.
    case = tiny_case((3, 5, 4, 3), 4)
    inputs = {k: v.astype(np.float64) for k, v in tc.make_train_inputs(case, seed=1).items()}
    worst = worst_gradient_error(case, inputs)
    expect(worst < 1e-7, f"reference gradients match central differences (worst rel err {worst:.2g})")
    cnn = tc.cnn_case(3, (2, 3, 4, 5), (4, 4))
    worst = worst_gradient_error(cnn, {k: v.astype(np.float64) for k, v in tc.make_train_inputs(cnn, seed=1).items()})
    expect(worst < 1e-7, f"the CNN's reference gradients match central differences (worst rel err {worst:.2g})")

    # bf16 rounding: exact values stay, halfway cases go to the even neighbour.
    got = bf16_round(np.array([1.0, 1 + 2 ** -8, 1 + 3 * 2 ** -8, -2.5, 1 + 2 ** -7]))
    expect(np.array_equal(got, [1.0, 1.0, 1 + 2 ** -6, -2.5, 1 + 2 ** -7]), f"bf16 rounding, ties to even ({got})")
    case16 = tiny_case((3, 5, 4, 3), 4, "bf16")
    r16, r32 = reference_step(case16, inputs), reference_step(case, inputs)
    d = abs(float(r16["loss"]) - float(r32["loss"]))
    expect(0 < d < 0.05, f"the bf16 model rounds (loss differs from f32 by {d:.2g}, within bf16's precision)")
    expect(check_step(case, dict(r32, accuracy=r32["accuracy"] + 0.25), r32)[0]
           and not check_step(case, dict(r32, accuracy=r32["accuracy"] + 0.5), r32)[0],
           "f32: one prediction of four may differ (a near-tie), two may not")


def check_models(expect):
    cases = tc.train_cases()
    ex = cases[0]
    n = 2 * 64 + 64 + 64 * 64 + 64 + 64 * 3 + 3  # 4547 parameters
    expect(ex.bytes_moved == 4 * (3 * n + 64 * 2 + 64 + 2) + 4 * (2 + 3 * n),
           "example step bytes: p, m, v, x, y, lr, step read; loss, accuracy, p, m, v written")
    fwd = 2 * 64 * (2 * 64 + 64 * 64 + 64 * 3)
    expect(ex.flops == 3 * fwd - 2 * 64 * 2 * 64, "example step FLOPs: 3x forward less the data's gradient")
    big = cases[1]
    expect(big.flops == 3 * 2 * 1024 * (1024 * 4096 + 4096 * 4096 + 4096 * 1024) - 2 * 1024 * 1024 * 4096,
           "GPU-sized step FLOPs")
    expect([t.name for t in ex.params][:8] == ["w1", "b1", "w2", "b2", "w3", "b3", "m_w1", "m_b1"]
           and [t.name for t in ex.params][-4:] == ["x", "y", "lr", "step"], "step parameters in kiln's order")
    gen = tc.kiln_mlp_classifier(32, (2, 64, 64, 3))
    from cases import signature
    expect(signature(gen) == signature(ex.kiln_text),
           "the loss generator at the example's size has examples/train/mlp_classifier.kiln's signature")
    expect("cast %x {to = bf16}" in tc.kiln_mlp_classifier(8, (4, 8, 2), "bf16"), "the bf16 loss casts to bf16")
    cnn = tc.cpu_train_cases()[1]
    convs = (2 * 32 * 32 * 32 * 32 * 3 * 9, 2 * 32 * 64 * 16 * 16 * 32 * 9)
    expect(cnn.flops == 3 * (sum(convs) + 2 * 32 * 4096 * 10) - convs[0],
           "CNN step FLOPs: 3x forward less the first convolution's data gradient")
    expect([t.name for t in cnn.params][:6] == ["k1", "c1", "k2", "c2", "w", "b"]
           and cnn.params[-4].shape == (32, 3, 32, 32), "CNN step parameters in kiln's order")
    for case in (ex, cnn):
        inputs = tc.make_train_inputs(case)
        expect(sorted(inputs) == sorted(t.name for t in case.params)
               and all(inputs[t.name].shape == t.shape for t in case.params),
               f"{case.name}: inputs have the step's names and shapes")


class NumpyTrainStep:
    """A framework's step done by the reference itself, carrying its results into the next step."""

    def __init__(self, case, inputs):
        self.case, self.inputs, self.out = case, dict(inputs), None

    def step(self):
        self.out = reference_step(self.case, self.inputs)
        for name in self.case.param_names:
            for prefix in ("", "m_", "v_"):
                self.inputs[prefix + name] = self.out[f"new_{prefix}{name}"]
        self.inputs["step"] = self.inputs["step"] + 1

    def sync(self): pass
    def results(self): return self.out

    def time(self, k):
        import time
        t0 = time.perf_counter()
        for _ in range(k):
            self.step()
        return (time.perf_counter() - t0) * 1e3


def check_runner(expect, fake_backend, cfg):
    from harness import run_framework
    case = tiny_case((3, 5, 4, 3), 4)
    case.name = "train_tiny"
    backend = fake_backend()
    backend.train_step = NumpyTrainStep
    backend.train_mode = "numpy"
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        fails = run_framework(backend, [case], cfg)
    recs = [json.loads(line) for line in buf.getvalue().splitlines()]
    r = recs[-1] if recs else {}
    expect(fails == 0 and r.get("case") == "train_tiny" and r.get("check") == "ok" and r.get("median_ms", 0) > 0
           and r.get("group") == "train" and r.get("flops") == case.flops,
           f"the runner times and checks a training step ({r})")


def check_kiln(expect, kiln):
    """kiln train --print-step builds every case's step with the documented layout (train_kiln raises
    otherwise) and kiln explain plans it; the example's step, compiled for the CPU, matches the
    reference."""
    import train_kiln
    with tempfile.TemporaryDirectory() as work:
        for case in tc.train_cases() + tc.cpu_train_cases():
            try:
                step = train_kiln.build_step(case, kiln, work)
                out = train_kiln.kiln_cmd(kiln, "explain", step, "--target", "cuda")
                expect(" kernels, " in out, f"kiln explain plans {case.name}'s step")
            except Exception as e:  # noqa: BLE001
                expect(False, f"{case.name}: {e}")
                continue
            if case.source or case.model == "cnn":  # small enough to run here
                flags, inputs = train_kiln.write_inputs(case, work)
                ok, err, detail = train_kiln.check(case, kiln, step, flags, inputs, "cpu", work)
                expect(ok, f"kiln's compiled step of {case.name} matches the NumPy reference ({detail})")


def self_test(expect, fake_backend, cfg, kiln=None):
    check_reference(expect)
    check_models(expect)
    check_runner(expect, fake_backend, cfg)
    if kiln:
        check_kiln(expect, kiln)
