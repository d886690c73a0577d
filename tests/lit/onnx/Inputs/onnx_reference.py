#!/usr/bin/env python3
"""Differential tests of ONNX ops that kiln imports as decompositions, beyond the ONNX node tests:
attribute combinations and inputs the node tests do not cover (3-D windows with pads, strides,
dilations and ceil_mode, ties, infinities and NaN, duplicate and negative indices, singular
matrices, samples far outside the image, ...).

  onnx_reference.py CASES DIR --backend B --encode "PROTOC --encode=onnx.ModelProto ..."

For each case (CASES: comma-separated names, or all) writes its model (as text, encoded with the
given protoc command) and inputs (.npy) to DIR, runs `kiln run` on backend B and compares kiln's
results with the NumPy reference below: prints "ok CASE" or the first mismatch, then a count
(and exits 1 if any failed). `onnx_reference.py list` lists the cases.

Each reference is written from the operator's definition in ONNX's Operators.md and its
reference implementation's semantics, in float64 with plain loops, without looking at kiln's
decomposition: the two check each other. Where ONNX leaves NaN open, the reference follows kiln's
documented choice (a NaN wins a max, as in np.maximum).
"""

import itertools
import os
import shlex
import subprocess
import sys

import numpy as np

CASES = {}
ELEM = {np.dtype("float32"): 1, np.dtype("int8"): 3, np.dtype("int64"): 7, np.dtype("float64"): 11}


def case(name):
    def register(build):
        CASES[name] = build
        return build
    return register


# --- models as ONNX text format ----------------------------------------------------------

def attr_text(name, v):
    if isinstance(v, str):
        return 'attribute { name: "%s" s: "%s" type: STRING }' % (name, v)
    if isinstance(v, float):
        return 'attribute { name: "%s" f: %r type: FLOAT }' % (name, v)
    if isinstance(v, int):
        return 'attribute { name: "%s" i: %d type: INT }' % (name, v)
    return 'attribute { name: "%s" ints: [%s] type: INTS }' % (name, ", ".join(str(int(i)) for i in v))


def tensor_text(name, a):
    dims = " ".join("dims: %d" % d for d in a.shape)
    field = "int64_data" if a.dtype == np.int64 else "double_data" if a.dtype == np.float64 else "float_data"
    values = ", ".join(repr(float(v)) if a.dtype != np.int64 else str(int(v)) for v in a.ravel())
    return 'initializer { name: "%s" data_type: %d %s %s: [%s] }' % (name, ELEM[a.dtype], dims, field, values)


def model_text(op, inputs, outputs, attrs, initializers=None, opset=17):
    """inputs: [(name, array)] given at run time, or (name, None) for an absent optional input."""
    initializers = initializers or {}
    node_inputs = " ".join('input: "%s"' % n for n, _ in inputs)
    node_outputs = " ".join('output: "%s"' % n for n in outputs)
    lines = ['ir_version: 8', 'opset_import { domain: "" version: %d }' % opset, 'graph {', '  name: "case"',
             '  node { op_type: "%s" %s %s %s }' % (op, node_inputs, node_outputs, " ".join(attr_text(k, v) for k, v in attrs.items()))]
    for name, a in initializers.items():
        lines.append("  " + tensor_text(name, a))
    for name, a in inputs:
        if a is None or name in initializers or name == "":
            continue
        dims = " ".join("dim { dim_value: %d }" % d for d in a.shape)
        lines.append('  input { name: "%s" type { tensor_type { elem_type: %d shape { %s } } } }' % (name, ELEM[a.dtype], dims))
    for name in outputs:
        lines.append('  output { name: "%s" type { tensor_type { elem_type: 1 } } }' % name)
    lines.append("}")
    return "\n".join(lines) + "\n"


# --- references ----------------------------------------------------------------------------

