"""The Python module: compile and call on NumPy arrays, DLPack, dumps, training, and errors as
KilnError. ctest runs these with the build tree's module (PYTHONPATH=build/python)."""
import os
import time

import numpy as np
import pytest

import kiln

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCALE = """
func @main(%x: f32[2,3], %s: f32[]) -> f32[2] {
  %y = mul %x, %s
  %r = reduce_sum %y {axes = [1]}
  return %r
}
"""


def test_compile_text_and_call_with_numpy():
    f = kiln.compile(SCALE, backend="cpu")
    assert f.backend == "cpu"
    assert f.params == [("x", "f32", (2, 3)), ("s", "f32", ())]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = f(x, np.float32(2))
    assert isinstance(y, np.ndarray) and y.dtype == np.float32 and y.shape == (2,)
    np.testing.assert_array_equal(y, [6, 24])
    # A non-contiguous view is made contiguous.
    np.testing.assert_array_equal(f(np.asfortranarray(x), np.float32(1)), [3, 12])


def test_every_backend_matches_the_interpreter():
    graph = kiln.load(os.path.join(ROOT, "examples", "mlp.kiln"))
    inputs = graph.random_inputs(3)
    (expected,) = graph.interpret(inputs)
    backends = ["interp", "cpu"] + (["cuda"] if os.environ.get("KILN_CUDA_DRIVER") else [])
    for backend in backends:
        f = kiln.compile(graph, backend)
        np.testing.assert_allclose(f(*inputs), expected, rtol=1e-5, atol=1e-6, err_msg=backend)


def test_several_results_come_back_as_a_tuple():
    f = kiln.compile("""
func @main(%a: i32[4]) -> (i32[4], i32[]) {
  %n = neg %a
  %s = reduce_sum %a
  return %n, %s
}""", backend="cpu")
    n, s = f(np.array([1, 2, 3, 4], np.int32))
    np.testing.assert_array_equal(n, [-1, -2, -3, -4])
    assert s.shape == () and int(s) == 10


def test_bf16_crosses_as_f32():
    f = kiln.compile("""
func @main(%a: bf16[3]) -> bf16[3] {
  %b = add %a, %a
  return %b
}""", backend="cpu")
    y = f(np.array([1.0, 1.00390625, 3.0], np.float32))  # 1 + 2^-8 is a bf16 tie: rounds to 1
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, [2.0, 2.0, 6.0])


def test_dlpack_inputs_and_outputs():
    torch = pytest.importorskip("torch")
    f = kiln.compile(SCALE, backend="cpu")
    y = f(torch.arange(6, dtype=torch.float32).reshape(2, 3), torch.tensor(2.0))
    back = torch.from_dlpack(y)  # the result's memory, no copy
    assert back.data_ptr() == y.__array_interface__["data"][0]
    assert back.tolist() == [6.0, 24.0]


def test_dumps_and_kernels():
    f = kiln.compile(SCALE, backend="cpu")
    assert "func @main" in f.dump("kiln")
    assert "define" in f.dump("llvm")
    assert f.dump("asm")
    assert f.kernels
    with pytest.raises(kiln.KilnError, match="unknown stage"):
        f.dump("bytecode")


def test_errors_raise_kiln_errors_with_kilns_message():
    with pytest.raises(kiln.KilnError, match=r"bad\.kiln:2:"):
        kiln.compile(kiln.parse("func @main(%x: f32[2]) -> f32[2] {\n  %y = frobnicate %x\n  return %y\n}\n",
                                "bad.kiln"))
    f = kiln.compile(SCALE, backend="cpu")
    with pytest.raises(kiln.KilnError, match=r"f64\[2,3\]"):
        f(np.zeros((2, 3)), np.float32(1))  # float64 where f32 is wanted
    with pytest.raises(kiln.KilnError, match="takes 2 inputs, got 1"):
        f(np.zeros((2, 3), np.float32))
    with pytest.raises(kiln.KilnError, match="unknown backend 'tpu'"):
        kiln.compile(SCALE, backend="tpu")
    with pytest.raises(kiln.KilnError, match="no_such_file.kiln"):
        kiln.compile("no_such_file.kiln")
    with pytest.raises(TypeError):
        kiln.compile(42)


