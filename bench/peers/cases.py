#!/usr/bin/env python3
"""The benchmark cases kiln and its peers (jax.jit, torch.compile) are measured on, in one place.

A case is a graph with a name. The name is the join key: `kiln bench FILE --json` reports the
file's stem as its case, so the case `softmax` is examples/softmax.kiln and the case
`softmax_8192x8192_f32` is the file `python3 bench/peers/cases.py --emit-kiln DIR` writes as
DIR/softmax_8192x8192_f32.kiln. Each case holds:

  * its kiln program (read from examples/NAME.kiln, or generated here for the large cases); the
    parameters' and results' names, shapes and dtypes are parsed from that text, so kiln and the
    peers run the same types;
  * `fn(o, *params)`: the same math written once against a small ops interface `o` (the NumPy,
    PyTorch and JAX adapters implement it), mirroring the NumPy models of
    tests/lit/Inputs/numpy_reference.py;
  * the byte model (each parameter read once plus each result written once: the fewest bytes any
    implementation must move through device memory) and the FLOPs of its matrix products and
    convolutions (2*M*N*K each), for GB/s and TFLOP/s.

Needs only the Python standard library, except make_inputs (NumPy).

  cases.py --list                  one line per case: name, group, dtype, shape, bytes, flops
  cases.py --emit-kiln DIR         writes DIR/<case>.kiln for every generated (large and cpu) case
"""

import argparse
import functools
import os
import re
import sys
import zlib
from dataclasses import dataclass, field
from typing import Callable, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
# bench/peers/ in the repository; in a device bundle the examples sit beside peers/ (see
# scripts/device_bundle.sh), so look in both places.
EXAMPLES_DIRS = [os.path.join(HERE, "..", "..", "examples"), os.path.join(HERE, "..", "examples")]

DTYPE_BYTES = {"bool": 1, "i8": 1, "i32": 4, "i64": 8, "f16": 2, "bf16": 2, "f32": 4, "f64": 8}
FLOAT_DTYPES = ("f16", "bf16", "f32", "f64")


@dataclass(frozen=True)
class Tensor:
    name: str
    shape: tuple
    dtype: str

    @property
    def numel(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self):
        return self.numel * DTYPE_BYTES[self.dtype]

    def __str__(self):
        return f"{self.dtype}[{','.join(str(d) for d in self.shape)}]"


@dataclass
class Case:
    name: str                     # the join key with `kiln bench --json` (the .kiln file's stem)
    group: str                    # "large" (fills a GPU; the performance contract) or "example"
                                  # (train_cases.TrainCase: "train")
    kiln_text: str                # the kiln program; params and outputs are parsed from it
    fn: Callable                  # fn(o, *params) -> result or tuple of results
    flops: int = 0                # matmul/conv FLOPs (2*M*N*K each); 0: not compute-bound
    inits: dict = field(default_factory=dict)   # param name -> init spec (see make_inputs)
    row_params: Optional[tuple] = None  # params sliced along axis 0 for a cheap check (None: full check)
    one_kernel: bool = False      # DESIGN.md's contract: fusion makes it one kernel moving bytes_moved
    description: str = ""
    source: str = ""              # where the kiln text came from
    params: tuple = ()
    outputs: tuple = ()

    def __post_init__(self):
        self.params, self.outputs = signature(self.kiln_text)

    @property
    def dtype(self):
        """The case's float dtype (the first float parameter's)."""
        for t in self.params:
            if t.dtype in FLOAT_DTYPES:
                return t.dtype
        return self.params[0].dtype

    @property
    def shape(self):
        """A label: the first parameter's shape, e.g. 8192x8192."""
        return "x".join(str(d) for d in self.params[0].shape) or "scalar"

    @property
    def bytes_read(self):
        return sum(t.nbytes for t in self.params)

    @property
    def bytes_written(self):
        return sum(t.nbytes for t in self.outputs)

    @property
    def bytes_moved(self):
        return self.bytes_read + self.bytes_written


# --- the kiln signature parser --------------------------------------------------------------

_TYPE = re.compile(r"(bool|i8|i32|i64|f16|bf16|f32|f64)\[([0-9,\s]*)\]")


def _strip_comments(text):
    return "\n".join(line.split("#", 1)[0] for line in text.splitlines())


def _types(text):
    return [(m.group(1), tuple(int(d) for d in m.group(2).replace(" ", "").split(",") if d))
            for m in _TYPE.finditer(text)]