def out_size(size, k, s, pb, pe, d, ceil):
    extent = (k - 1) * d + 1
    span = size + pb + pe - extent
    if not ceil:
        return span // s + 1
    o = -(-span // s) + 1
    return o - 1 if (o - 1) * s >= size + pb else o


def windows(x, kernel, strides, pads, dilations, ceil):
    """The output shape, then per output position (b, c, o) its taps: (coordinates, real, inside
    the pads), in row-major window order."""
    n = len(kernel)
    dilations = dilations or [1] * n
    sp = x.shape[2:]
    out = [out_size(sp[i], kernel[i], strides[i], pads[i], pads[i + n], dilations[i], ceil) for i in range(n)]

    def positions():
        for b, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
            for o in itertools.product(*map(range, out)):
                taps = []
                for t in itertools.product(*map(range, kernel)):
                    at = [o[i] * strides[i] - pads[i] + t[i] * dilations[i] for i in range(n)]
                    real = all(0 <= a < sp[i] for i, a in enumerate(at))
                    inside_pads = all(-pads[i] <= a < sp[i] + pads[i + n] for i, a in enumerate(at))
                    taps.append((at, real, inside_pads))
                yield (b, c) + o, taps

    return x.shape[:2] + tuple(out), positions()


def max_pool(x, kernel, strides, pads, dilations=None, ceil=0, storage_order=0):
    n = len(kernel)
    sp = x.shape[2:]
    shape, positions = windows(x, kernel, strides, pads, dilations, ceil)
    y = np.zeros(shape, x.dtype)
    idx = np.zeros(shape, np.int64)
    mult = [int(np.prod(sp[i + 1:])) if not storage_order else int(np.prod(sp[:i])) for i in range(n)]
    for where_out, taps in positions:
        best, where = None, None
        for at, real, _ in taps:
            if not real:
                continue
            v = x[where_out[:2] + tuple(at)]
            if best is None or v > best or (np.isnan(v) and not np.isnan(best)):
                best, where = v, at
        b, c = where_out[:2]
        y[where_out] = best
        idx[where_out] = (b * x.shape[1] + c) * int(np.prod(sp)) + sum(a * m for a, m in zip(where, mult))
    return y, idx


def avg_pool(x, kernel, strides, pads, ceil=0, count_include_pad=0, dilations=None):
    shape, positions = windows(x, kernel, strides, pads, dilations, ceil)
    y = np.zeros(shape)
    for where_out, taps in positions:
        total = sum(float(x[where_out[:2] + tuple(at)]) for at, real, _ in taps if real)
        count = sum(1 for _, real, inside in taps if real or (count_include_pad and inside))
        y[where_out] = total / count
    return y


def lp_pool(x, kernel, strides, pads, p, dilations=None, ceil=0):
    """LpPool: (sum over the window's real elements of |x|^p)^(1/p); padding adds nothing."""
    shape, positions = windows(x, kernel, strides, pads, dilations, ceil)
    y = np.zeros(shape)
    for where_out, taps in positions:
        y[where_out] = sum(abs(float(x[where_out[:2] + tuple(at)])) ** p for at, real, _ in taps if real) ** (1.0 / p)
    return y


def max_unpool(x, idx, kernel, strides, pads, output_shape=None):
    n = len(kernel)
    shape = list(x.shape[:2]) + [(x.shape[2 + i] - 1) * strides[i] - pads[i] - pads[i + n] + kernel[i] for i in range(n)]
    flat = np.zeros(int(np.prod(shape)), x.dtype)
    for v, i in zip(x.ravel(), idx.ravel()):
        flat[i] = v  # NumPy indexing: negative indices count from the end; the last write wins
    y = np.zeros(output_shape if output_shape is not None else shape, x.dtype)
    y[tuple(slice(0, s) for s in shape)] = flat.reshape(shape)
    return y


def conv(x, w, strides, pads, dilations, group):
    n = w.ndim - 2
    sp = x.shape[2:]
    out = [out_size(sp[i], w.shape[2 + i], strides[i], pads[i], pads[i + n], dilations[i], 0) for i in range(n)]
    y = np.zeros((x.shape[0], w.shape[0]) + tuple(out))
    cin = w.shape[1]
    cout = w.shape[0] // group
    for b, oc in itertools.product(range(x.shape[0]), range(w.shape[0])):
        g = oc // cout
        for o in itertools.product(*map(range, out)):
            total = 0.0
            for ic, t in itertools.product(range(cin), itertools.product(*map(range, w.shape[2:]))):
                at = [o[i] * strides[i] - pads[i] + t[i] * dilations[i] for i in range(n)]
                if all(0 <= a < sp[i] for i, a in enumerate(at)):
                    total += x[(b, g * cin + ic) + tuple(at)] * w[(oc, ic) + t]
            y[(b, oc) + o] = total
    return y


def conv_transpose(x, w, strides, pads, dilations, group, output_padding):
    n = w.ndim - 2
    sp = x.shape[2:]
    out = [strides[i] * (sp[i] - 1) + output_padding[i] + (w.shape[2 + i] - 1) * dilations[i] + 1 - pads[i] - pads[i + n]
           for i in range(n)]
    cin = x.shape[1] // group
    cout = w.shape[1]
    y = np.zeros((x.shape[0], cout * group) + tuple(out))
    for b, ci in itertools.product(range(x.shape[0]), range(x.shape[1])):
        g = ci // cin
        for p in itertools.product(*map(range, sp)):
            for oc, t in itertools.product(range(cout), itertools.product(*map(range, w.shape[2:]))):
                at = [p[i] * strides[i] - pads[i] + t[i] * dilations[i] for i in range(n)]
                if all(0 <= a < out[i] for i, a in enumerate(at)):
                    y[(b, g * cout + oc) + tuple(at)] += x[(b, ci) + p] * w[(ci, oc) + t]
    return y


def reflect(v, lo, hi):
    span = hi - lo
    if v < lo:
        d = lo - v
        k, r = int(d / span), d - int(d / span) * span
        return lo + r if k % 2 == 0 else hi - r
    if v > hi:
        d = v - hi
        k, r = int(d / span), d - int(d / span) * span
        return hi - r if k % 2 == 0 else lo + r
    return v


def cubic(t, a=-0.75):
    s = [t + 1, t, 1 - t, 2 - t]
    out = []
    for j, u in enumerate(s):
        out.append(((a + 2) * u - (a + 3)) * u * u + 1 if j in (1, 2) else ((a * u - 5 * a) * u + 8 * a) * u - 4 * a)
    return out


def grid_sample(x, grid, mode, padding, align):
    N, C, H, W = x.shape
    out = np.zeros((N, C) + grid.shape[1:3])
    dims = (H, W)
    lo = [0.0 if align else -0.5] * 2
    hi = [d - 1.0 if align else d - 0.5 for d in dims]

    def pixel(img, i, j):
        at = []
        for v, d, l, h in zip((i, j), dims, lo, hi):
            if padding == "zeros":
                if v < 0 or v >= d:
                    return 0.0
            elif padding == "border":
                v = min(max(v, 0), d - 1)
            else:
                v = int(reflect(float(v), l, h))
            at.append(v)
        return img[at[0], at[1]]

    for b, c, oy, ox in itertools.product(range(N), range(C), range(grid.shape[1]), range(grid.shape[2])):
        gx, gy = grid[b, oy, ox]
        pos = []
        for g, d in ((gy, H), (gx, W)):
            pos.append((g + 1) / 2 * (d - 1) if align else ((g + 1) * d - 1) / 2)
        if mode == "nearest":
            pos = [float(np.rint(p)) for p in pos]
        for k in range(2):
            if pos[k] < lo[k] or pos[k] > hi[k]:
                if padding == "border":
                    pos[k] = min(max(pos[k], 0), dims[k] - 1)
                elif padding == "reflection":
                    pos[k] = reflect(pos[k], lo[k], hi[k])
        img = x[b, c]
        if mode == "nearest":
            out[b, c, oy, ox] = pixel(img, int(pos[0]), int(pos[1]))
            continue
        taps = []
        for p in pos:
            base = int(np.floor(p))
            t = p - base
            if mode == "bilinear":
                taps.append([(base, 1 - t), (base + 1, t)])
            else:
                taps.append(list(zip(range(base - 1, base + 3), cubic(t))))
        out[b, c, oy, ox] = sum(wy * sum(wx * pixel(img, i, j) for j, wx in taps[1]) for i, wy in taps[0])
    return out


def roi_align(x, rois, batch, mode, out_h, out_w, ratio, scale, half_pixel):
    R = rois.shape[0]
    C, H, W = x.shape[1:]
    y = np.zeros((R, C, out_h, out_w))
    for r in range(R):
        off = 0.5 if half_pixel else 0.0
        x1, y1, x2, y2 = [float(v) * scale - off for v in rois[r]]
        rw, rh = x2 - x1, y2 - y1
        if not half_pixel:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / out_h, rw / out_w
        gh = ratio if ratio > 0 else int(np.ceil(rh / out_h))
        gw = ratio if ratio > 0 else int(np.ceil(rw / out_w))
        count = max(gh * gw, 1)
        img = x[batch[r]]

        def corners(v, size):
            if v < -1.0 or v > size:
                return None
            v = max(v, 0.0)
            low = int(v)
            if low >= size - 1:
                return [(size - 1, 1.0), (size - 1, 0.0)]
            return [(low, 1 - (v - low)), (low + 1, v - low)]

        for ph, pw in itertools.product(range(out_h), range(out_w)):
            vals = []
            for iy, ix in itertools.product(range(gh), range(gw)):
                sy = y1 + ph * bh + (iy + 0.5) * bh / gh
                sx = x1 + pw * bw + (ix + 0.5) * bw / gw
                cy, cx = corners(sy, H), corners(sx, W)
                if cy is None or cx is None:
                    vals.append(np.zeros(C) if mode == "avg" else [np.zeros(C)] * 4)
                    continue
                terms = [wy * wx * img[:, i, j] for (i, wy), (j, wx) in itertools.product(cy, cx)]
                vals.append(sum(terms) if mode == "avg" else terms)
            if mode == "avg":
                y[r, :, ph, pw] = sum(vals) / count if vals else 0.0
            else:
                y[r, :, ph, pw] = np.max([np.max(t, axis=0) for t in vals], axis=0) if vals else 0.0
    return y


# --- cases: (model text, run-time inputs, expected outputs) ---------------------------------

def rng(name):
    return np.random.default_rng(sum(map(ord, name)))


@case("maxpool_3d")
def _(r):
    x = r.standard_normal((2, 3, 7, 6, 5)).astype(np.float32)
    x[0, 0, 1:3, 1:3, 1:3] = 5.0  # ties: the first in window order wins
    a = dict(kernel_shape=[3, 2, 2], strides=[2, 1, 2], pads=[1, 0, 1, 1, 1, 0])
    y, _ = max_pool(x, a["kernel_shape"], a["strides"], a["pads"])
    return model_text("MaxPool", [("x", x)], ["y"], a), {"x": x}, [y]


@case("maxpool_3d_ceil")
def _(r):
    x = r.standard_normal((1, 2, 6, 7, 5)).astype(np.float32)
    a = dict(kernel_shape=[2, 3, 2], strides=[2, 2, 2], pads=[0, 1, 0, 0, 0, 1], ceil_mode=1)
    y, _ = max_pool(x, a["kernel_shape"], a["strides"], a["pads"], ceil=1)
    return model_text("MaxPool", [("x", x)], ["y"], a), {"x": x}, [y]


@case("avgpool_3d")
def _(r):
    x = r.standard_normal((1, 2, 5, 6, 4)).astype(np.float32)
    a = dict(kernel_shape=[3, 2, 3], strides=[1, 2, 2], pads=[1, 1, 1, 2, 0, 1])
    y = avg_pool(x, a["kernel_shape"], a["strides"], a["pads"])
    return model_text("AveragePool", [("x", x)], ["y"], a), {"x": x}, [y]


@case("avgpool_3d_count_pad")
def _(r):
    x = r.standard_normal((2, 1, 4, 5, 6)).astype(np.float32)
    a = dict(kernel_shape=[2, 3, 3], strides=[2, 1, 2], pads=[1, 1, 0, 1, 1, 2], count_include_pad=1)
    y = avg_pool(x, a["kernel_shape"], a["strides"], a["pads"], count_include_pad=1)
    return model_text("AveragePool", [("x", x)], ["y"], a), {"x": x}, [y]


@case("avgpool_3d_ceil")
def _(r):
    x = r.standard_normal((1, 1, 5, 6, 7)).astype(np.float32)
    a = dict(kernel_shape=[2, 2, 3], strides=[2, 2, 2], ceil_mode=1)
    y = avg_pool(x, a["kernel_shape"], a["strides"], [0] * 6, ceil=1)
    return model_text("AveragePool", [("x", x)], ["y"], a), {"x": x}, [y]


@case("maxpool_dilated_indices")
def _(r):
    x = r.standard_normal((2, 2, 9, 8)).astype(np.float32)
    x[0, 0, 2:5, 2:5] = 3.0        # ties
    x[0, 1, :, :] = -np.inf        # all -inf: the first real tap
    x[1, 0, 4, 4] = np.nan         # a NaN wins its windows
    x[1, 1, 0:3, 0:3] = np.inf
    a = dict(kernel_shape=[3, 2], strides=[2, 1], pads=[2, 1, 1, 2], dilations=[2, 3])
    y, i = max_pool(x, a["kernel_shape"], a["strides"], a["pads"], a["dilations"])
    return model_text("MaxPool", [("x", x)], ["y", "i"], a), {"x": x}, [y, i]


@case("maxpool_dilated")
def _(r):
    # One max_pool2d with dilations (no Indices): NaN, infinities and ties as above.
    x = r.standard_normal((2, 3, 11, 10)).astype(np.float32)
    x[0, 0, 2:5, 2:5] = 3.0
    x[1, 0, 4, 4] = np.nan
    x[1, 1, 0:3, 0:3] = np.inf
    x[0, 2, :, :] = -np.inf
    a = dict(kernel_shape=[3, 3], strides=[2, 1], pads=[3, 1, 2, 4], dilations=[3, 2], ceil_mode=1)
    y, _ = max_pool(x, a["kernel_shape"], a["strides"], a["pads"], a["dilations"], ceil=1)
    return model_text("MaxPool", [("x", x)], ["y"], a), {"x": x}, [y]


@case("maxpool_3d_dilated")
def _(r):
    x = r.standard_normal((1, 2, 7, 6, 9)).astype(np.float32)
    a = dict(kernel_shape=[2, 2, 3], strides=[1, 2, 2], pads=[1, 0, 2, 1, 1, 0], dilations=[2, 3, 2])
    y, _ = max_pool(x, a["kernel_shape"], a["strides"], a["pads"], a["dilations"])
    return model_text("MaxPool", [("x", x)], ["y"], a), {"x": x}, [y]


@case("avgpool_dilated_ceil")
def _(r):
    x = r.standard_normal((2, 2, 9, 10)).astype(np.float32)
    a = dict(kernel_shape=[2, 3], strides=[2, 2], pads=[1, 2, 1, 0], dilations=[3, 2], ceil_mode=1)
    y = avg_pool(x, a["kernel_shape"], a["strides"], a["pads"], ceil=1, dilations=a["dilations"])
    return model_text("AveragePool", [("x", x)], ["y"], a, opset=19), {"x": x}, [y]


@case("avgpool_3d_dilated_count_pad")
def _(r):
    x = r.standard_normal((1, 2, 6, 5, 7)).astype(np.float32)
    a = dict(kernel_shape=[2, 2, 2], strides=[1, 2, 2], pads=[1, 1, 0, 0, 1, 1], dilations=[2, 1, 3], count_include_pad=1)
    y = avg_pool(x, a["kernel_shape"], a["strides"], a["pads"], count_include_pad=1, dilations=a["dilations"])
    return model_text("AveragePool", [("x", x)], ["y"], a, opset=19), {"x": x}, [y]


@case("lppool_2d")
def _(r):
    x = r.standard_normal((2, 3, 8, 7)).astype(np.float32)
    a = dict(kernel_shape=[3, 2], strides=[2, 1], pads=[1, 0, 1, 1], p=3)
    y = lp_pool(x, a["kernel_shape"], a["strides"], a["pads"], 3)
    return model_text("LpPool", [("x", x)], ["y"], a), {"x": x}, [y]


@case("lppool_1d_dilated_ceil")
def _(r):
    x = r.standard_normal((1, 2, 13)).astype(np.float32)
    a = dict(kernel_shape=[3], strides=[2], pads=[1, 1], dilations=[2], ceil_mode=1)
    y = lp_pool(x, a["kernel_shape"], a["strides"], a["pads"], 2, a["dilations"], ceil=1)
    return model_text("LpPool", [("x", x)], ["y"], a, opset=18), {"x": x}, [y]


@case("maxpool_int8_dilated")
def _(r):
    x = r.integers(-128, 128, size=(1, 2, 7, 7)).astype(np.int8)
    x[0, 0] = -128  # the dtype's lowest everywhere: padding must still never win
    a = dict(kernel_shape=[2, 3], strides=[1, 2], pads=[1, 2, 2, 1], dilations=[3, 2])
    y, i = max_pool(x, a["kernel_shape"], a["strides"], a["pads"], a["dilations"])
    return model_text("MaxPool", [("x", x)], ["y", "i"], a, opset=12), {"x": x}, [y, i]


@case("maxpool_indices_column_major")
def _(r):
    x = r.standard_normal((1, 3, 6, 7)).astype(np.float32)
    a = dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], storage_order=1, ceil_mode=1)
    y, i = max_pool(x, a["kernel_shape"], a["strides"], a["pads"], ceil=1, storage_order=1)
    return model_text("MaxPool", [("x", x)], ["y", "i"], a), {"x": x}, [y, i]