def test_train_step_learns_and_checkpoints(tmp_path):
    step = kiln.train_step(os.path.join(ROOT, "examples", "train", "mlp_classifier.kiln"),
                           ["w1", "b1", "w2", "b2", "w3", "b3"], "adam", batch=64)
    assert step.data_names == ["x", "y"]
    rng = np.random.default_rng(0)
    step.params = {name: (0.3 * rng.standard_normal(value.shape)).astype(np.float32)
                   for name, value in step.params.items()}
    losses = []
    for _ in range(60):
        x = rng.uniform(-1, 1, (64, 2)).astype(np.float32)
        y = (x.sum(axis=1) > 0).astype(np.int32)
        loss, (accuracy,) = step(x, y, lr=0.01)
        losses.append(loss)
    assert losses[-1] < losses[0] / 3, losses
    assert step.step_count == 60
    step.save(tmp_path / "ckpt")
    again = kiln.train_step(os.path.join(ROOT, "examples", "train", "mlp_classifier.kiln"),
                            ["w1", "b1", "w2", "b2", "w3", "b3"], "adam", batch=64)
    again.load(tmp_path / "ckpt")
    for name, value in step.params.items():
        np.testing.assert_array_equal(again.params[name], value)
    with pytest.raises(kiln.KilnError, match="no value for parameter"):
        again.params = {"w1": np.zeros((2, 64), np.float32)}


def test_version():
    assert kiln.__version__ == kiln.version() and kiln.__version__.count(".") == 2


def test_function_builder():
    b = kiln.FunctionBuilder("main")
    x = b.param(kiln.f32, [8, 16], "x")
    assert x.shape == (8, 16) and x.dtype == kiln.f32
    y = b.op("reduce_sum", b.op("mul", x, b.scalar("f32", 2.0)), axes=[1], keepdims=True)
    h = b.op("cast", y, to=kiln.f16)
    e = b.op("layer_norm", x, b.constant(np.ones(16, np.float32)), b.constant(np.zeros(16, np.float32)),
             axis=1, epsilon=1e-3)
    g = b.finish(y, h, e)
    assert "epsilon = 0.001" in g.text and "to = f16" in g.text
    ys, hs, es = kiln.compile(g, "cpu")(np.ones((8, 16), np.float32))
    np.testing.assert_array_equal(ys.ravel(), [32] * 8)
    assert hs.dtype == np.float16 and es.shape == (8, 16)
    # The first error is kept; attributes of other kinds are refused at once.
    c = kiln.FunctionBuilder()
    p = c.param("f32", [2], "p")
    assert not c.op("frobnicate", p)
    assert not c.op("neg", c.op("frobnicate", p))
    with pytest.raises(kiln.KilnError, match="unknown op 'frobnicate'"):
        c.finish(p)
    with pytest.raises(kiln.KilnError, match="attribute axes: expected"):
        c.op("reduce_sum", p, axes={"a": 1})
    with pytest.raises(kiln.KilnError, match="unknown dtype 'f33'"):
        c.param("f33", [2])


def test_placed_across_devices_and_pipelined_training():
    graph = kiln.load(os.path.join(ROOT, "examples", "mlp.kiln"))
    inputs = graph.random_inputs(5)
    one = kiln.compile(graph, "cpu")
    two = kiln.compile(graph, "cpu", devices=2, split=True)
    np.testing.assert_array_equal(two(*inputs), one(*inputs))
    assert "transfer" in two.dump("kiln")
    with pytest.raises(kiln.KilnError, match="set devices"):
        kiln.compile(graph, "cpu", split=True)
    source = os.path.join(ROOT, "examples", "train", "mlp_classifier.kiln")
    names = ["w1", "b1", "w2", "b2", "w3", "b3"]
    plain = kiln.train_step(source, names, "sgd", batch=32, accumulate=2)
    piped = kiln.train_step(source, names, "sgd", batch=32, accumulate=2, devices=2, split=True, pipeline=True)
    rng = np.random.default_rng(1)
    start = {name: (0.3 * rng.standard_normal(value.shape)).astype(np.float32) for name, value in plain.params.items()}
    plain.params = start
    piped.params = start
    x = rng.uniform(-1, 1, (32, 2)).astype(np.float32)
    y = (x.sum(axis=1) > 0).astype(np.int32)
    assert plain(x, y, lr=0.1) == piped(x, y, lr=0.1)


def test_a_forked_child_runs_compiled_functions():
    # libgomp's threads (kiln's kernels and oneDNN run on them) do not survive fork(); a child
    # runs on one thread instead of waiting for them forever (multiprocessing's default on Linux).
    f = kiln.compile("""
func @main(%a: f32[256,256], %b: f32[256,256]) -> f32[256,256] {
  %m = matmul %a, %b
  %y = tanh %m
  return %y
}
""", backend="cpu")
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 256, 256), dtype=np.float32)
    want = f(a, b)
    pid = os.fork()
    if pid == 0:
        os._exit(0 if np.array_equal(f(a, b), want) else 1)
    deadline_ok = False
    for _ in range(600):  # 60 s
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            deadline_ok = True
            break
        time.sleep(0.1)
    if not deadline_ok:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    assert deadline_ok, "the forked child hung"
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, "the child's results differ"
    np.testing.assert_array_equal(f(a, b), want)  # the parent's threads still work
