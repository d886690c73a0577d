#!/usr/bin/env python3
"""Writes kiln's model-zoo tests: whole real-architecture networks as ONNX backend-test folders.

For each model, OUT/<model>/model.onnx plus OUT/<model>/test_data_set_0/input_<i>.pb and
output_<i>.pb (TensorProto files), the layout of ONNX's own node tests, so that
`kiln onnx-test OUT/<model>` runs it. The graphs are built by models_zoo.py (opset 17, standard
domain only, random weights from a fixed seed); the expected outputs come from onnxruntime's CPU
provider with every graph optimisation disabled, i.e. the plain semantics of the nodes.

usage: tests/models/make_models.py [--out DIR] [--models a,b] [--scale real|small] [--seed N]
                                   [--list [--verbose]] [--no-timing]

  --out DIR       where to write the folders (default: ./zoo, or ./zoo_small with --scale small)
  --models a,b    which models (default: all of them; --list shows the names)
  --scale small   the same architectures far narrower and on tiny inputs (for the GPU simulator)
  --list          print name, node count, parameter count and weight MB; writes nothing
                  (--verbose adds each model's op-type counts)
  --seed N        seed of the weights and inputs (default 0; each model derives its own from it)
  --no-timing     skip the second onnxruntime session (default optimisations) that is timed for
                  the docs; the reference run is always made
"""
import argparse
import collections
import json
import os
import shutil
import sys
import time

try:
    import numpy as np
    import onnx
    import onnxruntime  # noqa: F401  (the reference outputs)
    from onnx import numpy_helper
except ImportError as missing:
    # ctest counts exit code 77 as a skip, and prints the reason.
    print("model zoo skipped: {} (pip install onnx onnxruntime)".format(missing))
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models_zoo  # noqa: E402  (found next to this script)


def weight_bytes(model):
    return sum(len(t.raw_data) or numpy_helper.to_array(t).nbytes for t in model.graph.initializer)


def op_histogram(model):
    return collections.Counter(n.op_type for n in model.graph.node)


