"""harness.py's runner for the training-step cases (train_cases.py): builds a framework's step from
the case's initial parameters and batch, checks its first step against the NumPy reference
(train_reference.py), then times further steps back to back, each carrying the parameters and
optimizer state of the one before, as a training loop does."""

import time

import train_cases
from harness import case_record, measure
from train_reference import check_step, reference_step

_REFERENCE = {}  # case name -> reference results: a GPU-sized case's takes seconds of NumPy


def reference(case, inputs):
    if case.name not in _REFERENCE:
        _REFERENCE[case.name] = reference_step(case, inputs)
    return _REFERENCE[case.name]


def tolerance_override(case, precision):
    """--tf32 lets f32 products round to TF32's 10-bit mantissa: the gradients are then good to about
    1e-3, so the f32 check loosens as harness.tolerance does for products."""
    return 1e-2 if precision == "tf32" and case.precision == "f32" else None


def run_train_case(backend, case, cfg, copy_gbps):
    """Times one training step on one backend and returns its record (raises on failure)."""
    inputs = train_cases.make_train_inputs(case)
    t0 = time.perf_counter()
    step = backend.train_step(case, inputs)
    step.step()  # step 1: compiles, and its results are the ones checked
    step.sync()
    compile_s = time.perf_counter() - t0
    check, err, detail = "skipped", None, None
    if cfg.check:
        ok, err, detail = check_step(case, step.results(), reference(case, inputs),
                                     tolerance_override(case, cfg.precision))
        check = "ok" if ok else "FAIL"
    del inputs
    stats = measure(step.time, cfg.warmup, cfg.samples, cfg.target_ms)
    del step
    backend.free()
    return case_record(backend, case, cfg, copy_gbps, stats, compile_s, check, err, backend.train_mode,
                       check_detail=detail)