def signature(kiln_text, entry="main"):
    """(params, outputs) of the entry function (@main, else the first) as Tensors."""
    text = _strip_comments(kiln_text)
    funcs = list(re.finditer(r"func\s+@([A-Za-z0-9_]+)\s*\(", text))
    if not funcs:
        raise ValueError("no function in the kiln text")
    func = next((f for f in funcs if f.group(1) == entry), funcs[0])
    depth, i = 1, func.end()
    while depth:
        if i >= len(text):
            raise ValueError(f"@{func.group(1)}: unbalanced parentheses in the signature")
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        i += 1
    param_text = text[func.end():i - 1]
    arrow = re.match(r"\s*->\s*([^{]*)\{", text[i:])
    if not arrow:
        raise ValueError(f"@{func.group(1)}: no '-> TYPES {{' after the parameters")
    params = []
    for m in re.finditer(r"%([A-Za-z0-9_]+)\s*:\s*" + _TYPE.pattern, param_text):
        dims = tuple(int(d) for d in m.group(3).replace(" ", "").split(",") if d)
        params.append(Tensor(m.group(1), dims, m.group(2)))
    outputs = [Tensor(f"result_{k}", shape, dtype) for k, (dtype, shape) in enumerate(_types(arrow.group(1)))]
    return tuple(params), tuple(outputs)


# --- the kiln text of the generated cases -------------------------------------------------------

def _ty(dtype, shape):
    return f"{dtype}[{','.join(str(d) for d in shape)}]"


def kiln_softmax(rows, cols, dt):
    return (f"# Generated by bench/peers/cases.py: softmax over the last axis of a [{rows},{cols}] {dt} tensor.\n"
            f"func @main(%x: {_ty(dt, (rows, cols))}) -> {_ty(dt, (rows, cols))} {{\n"
            f"  %y = softmax %x {{axis = -1}}\n"
            f"  return %y\n"
            f"}}\n")


def kiln_layer_norm(rows, cols, dt):
    return (f"# Generated by bench/peers/cases.py: layer norm over the last axis of a [{rows},{cols}] {dt} tensor.\n"
            f"func @main(%x: {_ty(dt, (rows, cols))}, %scale: {_ty(dt, (cols,))}, %bias: {_ty(dt, (cols,))})"
            f" -> {_ty(dt, (rows, cols))} {{\n"
            f"  %y = layer_norm %x, %scale, %bias {{axis = -1, epsilon = 1e-5}}\n"
            f"  return %y\n"
            f"}}\n")


def kiln_elementwise_chain(rows, cols, dt):
    """examples/elementwise_chain.kiln's eight ops at another size and dtype."""
    t = _ty(dt, (rows, cols))
    return (f"# Generated by bench/peers/cases.py: examples/elementwise_chain.kiln on [{rows},{cols}] {dt}.\n"
            f"func @main(%x: {t}, %b: {_ty(dt, (cols,))}, %r: {t}, %s: {dt}[]) -> {t} {{\n"
            f"  %half = constant 0.5 : {dt}[]\n"
            f"  %a = add %x, %b\n"
            f"  %m = mul %a, %s\n"
            f"  %t = tanh %m\n"
            f"  %g = mul %t, %half\n"
            f"  %u = add %g, %half\n"
            f"  %v = mul %u, %a\n"
            f"  %w = add %v, %r\n"
            f"  %y = max %w, %half\n"
            f"  return %y\n"
            f"}}\n")


def kiln_mlp(batch, d_in, d_hidden, dt):
    """A transformer-style MLP block: y = relu(x @ w1 + b1) @ w2 + b2 (examples/mlp.kiln without
    the 10-class softmax head)."""
    return (f"# Generated by bench/peers/cases.py: y = relu(x @ w1 + b1) @ w2 + b2, batch {batch}, "
            f"{d_in} -> {d_hidden} -> {d_in}, {dt}.\n"
            f"func @main(%x: {_ty(dt, (batch, d_in))}, %w1: {_ty(dt, (d_in, d_hidden))}, %b1: {_ty(dt, (d_hidden,))},\n"
            f"           %w2: {_ty(dt, (d_hidden, d_in))}, %b2: {_ty(dt, (d_in,))}) -> {_ty(dt, (batch, d_in))} {{\n"
            f"  %h0 = matmul %x, %w1\n"
            f"  %h1 = add %h0, %b1\n"
            f"  %h = relu %h1\n"
            f"  %l0 = matmul %h, %w2\n"
            f"  %y = add %l0, %b2\n"
            f"  return %y\n"
            f"}}\n")