@case("maxpool_1d_indices")
def _(r):
    x = r.standard_normal((2, 2, 11)).astype(np.float32)
    a = dict(kernel_shape=[3], strides=[2], pads=[1, 1], dilations=[2])
    y, i = max_pool(x, a["kernel_shape"], a["strides"], a["pads"], a["dilations"])
    return model_text("MaxPool", [("x", x)], ["y", "i"], a), {"x": x}, [y, i]


@case("maxpool_3d_indices")
def _(r):
    x = r.standard_normal((1, 2, 4, 5, 4)).astype(np.float32)
    a = dict(kernel_shape=[2, 3, 2], strides=[1, 2, 2], pads=[0, 1, 1, 1, 1, 0], storage_order=1)
    y, i = max_pool(x, a["kernel_shape"], a["strides"], a["pads"], storage_order=1)
    return model_text("MaxPool", [("x", x)], ["y", "i"], a), {"x": x}, [y, i]


@case("maxunpool")
def _(r):
    x = r.standard_normal((1, 2, 3, 3)).astype(np.float32)
    i = r.integers(-70, 70, size=x.shape).astype(np.int64)  # repeats and negative indices
    i[0, 0, 0, 0] = i[0, 1, 2, 2]
    a = dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 0, 0, 1])
    shape = np.array([1, 2, 7, 8], np.int64)
    y = max_unpool(x, i, a["kernel_shape"], a["strides"], a["pads"], tuple(shape))
    return model_text("MaxUnpool", [("x", x), ("i", i), ("shape", shape)], ["y"], a, {"shape": shape}), {"x": x, "i": i}, [y]


