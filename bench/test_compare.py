#!/usr/bin/env python3
"""Unit tests of bench/compare.py on made-up records (ctest: compare_test). The numbers here are
fabricated for the tests only; bench/RESULTS.md holds measured ones."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402


def kiln(case, kernel, ms, gbps=None, pct=None, backend="cuda", **extra):
    rec = {"case": case, "kernel": kernel, "median_ms": ms, "gbps": gbps, "tflops": None, "copy_gbps": 3000.0,
           "pct_of_copy": pct, "backend": backend, "device": "NVIDIA H100 80GB HBM3"}
    rec.update(extra)
    return rec


def peer(fw, case, ms, pct=None, error=None, **extra):
    rec = {"framework": fw, "case": case, "dtype": "f32", "shape": "8192x8192", "median_ms": ms, "gbps": None,
           "tflops": None, "copy_gbps": 2900.0, "pct_of_copy": pct, "device": "NVIDIA H100 80GB HBM3",
           "error": error}
    rec.update(extra)
    return rec


def rows_of(text):
    """case -> list of cells of the main table."""
    out = {}
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("| case"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            out.setdefault(cells[0], cells)
    return out


class CompareTest(unittest.TestCase):
    def table(self, kiln_recs, peer_recs, **kw):
        kw.setdefault("date", "2026-01-02")
        return compare.build_table(kiln_recs, peer_recs, **kw)

    def test_joins_kiln_total_and_peers_by_case(self):
        text = self.table(
            [kiln("softmax_8192x8192_f32", "k0_softmax", 0.19, 2800.0, 93.3),
             kiln("softmax_8192x8192_f32", "total", 0.2, 2684.0, 89.5)],
            [peer("jax", "softmax_8192x8192_f32", 0.25, 80.0), peer("torch", "softmax_8192x8192_f32", 0.4, 50.0)])
        row = rows_of(text)["softmax_8192x8192_f32"]
        self.assertEqual(row[:3], ["softmax_8192x8192_f32", "f32", "8192x8192"])  # dtype/shape from cases.py
        self.assertEqual(row[3:7], ["0.200", "0.250", "0.400", "2684"])           # the total line, not the kernel
        self.assertEqual(row[7:10], ["90%", "80%", "50%"])
        self.assertEqual(row[10], "1.25x")                                         # best peer 0.25 / kiln 0.2
        self.assertIn("| softmax_8192x8192_f32 | k0_softmax | 0.190 | 2800 | 93% |", text)  # kernel detail

    def test_missing_entries_are_na(self):
        text = self.table([kiln("layer_norm", "total", 0.01, 5.0, 1.0)], [peer("torch", "mlp", 0.05, 2.0)])
        rows = rows_of(text)
        self.assertEqual(rows["layer_norm"][4:6], ["n/a", "n/a"])     # no peers for layer_norm
        self.assertEqual(rows["layer_norm"][10], "n/a")
        self.assertEqual(rows["mlp"][3], "n/a")                       # no kiln for mlp
        self.assertEqual(rows["mlp"][4], "n/a")                       # no jax for mlp
        self.assertEqual(rows["mlp"][5], "0.0500")
        self.assertEqual(rows["mlp"][6:8], ["n/a", "n/a"])
        self.assertNotIn("softmax", rows)                             # unmeasured cases get no row

    def test_errors_and_skips_are_marked_and_listed(self):
        text = self.table([], [peer("jax", "cnn", None, error="XlaRuntimeError: out of memory"),
                               peer("torch", "cnn", None, error="skipped: the 240 s budget of --budget-s is spent"),
                               peer("torch", "mlp", 0.1, check="FAIL", rel_err=0.5)])
        row = rows_of(text)["cnn"]
        self.assertEqual(row[4:6], ["error", "skipped"])
        self.assertIn("- jax, cnn: XlaRuntimeError: out of memory", text)
        self.assertIn("- torch.compile, mlp: result check FAILED (rel err 0.5)", text)

    def test_training_steps_order_and_kiln_check(self):
        text = self.table([kiln("train_mlp_large_f32", "total", 3.0, tflops=48.7, check="FAIL",
                                check_detail="worst new_m_w1 rel err 0.2 (tolerance 0.0001)"),
                           kiln("softmax", "total", 1.0), kiln("softmax_8192x8192_f32", "total", 1.0)], [])
        self.assertEqual(list(rows_of(text))[:3], ["softmax_8192x8192_f32", "train_mlp_large_f32", "softmax"])
        self.assertEqual(rows_of(text)["train_mlp_large_f32"][1:3], ["f32", "1024x1024"])  # from train_cases.py
        self.assertIn("- kiln, train_mlp_large_f32: result check FAILED (worst new_m_w1 rel err 0.2", text)
        self.assertIn("| train_mlp_large_f32 | f32 | 48.7 | n/a | n/a |", text)

    def test_kernels_summed_when_no_total_line(self):
        text = self.table([kiln("mlp", "k0_matmul", 0.01), kiln("mlp", "k1_fusion", 0.02)], [])
        self.assertEqual(rows_of(text)["mlp"][3], "0.0300 (sum)")
        self.assertIn("kiln printed no total line for mlp", text)

    def test_data_parallel_lines_are_not_kernels(self):
        text = self.table([kiln("step", "k0_matmul", 0.01), kiln("step", "total", 0.05),
                           kiln("step", "k3_all_reduce", None, section="data_parallel", bytes=400),
                           kiln("step", "step", None, section="data_parallel", step_ms=0.05)], [])
        self.assertEqual(rows_of(text)["step"][3], "0.0500")
        self.assertNotIn("k3_all_reduce", text)

    def test_picks_the_backend_and_accepts_null_kernel_as_total(self):
        recs = [kiln("softmax", None, 0.5, backend="cpu"), kiln("softmax", None, 0.005, backend="cuda")]
        self.assertEqual(rows_of(self.table(recs, []))["softmax"][3], "0.0050")
        self.assertEqual(rows_of(self.table(recs, [], backend="cpu"))["softmax"][3], "0.500")

    def test_order_header_copy_and_unknown_cases(self):
        text = self.table([kiln("zzz_custom", "total", 1.0), kiln("softmax", "total", 1.0),
                           kiln("softmax_8192x8192_f32", "total", 1.0)],
                          [peer("torch", "d2d_copy", 0.7, gbps=3067.0), peer("jax", "d2d_copy", 0.7, gbps=2990.0)],
                          machine="H100 (test)")
        self.assertIn("on H100 (test), 2026-01-02", text.splitlines()[0])
        self.assertIn("kiln 3000 GB/s, jax 2990 GB/s, torch.compile 3067 GB/s", text)
        order = list(rows_of(text))
        self.assertEqual(order, ["softmax_8192x8192_f32", "softmax", "zzz_custom"])  # large, example, unknown
        self.assertNotIn("d2d_copy", order)
        self.assertEqual(rows_of(text)["zzz_custom"][1:3], ["n/a", "n/a"])

    def test_tflops_table_for_compute_bound_cases(self):
        text = self.table([kiln("mlp_4096x1024x4096_bf16", "total", 0.1, tflops=687.2)],
                          [peer("jax", "mlp_4096x1024x4096_bf16", 0.11, tflops=624.7)])
        self.assertIn("| mlp_4096x1024x4096_bf16 | bf16 | 687.2 | 624.7 | n/a |", text)
        small = self.table([], [peer("torch", "mlp", 0.05, tflops=0.0012345)])
        self.assertIn("| mlp | f32 | n/a | n/a | 0.00123 |", small)  # tiny rates keep 3 digits

    def test_no_records_and_cli_with_bad_lines(self):
        self.assertIn("No results", self.table([], []))
        with tempfile.TemporaryDirectory() as tmp:
            k, p, out = (os.path.join(tmp, n) for n in ("k.jsonl", "p.jsonl", "out.md"))
            with open(k, "w") as f:
                f.write(json.dumps(kiln("softmax", "total", 0.003, 4.0, 0.1)) + "\nnot json\n\n")
            with open(p, "w") as f:
                f.write(json.dumps(peer("jax", "softmax", 0.006, 0.1)) + "\n")
            subprocess.check_call([sys.executable, os.path.join(HERE, "compare.py"), "--kiln", k, "--peers", p,
                                   "--peers", os.path.join(tmp, "absent.jsonl"), "--date", "2026-01-02", "-o", out])
            with open(out) as f:
                text = f.read()
        self.assertEqual(rows_of(text)["softmax"][3:5], ["0.0030", "0.0060"])
        self.assertIn("1 input line(s) were not JSON records", text)


if __name__ == "__main__":
    unittest.main()