def kiln_matmul(m, k, n, dt):
    return (f"# Generated by bench/peers/cases.py: C = A @ B, [{m},{k}] x [{k},{n}] {dt}.\n"
            f"func @main(%a: {_ty(dt, (m, k))}, %b: {_ty(dt, (k, n))}) -> {_ty(dt, (m, n))} {{\n"
            f"  %c = matmul %a, %b\n"
            f"  return %c\n"
            f"}}\n")


def kiln_conv_bias_relu(n, c, hw, o, dt):
    """A ResNet 3x3 convolution, stride 1, padding 1, with its bias and relu."""
    return (f"# Generated by bench/peers/cases.py: relu(conv2d(x, w, pad 1) + b), x [{n},{c},{hw},{hw}], "
            f"w [{o},{c},3,3], {dt}.\n"
            f"func @main(%x: {_ty(dt, (n, c, hw, hw))}, %w: {_ty(dt, (o, c, 3, 3))}, %b: {_ty(dt, (o, 1, 1))})"
            f" -> {_ty(dt, (n, o, hw, hw))} {{\n"
            f"  %y = conv2d %x, %w {{pads = [1, 1, 1, 1]}}\n"
            f"  %z = add %y, %b\n"
            f"  %r = relu %z\n"
            f"  return %r\n"
            f"}}\n")


ADAM = dict(b1=0.9, b2=0.999, lr=0.001, eps=1e-8)


def kiln_adam(shapes, dt="f32"):
    """examples/adam_update.kiln's update for any list of parameter shapes."""
    sig, body, rets = [], [], []
    for i, shape in enumerate(shapes, start=1):
        sig += [f"%{n}{i}: {_ty(dt, shape)}" for n in "pgmv"]
    outs = []
    for i, shape in enumerate(shapes, start=1):
        outs += [_ty(dt, shape)] * 3
        body += [f"  %m{i}a = mul %m{i}, %b1", f"  %m{i}b = mul %g{i}, %c1", f"  %m{i}n = add %m{i}a, %m{i}b",
                 f"  %v{i}a = mul %v{i}, %b2", f"  %g{i}s = mul %g{i}, %g{i}", f"  %v{i}b = mul %g{i}s, %c2",
                 f"  %v{i}n = add %v{i}a, %v{i}b", f"  %d{i} = sqrt %v{i}n", f"  %d{i}e = add %d{i}, %eps",
                 f"  %s{i} = div %m{i}n, %d{i}e", f"  %u{i} = mul %s{i}, %lr", f"  %p{i}n = sub %p{i}, %u{i}"]
        rets += [f"%p{i}n", f"%m{i}n", f"%v{i}n"]
    consts = [f"  %b1 = constant {ADAM['b1']} : {dt}[]", f"  %c1 = constant {1 - ADAM['b1']:.1f} : {dt}[]",
              f"  %b2 = constant {ADAM['b2']} : {dt}[]", f"  %c2 = constant {1 - ADAM['b2']:.3f} : {dt}[]",
              f"  %lr = constant {ADAM['lr']} : {dt}[]", f"  %eps = constant 1e-08 : {dt}[]"]
    return (f"# Generated by bench/peers/cases.py: examples/adam_update.kiln's Adam step over {len(shapes)} "
            f"parameters of shapes {', '.join(_ty(dt, s) for s in shapes)}.\n"
            f"func @main({', '.join(sig)})\n    -> ({', '.join(outs)}) {{\n"
            + "\n".join(consts + body) + f"\n  return {', '.join(rets)}\n}}\n")


# --- the math, once, against the ops interface -------------------------------------------------
# `o` provides: matmul, softmax, log_softmax, layer_norm (last axis), tanh, sqrt, abs, sin,
# maximum, relu, transpose, contiguous (a view's elements moved into row-major order), reshape,
# mean, argmax, take (axis 0), conv2d (NCHW/OIHW, pads
# top,left,bottom,right), max_pool2d, cross_entropy (mean), map (over axis 0), while_loop.

def f_softmax_temperature(o, logits):
    return o.softmax(logits / 0.5, -1)