@case("conv_3d")
def _(r):
    x = r.standard_normal((2, 4, 5, 6, 5)).astype(np.float32)
    w = r.standard_normal((6, 2, 2, 3, 2)).astype(np.float32)
    a = dict(strides=[2, 1, 2], pads=[1, 0, 1, 0, 2, 1], dilations=[1, 2, 2], group=2)
    y = conv(x, w, a["strides"], a["pads"], a["dilations"], a["group"])
    return model_text("Conv", [("x", x), ("w", w)], ["y"], a), {"x": x, "w": w}, [y]


@case("convtranspose_3d")
def _(r):
    x = r.standard_normal((1, 4, 3, 4, 3)).astype(np.float32)
    w = r.standard_normal((4, 3, 3, 2, 2)).astype(np.float32)
    a = dict(strides=[2, 3, 1], pads=[1, 0, 1, 0, 2, 0], dilations=[1, 1, 2], group=2, output_padding=[1, 2, 0])
    y = conv_transpose(x, w, a["strides"], a["pads"], a["dilations"], a["group"], a["output_padding"])
    return model_text("ConvTranspose", [("x", x), ("w", w)], ["y"], a), {"x": x, "w": w}, [y]


def einsum_case(equation, *shapes):
    def build(r):
        xs = [r.standard_normal(s).astype(np.float32) for s in shapes]
        names = ["x%d" % k for k in range(len(xs))]
        y = np.einsum(equation, *[x.astype(np.float64) for x in xs])
        return model_text("Einsum", list(zip(names, xs)), ["y"], {"equation": equation}), dict(zip(names, xs)), [y]
    return build


