#!/usr/bin/env python3
"""NumPy reference implementations for kiln's differential tests (tests/lit/run/).

  numpy_reference.py make MODEL DIR    writes the inputs, DIR/<param>.npy (fixed seed), and
                                       NumPy's results, DIR/expected_<i>.npy
  numpy_reference.py check MODEL DIR   compares kiln's DIR/out/result_<i>.npy (from
                                       `kiln run ... --out DIR/out`) with the expected results;
                                       prints one line per result, then "ok: MODEL" or a
                                       mismatch report (and exits 1)
  numpy_reference.py finite DIR...     checks that every DIR/result_<i>.npy is free of NaN and inf
  numpy_reference.py same A B          checks that A/result_<i>.npy and B/result_<i>.npy agree
                                       (two backends' runs of one program, NaN where NaN), within
                                       the result dtype's tolerance below
  numpy_reference.py list              lists the models

Every model here is written from its definition (the header comment of examples/*.kiln, or
SPEC.md for the single-op tests), in float64, without looking at kiln's code: the two
implementations check each other. Inputs are realistic (scaled weights, pixel-like images,
valid labels) so that results are well-conditioned and the tolerances can stay tight.
"""

import os
import sys
import zlib

try:
    import numpy as np
except ImportError:
    sys.exit("error: numpy_reference.py needs NumPy, which is not installed here: pip install numpy")

# Relative and absolute tolerances per result dtype: |kiln - numpy| <= atol + rtol * |numpy|.
# The reference is computed in float64 and rounded once to the result dtype; kiln rounds at every
# op (and f16 ops compute in f32 then round), so the bound allows a few ulps of the result dtype.
TOLERANCES = {
    "float64": (1e-12, 1e-14),
    "float32": (1e-5, 1e-6),
    "float16": (4e-3, 1e-3),
}

MODELS = {}


def model(name, **tolerance_overrides):
    """Registers build(rng) -> (inputs: dict name -> array, expected: list of arrays)."""
    def register(build):
        MODELS[name] = (build, tolerance_overrides)
        return build
    return register


def f32(a):
    return np.asarray(a, dtype=np.float32)


def f64(a):
    return np.asarray(a, dtype=np.float64)


# --- building blocks, float64 --------------------------------------------------------------

def softmax(z, axis=-1):
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(z, axis=-1):
    m = z.max(axis=axis, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(axis=axis, keepdims=True))