def f_softmax(o, x):
    return o.softmax(x, -1)


def f_layer_norm(o, x, scale, bias):
    return o.layer_norm(x, scale, bias, 1e-5)


def f_elementwise_chain(o, x, b, r, s):
    a = x + b
    t = o.tanh(a * s)
    u = t * 0.5 + 0.5
    return o.maximum(u * a + r, 0.5)


def f_mlp_example(o, x, w1, b1, w2, b2):
    h = o.relu(o.matmul(x, w1) + b1)
    return o.softmax(o.matmul(h, w2) + b2, 1)


def f_mlp_block(o, x, w1, b1, w2, b2):
    h = o.relu(o.matmul(x, w1) + b1)
    return o.matmul(h, w2) + b2


def f_matmul(o, a, b):
    return o.matmul(a, b)


def f_conv_bias_relu(o, x, w, b):
    return o.relu(o.conv2d(x, w, (1, 1, 1, 1)) + b)


def f_adam(o, *params):
    b1, b2, lr, eps = ADAM["b1"], ADAM["b2"], ADAM["lr"], ADAM["eps"]
    out = []
    for k in range(0, len(params), 4):
        p, g, m, v = params[k:k + 4]
        m2 = m * b1 + g * (1 - b1)
        v2 = v * b2 + (g * g) * (1 - b2)
        out += [p - m2 / (o.sqrt(v2) + eps) * lr, m2, v2]
    return tuple(out)


def f_attention(o, x, wq, wk, wv, wo, gamma, beta):
    q, k, v = o.matmul(x, wq), o.matmul(x, wk), o.matmul(x, wv)
    s = o.matmul(q, o.transpose(k, (0, 2, 1))) * 0.17677669529663687
    a = o.matmul(o.softmax(s, -1), v)
    return o.layer_norm(x + o.matmul(a, wo), gamma, beta, 1e-5)


def f_cnn(o, x, w1, b1, w2, b2, w3, b3):
    a = o.relu(o.conv2d(x, w1, (1, 1, 1, 1)) + o.reshape(b1, (8, 1, 1)))
    a = o.max_pool2d(a, 2)
    a = o.relu(o.conv2d(a, w2, (1, 1, 1, 1)) + o.reshape(b2, (16, 1, 1)))
    a = o.max_pool2d(a, 2)
    return o.matmul(o.reshape(a, (8, -1)), w3) + b3


def f_cross_entropy(o, x, w, b, labels):
    return o.cross_entropy(o.matmul(x, w) + b, labels)


def f_embedding(o, table, ids, w, b):
    h = o.mean(o.take(table, ids), 1)
    logp = o.log_softmax(o.matmul(h, w) + b, -1)
    return o.argmax(logp, 1), logp


def f_map_cubic_sin(o, xs):
    return o.map(lambda x: x * x * x + o.sin(x), xs)


def f_while_sqrt(o, xs):
    def row(x):
        _, r = o.while_loop(lambda i, v: i < 5, lambda i, v: (i + 1, o.sqrt(v)), (0, o.abs(x)))
        return r
    return o.map(row, xs)


# --- the cases --------------------------------------------------------------------------------

def _example_text(name):
    for d in EXAMPLES_DIRS:
        path = os.path.join(d, f"{name}.kiln")
        if os.path.exists(path):
            with open(path) as f:
                return f.read(), os.path.relpath(path, os.path.join(HERE, "..", ".."))
    raise FileNotFoundError(f"examples/{name}.kiln not found (looked in {', '.join(EXAMPLES_DIRS)})")