CASES["einsum_batch_matmul_broadcast"] = einsum_case("...ij,...jk->...ik", (2, 1, 3, 4), (5, 4, 2))
CASES["einsum_diagonal_implicit"] = einsum_case("...ii", (2, 3, 4, 4))
CASES["einsum_trace_of_three"] = einsum_case("iji,jk->k", (3, 2, 3), (2, 4))
CASES["einsum_ellipsis_middle"] = einsum_case("a...b,b...->...a", (2, 1, 3, 4), (4, 5, 3))
CASES["einsum_diagonal_out"] = einsum_case("kiik->ik", (3, 2, 2, 3))


@case("det")
def _(r):
    x = r.standard_normal((2, 3, 4, 4))
    x[0, 0] = [[0, 1, 2, 3], [1, 0, 4, 5], [2, 3, 0, 1], [3, 4, 5, 0]]  # zero diagonal: needs pivoting
    x[0, 1, 3] = x[0, 1, 0] * 2 - x[0, 1, 1]  # singular
    x[1, 2] = 0.0
    x = x.astype(np.float32)
    return model_text("Det", [("x", x)], ["y"], {}), {"x": x}, [np.linalg.det(x.astype(np.float64))]


def grid_case(mode, padding, align):
    def build(r):
        x = r.standard_normal((2, 2, 4, 5)).astype(np.float32)
        g = r.uniform(-1.8, 1.8, size=(2, 3, 6, 2)).astype(np.float32)
        g[0, 0, 0] = [1.0, -1.0]  # exactly on the corners
        g[0, 0, 1] = [0.2, 0.25]  # on the half-pixel centers (align_corners 0, width 5, height 4)
        g[1, 2, 5] = [-5.3, 4.1]  # reflected several times
        y = grid_sample(x.astype(np.float64), g.astype(np.float64), mode, padding, align)
        attrs = {"mode": mode, "padding_mode": padding, "align_corners": align}
        return model_text("GridSample", [("x", x), ("g", g)], ["y"], attrs, opset=16), {"x": x, "g": g}, [y]
    return build