def layer_norm(x, scale, bias, axis=-1, eps=1e-5):
    axes = tuple(range(axis % x.ndim, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * scale + bias


def conv2d(x, w, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), groups=1):
    """Cross-correlation as ONNX Conv; pads are (top, left, bottom, right)."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    assert c == cg * groups and o % groups == 0
    top, left, bottom, right = pads
    xp = np.zeros((n, c, h + top + bottom, wd + left + right))
    xp[:, :, top:top + h, left:left + wd] = x
    sh, sw = strides
    dh, dw = dilations
    oh = (xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
    og = o // groups
    y = np.zeros((n, o, oh, ow))
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        ws = w[g * og:(g + 1) * og]
        for i in range(kh):
            for j in range(kw):
                window = xs[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
                y[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", window, ws[:, :, i, j])
    return y


def pool2d(x, kernel, strides=None, pads=(0, 0, 0, 0), kind="max"):
    """Max or average pooling; the average counts only real (unpadded) elements."""
    n, c, h, w = x.shape
    kh, kw = kernel
    sh, sw = strides or kernel
    top, left, bottom, right = pads
    hp, wp = h + top + bottom, w + left + right
    values = np.full((n, c, hp, wp), -np.inf if kind == "max" else 0.0)
    values[:, :, top:top + h, left:left + w] = x
    real = np.zeros((hp, wp))
    real[top:top + h, left:left + w] = 1
    oh, ow = (hp - kh) // sh + 1, (wp - kw) // sw + 1
    acc = np.full((n, c, oh, ow), -np.inf) if kind == "max" else np.zeros((n, c, oh, ow))
    count = np.zeros((oh, ow))
    for i in range(kh):
        for j in range(kw):
            window = values[:, :, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw]
            acc = np.maximum(acc, window) if kind == "max" else acc + window
            count += real[i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw]
    return acc if kind == "max" else acc / count


def onnx_slice(x, starts, ends, axes=None, steps=None):
    """ONNX Slice: negative starts/ends count from the end, then clamp; steps may be negative."""
    axes = list(range(len(starts))) if axes is None else [a % x.ndim for a in axes]
    steps = [1] * len(starts) if steps is None else steps
    index = [slice(None)] * x.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps):
        dim = x.shape[axis]
        start = start + dim if start < 0 else start
        end = end + dim if end < 0 else end
        if step > 0:
            start, end = min(max(start, 0), dim), min(max(end, 0), dim)
        else:
            start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
        # Python reads a stop of -1 as "the last element"; ONNX means "before index 0".
        index[axis] = slice(start, None if end < 0 else end, step)
    return x[tuple(index)]


def gather(x, indices, axis=0):
    """ONNX Gather: out[..., idx..., ...] = x[..., indices[idx] wrapped, ...]."""
    axis %= x.ndim
    dim = x.shape[axis]
    assert np.all((indices >= -dim) & (indices < dim))
    return np.take(x, np.where(indices < 0, indices + dim, indices), axis=axis)


def weights(rng, fan_in, shape):
    """He-style initialisation: activations stay O(1) through the layers."""
    return f32(rng.normal(0.0, np.sqrt(2.0 / fan_in), shape))


def assert_margin(z, axis=-1, margin=1e-3):
    """Checks that the top two entries differ clearly, so argmax cannot flip on rounding."""
    top2 = np.sort(z, axis=axis)[..., -2:] if axis in (-1, z.ndim - 1) else None
    assert top2 is not None and np.all(top2[..., 1] - top2[..., 0] > margin), "argmax too close to a tie; change the seed"


# --- the examples (examples/*.kiln) ---------------------------------------------------------

@model("mlp")
def mlp(rng):
    x = f32(rng.uniform(0.0, 1.0, (32, 784)))  # pixel intensities
    w1, b1 = weights(rng, 784, (784, 128)), f32(rng.normal(0.0, 0.1, 128))
    w2, b2 = weights(rng, 128, (128, 10)), f32(rng.normal(0.0, 0.1, 10))
    h = np.maximum(f64(x) @ f64(w1) + f64(b1), 0.0)
    y = softmax(h @ f64(w2) + f64(b2), axis=1)
    return dict(x=x, w1=w1, b1=b1, w2=w2, b2=b2), [y]


# Dot products 784 long: a backend that accumulates in f32 may be off by a few 1e-6 on O(1) logits.
@model("cnn", atol=1e-5)
def cnn(rng):
    x = f32(rng.uniform(0.0, 1.0, (8, 1, 28, 28)))
    w1, b1 = weights(rng, 9, (8, 1, 3, 3)), f32(rng.normal(0.0, 0.1, 8))
    w2, b2 = weights(rng, 72, (16, 8, 3, 3)), f32(rng.normal(0.0, 0.1, 16))
    w3, b3 = weights(rng, 784, (784, 10)), f32(rng.normal(0.0, 0.1, 10))
    a = np.maximum(conv2d(f64(x), f64(w1), pads=(1, 1, 1, 1)) + f64(b1)[:, None, None], 0.0)
    a = pool2d(a, (2, 2))
    a = np.maximum(conv2d(a, f64(w2), pads=(1, 1, 1, 1)) + f64(b2)[:, None, None], 0.0)
    a = pool2d(a, (2, 2), strides=(2, 2))
    logits = a.reshape(8, 784) @ f64(w3) + f64(b3)
    return dict(x=x, w1=w1, b1=b1, w2=w2, b2=b2, w3=w3, b3=b3), [logits]


@model("layer_norm")
def layer_norm_model(rng):
    x = f32(rng.normal(0.5, 2.0, (4, 16, 64)))
    scale, bias = f32(rng.uniform(0.5, 1.5, 64)), f32(rng.normal(0.0, 0.1, 64))
    return dict(x=x, scale=scale, bias=bias), [layer_norm(f64(x), f64(scale), f64(bias), eps=1e-5)]


@model("softmax")
def softmax_model(rng):
    logits = f32(rng.normal(0.0, 3.0, (16, 100)))
    return dict(logits=logits), [softmax(f64(logits) / 0.5, axis=-1)]


@model("map_cubic_sin")
def map_cubic_sin(rng):
    xs = f32(rng.uniform(-1.0, 1.0, (8, 16)))
    return dict(xs=xs), [f64(xs) ** 3 + np.sin(f64(xs))]


@model("while_sqrt")
def while_sqrt(rng):
    xs = f32(rng.uniform(-1.0, 1.0, (8, 16)))
    xs[0, 0] = 0.0  # sqrt(0) stays 0
    return dict(xs=xs), [np.abs(f64(xs)) ** (1.0 / 32.0)]


@model("cross_entropy")
def cross_entropy(rng):
    x = f32(rng.normal(0.0, 1.0, (32, 64)))
    w, b = weights(rng, 64, (64, 10)), f32(rng.normal(0.0, 0.1, 10))
    labels = rng.integers(0, 10, 32).astype(np.int64)
    logits = f64(x) @ f64(w) + f64(b)
    loss = np.mean(-log_softmax(logits, axis=1)[np.arange(32), labels])
    return dict(x=x, w=w, b=b, labels=labels), [np.array(loss)]


@model("attention", atol=1e-5)
def attention(rng):
    x = f32(rng.normal(0.0, 1.0, (2, 16, 32)))
    wq, wk, wv, wo = (f32(rng.normal(0.0, 1.0 / np.sqrt(32), (32, 32))) for _ in range(4))
    gamma, beta = f32(rng.uniform(0.5, 1.5, 32)), f32(rng.normal(0.0, 0.1, 32))
    X = f64(x)
    q, k, v = X @ f64(wq), X @ f64(wk), X @ f64(wv)
    scores = np.einsum("bqd,bkd->bqk", q, k) / np.sqrt(32.0)
    a = np.einsum("bqk,bkd->bqd", softmax(scores, axis=-1), v)
    y = layer_norm(X + a @ f64(wo), f64(gamma), f64(beta))
    return dict(x=x, wq=wq, wk=wk, wv=wv, wo=wo, gamma=gamma, beta=beta), [y]


@model("embedding")
def embedding(rng):
    table = f32(rng.normal(0.0, 1.0, (100, 16)))
    ids = rng.integers(0, 100, (4, 12)).astype(np.int64)
    w, b = weights(rng, 16, (16, 3)), f32(rng.normal(0.0, 0.1, 3))
    h = np.stack([f64(table)[row].mean(axis=0) for row in ids])  # bag of words
    logits = h @ f64(w) + f64(b)
    assert_margin(logits)
    return dict(table=table, ids=ids, w=w, b=b), [np.argmax(logits, axis=1).astype(np.int64), log_softmax(logits)]


@model("elementwise_chain")
def elementwise_chain(rng):
    x, r = f32(rng.normal(size=(512, 1024))), f32(rng.normal(size=(512, 1024)))
    b, s = f32(rng.normal(0.0, 0.1, 1024)), f32(1.7)
    a = f64(x) + f64(b)
    gate = np.tanh(a * f64(s)) * 0.5 + 0.5
    y = np.maximum(gate * a + f64(r), 0.5)
    return dict(x=x, b=b, r=r, s=s), [y]


ADAM_SHAPES = [(256, 128), (128,), (128, 10), (10,)]


# sqrt(v) of small v amplifies rounding: compare with a tolerance relative to the step.
@model("adam_update", rtol=1e-5, atol=1e-6)
def adam_update(rng):
    inputs, expected = {}, []
    b1, b2, lr, eps = 0.9, 0.999, 0.001, 1e-8
    for i, shape in enumerate(ADAM_SHAPES, start=1):
        p, g = f32(rng.normal(size=shape)), f32(rng.normal(size=shape))
        m, v = f32(rng.normal(0.0, 0.1, shape)), f32(rng.uniform(0.01, 1.0, shape))
        inputs.update({f"p{i}": p, f"g{i}": g, f"m{i}": m, f"v{i}": v})
        m2 = b1 * f64(m) + (1 - b1) * f64(g)
        v2 = b2 * f64(v) + (1 - b2) * f64(g) ** 2
        expected += [f64(p) - lr * m2 / (np.sqrt(v2) + eps), m2, v2]
    return inputs, expected


# --- single ops (tests/lit/run/op_*.kiln) ---------------------------------------------------

@model("op_broadcast")
def op_broadcast(rng):
    a = f32(rng.normal(size=(4, 1, 3)))
    b = f32(rng.normal(size=(5, 1)))
    c = f32(rng.normal(size=()))
    s = f64(a) + f64(b)  # [4,5,3]
    return dict(a=a, b=b, c=c), [s, s * f64(c), f64(b) - f64(a)]


@model("op_matmul")
def op_matmul(rng):
    a = f32(rng.normal(size=(2, 1, 3, 4)))
    b = f32(rng.normal(size=(5, 4, 6)))
    v = f32(rng.normal(size=4))
    return dict(a=a, b=b, v=v), [np.matmul(f64(a), f64(b)), np.matmul(f64(v), f64(b)), np.matmul(f64(a), f64(v)),
                                 np.dot(f64(v), f64(v))]


@model("op_conv2d")
def op_conv2d(rng):
    x = f32(rng.normal(size=(2, 4, 9, 10)))
    w = f32(rng.normal(size=(6, 2, 3, 3)))
    dw = f32(rng.normal(size=(4, 1, 2, 2)))
    y = conv2d(f64(x), f64(w), strides=(2, 1), pads=(1, 0, 2, 1), dilations=(1, 2), groups=2)
    depthwise = conv2d(f64(x), f64(dw), strides=(2, 3), groups=4)
    return dict(x=x, w=w, dw=dw), [y, depthwise]


@model("op_conv2d_nhwc")
def op_conv2d_nhwc(rng):
    """conv2d {layout = "nhwc"}: the channels-first convolution of x's channels-first view, its
    result channels-last."""
    x = f32(rng.normal(size=(2, 9, 10, 4)))
    w = f32(rng.normal(size=(6, 2, 3, 3)))
    dw = f32(rng.normal(size=(4, 1, 3, 3)))
    b = f32(rng.normal(size=(6,)))
    db = f32(rng.normal(size=(4,)) * 4)  # shifts the depthwise results past 6 and below 0 both
    nchw = f64(x).transpose(0, 3, 1, 2)
    y = conv2d(nchw, f64(w), strides=(2, 1), pads=(1, 2, 1, 2), dilations=(1, 2), groups=2).transpose(0, 2, 3, 1)
    depthwise = conv2d(nchw, f64(dw), strides=(2, 2), pads=(1, 1, 1, 1), groups=4).transpose(0, 2, 3, 1)
    same = conv2d(nchw, f64(dw), strides=(1, 1), pads=(1, 1, 1, 1), groups=4).transpose(0, 2, 3, 1)
    relu6 = np.minimum(np.maximum(same + f64(db), 0), 6)
    assert (relu6 == 0).any() and (relu6 == 6).any(), "the relu6 case clips on neither side"
    return dict(x=x, w=w, dw=dw, b=b, db=db), [np.maximum(y + f64(b), 0), depthwise, relu6]


@model("op_pool")
def op_pool(rng):
    x = f32(rng.normal(size=(2, 3, 7, 8)))
    args = dict(kernel=(3, 2), strides=(2, 2), pads=(1, 1, 1, 0))
    return dict(x=x), [pool2d(f64(x), kind="max", **args), pool2d(f64(x), kind="avg", **args)]


@model("op_pool_nhwc")
def op_pool_nhwc(rng):
    """max_pool2d and avg_pool2d {layout = "nhwc"}: the pools of x's channels-first view, their
    results channels-last; padded windows (bounds tests) and an unpadded strided one (none)."""
    x = f32(rng.normal(size=(2, 7, 8, 5)))
    nchw = f64(x).transpose(0, 3, 1, 2)
    args = dict(kernel=(3, 2), strides=(2, 2), pads=(1, 1, 1, 0))
    last = lambda y: y.transpose(0, 2, 3, 1)
    return dict(x=x), [last(pool2d(nchw, kind="max", **args)), last(pool2d(nchw, kind="avg", **args)),
                       last(pool2d(nchw, kind="max", kernel=(3, 3), strides=(2, 2), pads=(0, 0, 0, 0)))]


@model("op_slice")
def op_slice(rng):
    x = f32(rng.normal(size=(6, 8)))
    return dict(x=x), [onnx_slice(x, starts=[5, -1], ends=[0, -100], axes=[0, 1], steps=[-2, -3]),
                       onnx_slice(x, starts=[1], ends=[1000], axes=[-1], steps=[3]),
                       onnx_slice(x, starts=[-2, 100], ends=[-1000, 2], axes=[0, 1], steps=[-1, -2])]


@model("op_gather")
def op_gather(rng):
    x = f32(rng.normal(size=(5, 3)))
    rows = np.array([[0, -1], [4, -5]], dtype=np.int64)
    cols = np.array([-1, 0, 2, 2], dtype=np.int32)
    return dict(x=x, rows=rows, cols=cols), [gather(x, rows, axis=0), gather(x, cols, axis=1)]


@model("op_int")
def op_int(rng):
    a = np.array([7, -7, 7, -7, 0, 2147483647, -2147483648, 5], dtype=np.int32)
    b = np.array([2, 2, -2, -2, 3, 2, 3, -1], dtype=np.int32)
    x = f32([2.7, -2.7, 0.5, -0.5, 1e10, -1e10, 100.0, -0.0])
    quotient = np.trunc(a.astype(np.float64) / b).astype(np.int32)  # int div truncates toward zero
    truncated = np.clip(np.trunc(f64(x)), -2**31, 2**31 - 1).astype(np.int32)  # float->int cast saturates
    return dict(a=a, b=b, x=x), [quotient, truncated]


@model("op_unsigned")
def op_unsigned(rng):
    # Values above the signed range, where unsigned semantics differ; shift amounts past the width.
    a = np.array([200, 255, 7, 128, 0, 1, 99, 250], np.uint8)
    b = np.array([3, 16, 200, 2, 1, 9, 8, 250], np.uint8)
    u = np.array([2**64 - 1, 2**63, 5, 1], np.uint64)
    v = np.array([2, 3, 2**63, 64], np.uint64)
    s = np.array([-32768, -5, 32767, 1], np.int16)
    k = np.array([1, 15, 2, 16], np.int16)
    x = f32([-0.9, 0.5, 0.0, 1.0])
    return dict(a=a, b=b, u=u, v=v, s=s, k=k, x=x), [
        a // b, np.maximum(a, b), a < b, np.left_shift(a, b), u // v, np.right_shift(u, v),
        np.right_shift(s, k), u.astype(np.float32), np.arcsin(f64(x)), np.arccos(f64(x)), np.arctan(f64(x))]


@model("op_reduce")
def op_reduce(rng):
    x = f32(rng.normal(size=(3, 4, 5)))
    t = rng.integers(0, 3, (4, 6)).astype(np.int32)  # small values: argmax must pick the first of ties
    return dict(x=x, t=t), [f64(x).sum(axis=(0, 2), keepdims=True), f64(x).max(axis=-1), np.argmax(t, axis=1),
                            f64(x).mean(), np.argmin(f64(x), axis=0)]


@model("op_f16")
def op_f16(rng):
    a = rng.normal(size=(4, 8)).astype(np.float16)
    b = rng.normal(size=8).astype(np.float16)
    s = (a + b).astype(np.float16)  # NumPy, like kiln, computes f16 in f32 and rounds each result
    return dict(a=a, b=b), [s, np.exp(f64(s)), np.tanh(f64(s))]


# --- driver ---------------------------------------------------------------------------------

def build(name):
    if name not in MODELS:
        sys.exit(f"error: unknown model '{name}'; models: {', '.join(sorted(MODELS))}")
    builder, overrides = MODELS[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    inputs, expected = builder(rng)
    return inputs, expected, overrides


def result_dtype(expected, inputs):
    """kiln's results keep their inputs' precision: float64 references round to the inputs' float dtype."""
    expected = np.asarray(expected)
    if expected.dtype != np.float64:
        return expected.dtype
    floats = {a.dtype for a in inputs.values() if np.issubdtype(a.dtype, np.floating)}
    return floats.pop() if len(floats) == 1 else np.dtype(np.float32)


def make(name, folder):
    inputs, expected, _ = build(name)
    os.makedirs(folder, exist_ok=True)
    for param, value in inputs.items():
        np.save(os.path.join(folder, f"{param}.npy"), np.asarray(value))
    for i, value in enumerate(expected):
        np.save(os.path.join(folder, f"expected_{i}.npy"), np.asarray(value).astype(result_dtype(value, inputs)))


def describe(a):
    short = {"float16": "f16", "float32": "f32", "float64": "f64", "int8": "i8", "int16": "i16", "int32": "i32",
             "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "bool"}
    return f"{short.get(a.dtype.name, a.dtype.name)}[{','.join(str(d) for d in a.shape)}]"


def compare(index, got, want, overrides):
    """Returns the lines to print and whether the result matches."""
    head = f"result_{index}: {describe(want)}"
    if got.dtype != want.dtype or got.shape != want.shape:
        return [f"{head} MISMATCH: kiln returned {describe(got)}"], False
    if not np.issubdtype(want.dtype, np.floating):
        bad = np.argwhere(got != want)
        if len(bad) == 0:
            return [f"{head} ok (exact)"], True
        lines = [f"{head} MISMATCH: {len(bad)} of {want.size} elements differ"]
        for idx in bad[:5]:
            idx = tuple(int(i) for i in idx)
            lines.append(f"  at {list(idx)}: kiln {got[idx].item()!r}, numpy {want[idx].item()!r}")
        return lines, False
    rtol, atol = TOLERANCES[want.dtype.name]
    rtol, atol = overrides.get("rtol", rtol), overrides.get("atol", atol)
    g, w = got.astype(np.float64), want.astype(np.float64)
    same_special = (np.isnan(g) & np.isnan(w)) | (np.isinf(w) & (g == w))
    finite = np.isfinite(w) & np.isfinite(g)
    err = np.where(finite, np.abs(g - w), 0.0)
    ok = same_special | (finite & (err <= atol + rtol * np.abs(w)))
    max_abs = float(err.max()) if err.size else 0.0
    rel = np.where(finite & (w != 0), err / np.where(w == 0, 1.0, np.abs(w)), 0.0)
    max_rel = float(rel.max()) if rel.size else 0.0
    stats = f"max abs error {max_abs:.2g}, max rel error {max_rel:.2g}; rtol {rtol:g}, atol {atol:g}"
    if ok.all():
        return [f"{head} ok ({stats})"], True
    bad = np.argwhere(~ok)
    lines = [f"{head} MISMATCH: {len(bad)} of {want.size} elements outside tolerance ({stats})"]
    for idx in bad[:5]:
        idx = tuple(int(i) for i in idx)
        lines.append(f"  at {list(idx)}: kiln {float(g[idx])!r}, numpy {float(w[idx])!r}")
    return lines, False


def check(name, folder):
    _, expected, overrides = build(name)
    out = os.path.join(folder, "out")
    all_ok = True
    for i in range(len(expected)):
        want = np.load(os.path.join(folder, f"expected_{i}.npy"))
        path = os.path.join(out, f"result_{i}.npy")
        if not os.path.exists(path):
            print(f"result_{i}: {describe(want)} MISSING: kiln wrote no {path}")
            all_ok = False
            continue
        lines, ok = compare(i, np.load(path), want, overrides)
        print("\n".join(lines))
        all_ok &= ok
    extra = os.path.join(out, f"result_{len(expected)}.npy")
    if os.path.exists(extra):
        print(f"MISMATCH: kiln returned more results than the {len(expected)} NumPy computes ({extra})")
        all_ok = False
    if not all_ok:
        print(f"FAILED: {name}: kiln and NumPy disagree")
        return 1
    print(f"ok: {name}: {len(expected)} result(s) match NumPy")
    return 0


def finite(folders):
    all_ok = True
    for folder in folders:
        names = sorted((f for f in os.listdir(folder) if f.startswith("result_") and f.endswith(".npy")),
                       key=lambda f: int(f[len("result_"):-len(".npy")]))
        if not names:
            print(f"{folder}: MISSING: no result_<i>.npy")
            all_ok = False
        for f in names:
            a = np.load(os.path.join(folder, f))
            bad = int(np.count_nonzero(~np.isfinite(a))) if np.issubdtype(a.dtype, np.floating) else 0
            where = f"{os.path.basename(os.path.normpath(folder))}/{f}: {describe(a)}"
            print(f"{where} finite" if bad == 0 else f"{where} NOT FINITE: {bad} of {a.size} elements are NaN or inf")
            all_ok &= bad == 0
    return 0 if all_ok else 1


def same(a_dir, b_dir):
    names = sorted(f for f in os.listdir(a_dir) if f.startswith("result_") and f.endswith(".npy"))
    if not names:
        print(f"{a_dir}: MISSING: no result_<i>.npy")
        return 1
    all_ok = True
    for f in names:
        a = np.load(os.path.join(a_dir, f))
        b_path = os.path.join(b_dir, f)
        if not os.path.exists(b_path):
            print(f"{f}: MISSING in {b_dir}")
            all_ok = False
            continue
        b = np.load(b_path)
        where = f"{os.path.basename(os.path.normpath(a_dir))}/{f}: {describe(a)}"
        if a.dtype != b.dtype or a.shape != b.shape:
            print(f"{where} DIFFERS: {describe(b)} in {b_dir}")
            all_ok = False
            continue
        if np.issubdtype(a.dtype, np.floating):
            rtol, atol = TOLERANCES[str(a.dtype)]
            close = np.isclose(b.astype(np.float64), a.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)
        else:
            close = a == b
        bad = int(np.count_nonzero(~close))
        print(f"{where} same" if bad == 0 else f"{where} DIFFERS in {bad} of {a.size} elements")
        all_ok &= bad == 0
    return 0 if all_ok else 1


def main(argv):
    if len(argv) >= 3 and argv[1] == "finite":
        return finite(argv[2:])
    if len(argv) == 4 and argv[1] == "same":
        return same(argv[2], argv[3])
    if len(argv) == 2 and argv[1] == "list":
        print("\n".join(sorted(MODELS)))
        return 0
    if len(argv) != 4 or argv[1] not in ("make", "check"):
        sys.exit(__doc__)
    if argv[1] == "make":
        make(argv[2], argv[3])
        return 0
    return check(argv[2], argv[3])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