def example_cases():
    """Every examples/*.kiln with its math; FLOPs as 2*M*N*K per product (conv: per output MAC)."""
    mm = lambda m, n, k, batch=1: 2 * batch * m * n * k  # noqa: E731
    specs = [
        ("softmax", f_softmax_temperature, 0, {}),
        ("layer_norm", f_layer_norm, 0, {"scale": "uniform:0.5:1.5"}),
        ("elementwise_chain", f_elementwise_chain, 0, {"b": "normal:0.1", "s": "uniform:1:2"}),
        ("mlp", f_mlp_example, mm(32, 128, 784) + mm(32, 10, 128), {"x": "uniform:0:1", "w1": "normal:0.05",
                                                                   "w2": "normal:0.125"}),
        ("adam_update", f_adam, 0, {f"v{i}": "uniform:0.01:1" for i in range(1, 5)}),
        ("attention", f_attention, 3 * mm(32, 32, 32) + 2 * mm(16, 16, 32, 2) + mm(32, 32, 32),
         {"gamma": "uniform:0.5:1.5"}),
        ("cnn", f_cnn, 2 * 8 * 8 * 28 * 28 * 9 + 2 * 8 * 16 * 14 * 14 * 72 + mm(8, 10, 784),
         {"x": "uniform:0:1"}),
        ("cross_entropy", f_cross_entropy, mm(32, 10, 64), {"labels": "int:10"}),
        ("embedding", f_embedding, mm(4, 3, 16), {"ids": "int:100"}),
        ("map_cubic_sin", f_map_cubic_sin, 0, {}),
        ("while_sqrt", f_while_sqrt, 0, {}),
    ]
    cases = []
    for name, fn, flops, inits in specs:
        text, source = _example_text(name)
        cases.append(Case(name=name, group="example", kiln_text=text, fn=fn, flops=flops, inits=inits,
                          source=source, description=f"examples/{name}.kiln"))
    return cases


# Adam over the parameters of a 1024 -> 4096 -> 1024 MLP block and a 32768 x 1024 embedding:
# 41.9 M parameters, so 168 M floats read (p, g, m, v) and 126 M written (p', m', v'): 1.17 GB.
ADAM_LARGE_SHAPES = [(32768, 1024), (1024, 4096), (4096,), (4096, 1024), (1024,)]


def softmax_case(rows, cols, dt):
    return Case(name=f"softmax_{rows}x{cols}_{dt}", group="large", kiln_text=kiln_softmax(rows, cols, dt),
                fn=f_softmax, one_kernel=True, row_params=("x",), description=f"softmax over the last axis, [{rows},{cols}] {dt}")


def layer_norm_case(rows, cols, dt):
    return Case(name=f"layer_norm_{rows}x{cols}_{dt}", group="large", kiln_text=kiln_layer_norm(rows, cols, dt),
                fn=f_layer_norm, one_kernel=True, inits={"scale": "uniform:0.5:1.5"}, row_params=("x",),
                description=f"layer norm over the last axis (eps 1e-5), [{rows},{cols}] {dt}")


def elementwise_chain_case(rows, cols, dt):
    return Case(name=f"elementwise_chain_{rows}x{cols}_{dt}", group="large",
                kiln_text=kiln_elementwise_chain(rows, cols, dt), fn=f_elementwise_chain, one_kernel=True,
                inits={"b": "normal:0.1", "s": "uniform:1:2"}, row_params=("x", "r"),
                description=f"examples/elementwise_chain.kiln's 8 ops on [{rows},{cols}] {dt}")


def mlp_case(batch, d_in, d_hidden, dt):
    return Case(name=f"mlp_{batch}x{d_in}x{d_hidden}_{dt}", group="large", kiln_text=kiln_mlp(batch, d_in, d_hidden, dt),
                fn=f_mlp_block, flops=2 * 2 * batch * d_in * d_hidden,
                inits={"w1": f"normal:{d_in ** -0.5:.6g}", "w2": f"normal:{d_hidden ** -0.5:.6g}", "b1": "normal:0.1",
                       "b2": "normal:0.1"}, row_params=("x",),
                description=f"y = relu(x @ w1 + b1) @ w2 + b2, batch {batch}, {d_in} -> {d_hidden} -> {d_in}, {dt}")


def adam_case(shapes, dt="f32", name=None):
    n = sum(Tensor("p", s, dt).numel for s in shapes)
    case = Case(name=name or f"adam_update_{len(shapes)}x{n}_{dt}", group="large", kiln_text=kiln_adam(shapes, dt),
                fn=f_adam, one_kernel=True, inits={f"v{i}": "uniform:0.01:1" for i in range(1, len(shapes) + 1)},
                description=f"Adam step over {len(shapes)} tensors, {n / 1e6:.1f} M parameters, {dt}")
    case.row_params = tuple(t.name for t in case.params)  # elementwise: every tensor slices alike
    return case


def large_cases():
    cases = []
    for dt in ("f32", "bf16"):
        cases += [softmax_case(8192, 8192, dt), layer_norm_case(8192, 8192, dt),
                  elementwise_chain_case(65536, 1024, dt), mlp_case(4096, 1024, 4096, dt)]
    cases.append(adam_case(ADAM_LARGE_SHAPES, "f32", name="adam_update_large_f32"))
    return cases