for mode in ("bilinear", "nearest", "bicubic"):
    for padding in ("zeros", "border", "reflection"):
        for align in (0, 1):
            CASES["gridsample_%s_%s_%d" % (mode, padding, align)] = grid_case(mode, padding, align)


def roi_case(mode, ratio, half_pixel):
    def build(r):
        x = r.standard_normal((2, 3, 9, 8)).astype(np.float32)
        rois = np.array([[0.5, 1.0, 6.2, 7.9], [3.0, 2.5, 3.2, 2.6], [-3.0, -2.0, 4.0, 12.0], [6.0, 5.0, 14.0, 20.0],
                         [5.0, 6.0, 2.0, 1.0]], np.float32)  # the last is inverted: no samples with half_pixel
        batch = np.array([1, 0, 1, 0, -1], np.int64)  # -1: the last image, as NumPy indexes
        attrs = {"mode": mode, "output_height": 3, "output_width": 2, "sampling_ratio": ratio, "spatial_scale": 0.75,
                 "coordinate_transformation_mode": "half_pixel" if half_pixel else "output_half_pixel"}
        y = roi_align(x.astype(np.float64), rois.astype(np.float64), batch, mode, 3, 2, ratio, 0.75, half_pixel)
        # sampling_ratio 0 needs the boxes at compile time: they are an initializer then.
        inits = {"rois": rois} if ratio == 0 else {}
        inputs = {"x": x, "b": batch} if ratio == 0 else {"x": x, "rois": rois, "b": batch}
        text = model_text("RoiAlign", [("x", x), ("rois", rois), ("b", batch)], ["y"], attrs, inits, opset=16)
        return text, inputs, [y]
    return build