def ort_session(path, optimise):
    """An onnxruntime CPU session; `optimise` False disables every graph rewrite (the reference)."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimise
                                        else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    options.log_severity_level = 3
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def timed(fn, *args):
    start = time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - start


# ONNX's backend tests compare with rtol 1e-3 and atol 1e-7. The transformers sum 768- to
# 3072-long float32 dot products through 12 layers and end in values near zero (layer norm
# outputs, logits), where summation order alone moves results by a few 1e-6: onnxruntime with its
# default optimisations differs from its own unoptimised reference by up to 6e-6. Their folders
# carry a data.json with atol 1e-5, which `kiln onnx-test` reads as ONNX's runner does.
ABSOLUTE_TOLERANCE = {"bert_encoder": 1e-5, "gpt2_decoder": 1e-5, "vit_b16": 1e-5}


def write_tensor(path, array, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


def differences(got, want, rtol=1e-3, atol=1e-7):
    """The largest |got - want|, and how many elements miss ONNX's backend-test tolerance
    |got - want| <= atol + rtol |want| (the one `kiln onnx-test` applies)."""
    got, want = got.astype(np.float64), want.astype(np.float64)
    diff = np.abs(got - want)
    return diff.max(), int((diff > atol + rtol * np.abs(want)).sum())


def list_models(names, scale, seed, verbose):
    print("{:<16} {:>6} {:>12} {:>10}".format("model", "nodes", "params", "weight MB"))
    for name in names:
        model, _, params = models_zoo.build(name, scale, seed)
        print("{:<16} {:>6} {:>12,} {:>10.1f}".format(name, len(model.graph.node), params,
                                                    weight_bytes(model) / 1e6))
        if verbose:
            ops = op_histogram(model)
            print("    " + ", ".join("{} {}".format(op, n) for op, n in sorted(ops.items())))


def make_model(name, scale, seed, out_dir, timing):
    """Builds, writes, checks and runs one model; returns a dict of its figures."""
    row = {"model": name}
    (model, feeds, params), row["build_s"] = timed(models_zoo.build, name, scale, seed)
    row.update(nodes=len(model.graph.node), params=params, weight_mb=weight_bytes(model) / 1e6)

    folder = os.path.join(out_dir, name)
    if os.path.isdir(folder):
        shutil.rmtree(folder)            # a stale data set must not survive a regeneration
    data = os.path.join(folder, "test_data_set_0")
    os.makedirs(data)
    path = os.path.join(folder, "model.onnx")
    start = time.perf_counter()
    onnx.save(model, path)
    row["file_mb"] = os.path.getsize(path) / 1e6
    del model                            # the checker and onnxruntime read the file
    row["save_s"] = time.perf_counter() - start

    # full_check also runs strict shape inference, which must agree with the declared outputs.
    _, row["check_s"] = timed(onnx.checker.check_model, path, True)

    session, row["ref_load_s"] = timed(ort_session, path, False)
    outputs, row["ref_run_s"] = timed(session.run, None, feeds)
    for i, info in enumerate(session.get_inputs()):
        write_tensor(os.path.join(data, "input_{}.pb".format(i)), feeds[info.name], info.name)
    for i, (info, value) in enumerate(zip(session.get_outputs(), outputs)):
        if not np.isfinite(value).all():
            raise RuntimeError("{}: output '{}' is not finite".format(name, info.name))
        write_tensor(os.path.join(data, "output_{}.pb".format(i)), value, info.name)
    del session
    if name in ABSOLUTE_TOLERANCE:
        with open(os.path.join(folder, "data.json"), "w") as f:
            json.dump({"model_name": name, "rtol": 1e-3, "atol": ABSOLUTE_TOLERANCE[name]}, f)
    row["out_std"] = float(outputs[0].std())
    row["out_absmax"] = float(np.abs(outputs[0]).max())
    row["generate_s"] = row["build_s"] + row["save_s"] + row["check_s"] + row["ref_load_s"] + row["ref_run_s"]

    if timing:
        # What a user of onnxruntime sees: session creation with the default optimisations (all
        # on) and the first run. The difference to the reference shows the float noise that
        # rewrites alone introduce, a floor for any backend's tolerance on this model.
        session, row["ort_load_s"] = timed(ort_session, path, True)
        optimised, row["ort_run_s"] = timed(session.run, None, feeds)
        row["ort_abs_diff"], row["ort_misses"] = differences(optimised[0], outputs[0])
        row["elements"] = outputs[0].size
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="output folder (default ./zoo or ./zoo_small)")
    parser.add_argument("--models", default="all", help="comma-separated names (default: all)")
    parser.add_argument("--scale", choices=models_zoo.SCALES, default="real")
    parser.add_argument("--seed", type=int, default=0, help="weight and input seed (default 0)")
    parser.add_argument("--list", action="store_true", help="print the models' sizes, write nothing")
    parser.add_argument("--verbose", action="store_true", help="with --list: each model's op counts")
    parser.add_argument("--no-timing", action="store_true",
                        help="skip the timed onnxruntime session with default optimisations")
    args = parser.parse_args()

    names = list(models_zoo.ZOO) if args.models == "all" else [n.strip() for n in args.models.split(",") if n.strip()]
    unknown = [n for n in names if n not in models_zoo.ZOO]
    if unknown:
        parser.error("unknown model(s) {}; the zoo has {}".format(", ".join(unknown), ", ".join(models_zoo.ZOO)))
    if args.list:
        list_models(names, args.scale, args.seed, args.verbose)
        return 0

    out_dir = args.out or ("zoo" if args.scale == "real" else "zoo_small")
    os.makedirs(out_dir, exist_ok=True)
    rows = []
    total = time.perf_counter()
    for name in names:
        row = make_model(name, args.scale, args.seed, out_dir, not args.no_timing)
        rows.append(row)
        print("wrote {:<40} {:>4} nodes {:>8.1f} MB  generated in {:6.2f} s (build {:.2f}, save {:.2f}, "
              "check {:.2f}, reference load {:.2f} + run {:.2f})  output std {:.3g}, max |x| {:.3g}".format(
                  os.path.join(out_dir, name), row["nodes"], row["file_mb"], row["generate_s"], row["build_s"],
                  row["save_s"], row["check_s"], row["ref_load_s"], row["ref_run_s"], row["out_std"],
                  row["out_absmax"]), flush=True)
    total = time.perf_counter() - total

    print("\n{} scale, seed {}; generator total {:.1f} s".format(args.scale, args.seed, total))
    header = "{:<16} {:>6} {:>12} {:>10} {:>10} {:>13} {:>12}"
    print(header.format("model", "nodes", "params", "weight MB", "gen s", "ref load s", "ref run s"))
    for r in rows:
        print("{:<16} {:>6} {:>12,} {:>10.1f} {:>10.2f} {:>13.2f} {:>12.3f}".format(
            r["model"], r["nodes"], r["params"], r["weight_mb"], r["generate_s"], r["ref_load_s"], r["ref_run_s"]))
    if not args.no_timing:
        print("\nonnxruntime {} CPU, default optimisations: session creation and first run"
              .format(__import__("onnxruntime").__version__))
        print("(against the reference: the largest difference, and the output elements outside ONNX's "
              "rtol 1e-3 + atol 1e-7)")
        print("{:<16} {:>10} {:>12} {:>12} {:>16}".format("model", "load s", "first run s", "max |diff|",
                                                         "outside tol"))
        for r in rows:
            print("{:<16} {:>10.2f} {:>12.3f} {:>12.2e} {:>16}".format(
                r["model"], r["ort_load_s"], r["ort_run_s"], r["ort_abs_diff"],
                "{} / {}".format(r["ort_misses"], r["elements"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