def cpu_cases():
    """Sizes for a CPU (issue 19's table): one of each kind a CPU backend is judged on, f32, and
    layout work (transposes, a column reduction)."""
    def on_cpu(case):
        case.group = "cpu"
        return case
    cases = [on_cpu(matmul_case(m, k, n)) for m, k, n in ((1024, 1024, 1024), (256, 784, 1024), (64, 64, 64))]
    cases += [on_cpu(mlp_case(256, 784, 1024, "f32")), on_cpu(conv_case(32, 64, 56, 64)),
              on_cpu(elementwise_chain_case(4096, 1024, "f32")), on_cpu(softmax_case(2048, 2048, "f32")),
              on_cpu(layer_norm_case(2048, 2048, "f32")), on_cpu(transpose_case((2048, 2048), (1, 0))),
              on_cpu(transpose_case((32, 64, 56, 56), (0, 2, 3, 1))), on_cpu(column_mean_case(4096, 1024))]
    # Shapes that once fell off kiln's fast paths: rows of 64 (sums unrolled before vectorising),
    # NCHW rows of 56, an image's 3 channels moved first, bf16 on a CPU without bf16 arithmetic.
    cases += [on_cpu(layer_norm_case(65536, 64, "f32")), on_cpu(bias_relu_case(32, 64, 56)),
              on_cpu(transpose_case((1024, 1024, 3), (2, 0, 1))), on_cpu(matmul_case(512, 512, 512, "bf16"))]
    return cases


def f_transpose(o, x, perm):
    return o.contiguous(o.transpose(x, perm))  # moved in memory, not a view (torch's permute)


def transpose_case(shape, perm, dt="f32"):
    out = tuple(shape[p] for p in perm)
    text = (f"# Generated by bench/peers/cases.py: transpose {list(perm)} of a {list(shape)} {dt} tensor.\n"
            f"func @main(%x: {_ty(dt, shape)}) -> {_ty(dt, out)} {{\n"
            f"  %y = transpose %x {{perm = [{', '.join(map(str, perm))}]}}\n"
            f"  return %y\n"
            f"}}\n")
    return Case(name=f"transpose_{'x'.join(map(str, shape))}_to_{''.join(map(str, perm))}_{dt}", group="large",
                kiln_text=text, fn=functools.partial(f_transpose, perm=perm), one_kernel=True,
                description=f"transpose {list(perm)} of {list(shape)} {dt} (a layout change: bytes in = bytes out)")


def f_column_mean(o, x):
    return o.mean(x, 0)


def column_mean_case(rows, cols, dt="f32"):
    text = (f"# Generated by bench/peers/cases.py: the mean over the rows of a [{rows},{cols}] {dt} tensor.\n"
            f"func @main(%x: {_ty(dt, (rows, cols))}) -> {_ty(dt, (cols,))} {{\n"
            f"  %y = reduce_mean %x {{axes = [0]}}\n"
            f"  return %y\n"
            f"}}\n")
    return Case(name=f"column_mean_{rows}x{cols}_{dt}", group="large", kiln_text=text, fn=f_column_mean, one_kernel=True,
                description=f"mean over axis 0 (a column reduction, as a bias gradient's), [{rows},{cols}] {dt}")


def f_bias_relu(o, x, b):
    return o.relu(x + b)


def bias_relu_case(n, c, hw, dt="f32"):
    text = (f"# Generated by bench/peers/cases.py: relu(x + b) with a bias per channel, x [{n},{c},{hw},{hw}] {dt}.\n"
            f"func @main(%x: {_ty(dt, (n, c, hw, hw))}, %b: {_ty(dt, (c, 1, 1))}) -> {_ty(dt, (n, c, hw, hw))} {{\n"
            f"  %y = add %x, %b\n"
            f"  %r = relu %y\n"
            f"  return %r\n"
            f"}}\n")
    return Case(name=f"bias_relu_{n}x{c}x{hw}x{hw}_{dt}", group="large", kiln_text=text, fn=f_bias_relu, one_kernel=True,
                row_params=("x",), description=f"relu(x + b), b per channel of NCHW [{n},{c},{hw},{hw}] {dt}")