for mode in ("avg", "max"):
    for ratio in (0, 2):
        for half_pixel in (0, 1):
            CASES["roialign_%s_%d_%s" % (mode, ratio, "half_pixel" if half_pixel else "output_half_pixel")] = roi_case(mode, ratio, half_pixel)


# --- driver ---------------------------------------------------------------------------------

def compare(name, got, want):
    if got.shape != want.shape:
        return "%s: shape %s, expected %s" % (name, got.shape, want.shape)
    if want.dtype.kind in "iu":
        bad = np.argwhere(got != want)
    else:
        want = want.astype(got.dtype).astype(np.float64)
        tol = 1e-5 + 1e-5 * np.abs(want)
        with np.errstate(invalid="ignore"):  # inf - inf
            close = np.isclose(got.astype(np.float64), want, rtol=0, atol=0, equal_nan=True) | (np.abs(got - want) <= tol)
        bad = np.argwhere(~close)
    if len(bad):
        at = tuple(bad[0])
        return "%s: element %s is %r, expected %r" % (name, at, got[at], want[at])
    return None


def run_case(name, folder, backend, encode):
    text, inputs, expected = CASES[name](rng(name))
    model = os.path.join(folder, name + ".onnx")
    with open(model, "wb") as f:
        subprocess.run(encode, input=text.encode(), stdout=f, check=True)
    cmd = ["kiln", "run", model, "--backend", backend, "--out", os.path.join(folder, name + "_" + backend)]
    for k, v in inputs.items():
        path = os.path.join(folder, "%s_%s.npy" % (name, k))
        np.save(path, v)
        cmd += ["--input", "%s=%s" % (k, path)]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode:
        return "%s: kiln failed: %s" % (name, run.stderr.strip())
    for k, want in enumerate(expected):
        got = np.load(os.path.join(folder, name + "_" + backend, "result_%d.npy" % k))
        problem = compare("%s result %d" % (name, k), got, want)
        if problem:
            return problem
    return None


def main():
    if sys.argv[1:] == ["list"]:
        print("\n".join(sorted(CASES)))
        return 0
    names = sorted(CASES) if sys.argv[1] == "all" else sys.argv[1].split(",")
    folder = sys.argv[2]
    backend = sys.argv[sys.argv.index("--backend") + 1]
    encode = shlex.split(sys.argv[sys.argv.index("--encode") + 1])
    os.makedirs(folder, exist_ok=True)
    failed = 0
    for name in names:
        problem = run_case(name, folder, backend, encode)
        print(problem or "ok " + name)
        failed += problem is not None
    print("%d cases, %d failed" % (len(names), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
