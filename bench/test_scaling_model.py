#!/usr/bin/env python3
"""Unit tests of bench/scaling_model.py's arithmetic (ctest scaling_model_test)."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scaling_model as m  # noqa: E402


class ScalingModel(unittest.TestCase):
    def test_ring_time(self):
        # 2 (N-1)/N * S / busbw: 1 GB over 8 ranks at 100 GB/s is 17.5 ms, plus the latency.
        self.assertAlmostEqual(m.ring_time_ms(1e9, 8, 100, 0), 17.5)
        self.assertAlmostEqual(m.ring_time_ms(1e9, 2, 100, 30), 10.03)
        self.assertEqual(m.ring_time_ms(1e9, 1, 100, 30), 0.0)

    def test_one_bucket_is_never_hidden(self):
        # The only bucket is ready when the backward pass ends: all of it is exposed.
        self.assertAlmostEqual(m.exposed_ms(30.0, 2 / 3, [5.0]), 5.0)

    def test_early_buckets_hide_behind_the_backward_pass(self):
        # Backward 20 ms, 4 buckets ready at 5, 10, 15, 20 ms into it, 2 ms each: only the last shows.
        self.assertAlmostEqual(m.exposed_ms(30.0, 2 / 3, [2.0] * 4), 2.0)
        # 8 ms each: the link is the bottleneck, 4 x 8 = 32 ms from 5 ms in, ending 17 ms late.
        self.assertAlmostEqual(m.exposed_ms(30.0, 2 / 3, [8.0] * 4), 17.0)

    def test_prediction(self):
        r = m.predict(10.0, [1e9], 2, 100.0, 0.0, 0.5)
        self.assertAlmostEqual(r["allreduce_ms"], 10.0)
        self.assertAlmostEqual(r["step_ms"], 20.0)
        self.assertAlmostEqual(r["efficiency"], 0.5)
        self.assertAlmostEqual(r["speedup"], 1.0)
        self.assertAlmostEqual(r["overlap"], 0.0)

    def test_reads_kiln_bench_json(self):
        lines = [
            {"case": "s", "kernel": "total", "median_ms": 3.0},
            {"case": "s", "section": "data_parallel", "kernel": "k9_all_reduce", "bytes": 100},
            {"case": "s", "section": "data_parallel", "kernel": "k12_all_reduce", "bytes": 300},
            {"case": "s", "section": "data_parallel", "kernel": "step", "compute_ms": 2.0, "bytes": 400},
        ]
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            f.write("\n".join(json.dumps(x) for x in lines))
        try:
            self.assertEqual(m.from_bench(f.name), (2.0, [100, 300]))
        finally:
            os.unlink(f.name)


if __name__ == "__main__":
    unittest.main()