def matmul_case(m, k, n, dt="f32"):
    return Case(name=f"matmul_{m}x{k}x{n}_{dt}", group="large", kiln_text=kiln_matmul(m, k, n, dt), fn=f_matmul,
                flops=2 * m * k * n, inits={"b": f"normal:{k ** -0.5:.6g}"}, row_params=("a",),
                description=f"C = A @ B, [{m},{k}] x [{k},{n}] {dt}")


def conv_case(n, c, hw, o, dt="f32"):
    return Case(name=f"conv3x3_bias_relu_{n}x{c}x{hw}x{hw}_to_{o}_{dt}", group="large",
                kiln_text=kiln_conv_bias_relu(n, c, hw, o, dt), fn=f_conv_bias_relu, flops=2 * n * o * hw * hw * c * 9,
                inits={"w": f"normal:{(9 * c) ** -0.5:.6g}", "b": "normal:0.1"}, row_params=("x",),
                description=f"relu(conv2d 3x3 pad 1 + bias), batch {n}, {c} -> {o} channels, {hw}x{hw}, {dt}")


def all_cases():
    """Large cases first: they are the performance contract, and a time budget may cut the tail.
    Then the training steps (train_cases.py: one Adam step of an MLP or CNN classifier), then the examples."""
    from train_cases import train_cases  # it imports Tensor from here
    from train_cases import cpu_train_cases
    return large_cases() + train_cases() + example_cases() + cpu_cases() + cpu_train_cases()


def select(names=None, groups=None):
    cases = all_cases()
    if groups:
        unknown = sorted(set(groups) - {c.group for c in cases})
        if unknown:
            raise SystemExit(f"unknown group(s): {', '.join(unknown)} (expected large, train, example or cpu)")
        cases = [c for c in cases if c.group in groups]
    if names:
        known = {c.name: c for c in all_cases()}
        missing = [n for n in names if n not in known]
        if missing:
            raise SystemExit(f"unknown case(s): {', '.join(missing)}; `cases.py --list` lists them")
        cases = [known[n] for n in names]
    return cases


# --- inputs ---------------------------------------------------------------------------------

_POOL = 4_194_301  # a prime: large tensors tile a pool of this many random values


def _init_spec(case, t):
    if t.name in case.inits:
        return case.inits[t.name]
    return "int:10" if t.dtype.startswith("i") else "normal:1"


def make_inputs(case, seed=None):
    """Host NumPy arrays for the case's parameters, float32 for every float dtype (the frameworks
    cast to bf16/f16 on the device), int64 for integers. Init specs: normal:STD, uniform:LO:HI,
    int:HI (in [0, HI)). Tensors larger than a pool tile it, so that inputs for 8192x8192 cost a
    fraction of a second to make; no input is all zeros."""
    import numpy as np
    rng = np.random.default_rng(zlib.crc32(case.name.encode()) if seed is None else seed)
    out = {}
    for t in case.params:
        kind, *args = _init_spec(case, t).split(":")
        n = t.numel
        m = min(n, _POOL)
        if kind == "normal":
            values = rng.standard_normal(m, dtype=np.float32) * np.float32(float(args[0]))
        elif kind == "uniform":
            values = rng.uniform(float(args[0]), float(args[1]), m).astype(np.float32)
        elif kind == "int":
            values = rng.integers(0, int(args[0]), m, dtype=np.int64)
        else:
            raise ValueError(f"{case.name}: %{t.name}: unknown init '{kind}'")
        if t.dtype.startswith("i"):
            values = values.astype(np.int64)
        out[t.name] = (np.resize(values, n) if n > m else values).reshape(t.shape)
    return out


# --- command line -------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", action="store_true", help="list the cases")
    ap.add_argument("--emit-kiln", metavar="DIR", help="write DIR/<case>.kiln for every generated case")
    args = ap.parse_args(argv)
    if args.emit_kiln:
        os.makedirs(args.emit_kiln, exist_ok=True)
        for c in large_cases() + cpu_cases():
            with open(os.path.join(args.emit_kiln, f"{c.name}.kiln"), "w") as f:
                f.write(c.kiln_text)
            print(os.path.join(args.emit_kiln, f"{c.name}.kiln"))
        return 0
    for c in all_cases():
        print(f"{c.name:34} {c.group:8} {c.dtype:5} {c.shape:16} {c.bytes_moved:>14} B {c.flops:>14} FLOP  "
              f"{c.description}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
