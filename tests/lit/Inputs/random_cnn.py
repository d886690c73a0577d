#!/usr/bin/env python3
"""Random small CNN programs for differential tests of the CPU pipeline's layout rewrites
(fold-conv-affine, channels-last): convolutions of random strides, pads (some asymmetric, which
oneDNN does not take) and groups; elementwise ops (relu6 among them); broadcast operands of every shape a CNN uses
([c,1,1], [1,c,1,1], [n,c,1,1], [1,1,h,w], [w], scalars, [1,c,h,1], [h,1]) on either side;
residual adds; reductions over any axes with and without kept dims; max and avg pools, strided
and padded.

  random_cnn.py check FIRST LAST DIR
  random_cnn.py grad FIRST LAST DIR

writes the program of each seed in [FIRST, LAST] to DIR, runs it with `kiln run` ($KILN, else on PATH) on
the cpu backend and on the interpreter with the seed's random inputs, and compares the results
as numpy_reference.py's `same` does (the dtype's tolerance, NaN where NaN). Prints one line per
seed ("seed S: same" or what differs) and exits 1 if any differs or fails. `grad` does the same
for a training step's gradients: the program's results become a loss (the sum of their squares),
`kiln grad` differentiates it with respect to the input and every weight and bias, and the
gradient function is what runs (its convolutions' and pools' gradients go channels-last on the
CPU with the forward ones).
"""
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy_reference  # noqa: E402

def gen(seed):
    """The kiln text of seed's program, or None when it computed nothing to return."""
    rnd = random.Random(seed)
    N, C, H, W = rnd.choice([1,2]), rnd.choice([2,3,4]), rnd.choice([5,6,8]), rnd.choice([5,7,8])
    params = [f"%x: f32[{N},{C},{H},{W}]"]
    lines = []
    vals = [("x", (N, C, H, W))]
    cnt = [0]
    def new(prefix="v"):
        cnt[0] += 1
        return f"{prefix}{cnt[0]}"
    def four():
        c = [v for v in vals if len(v[1]) == 4]
        return rnd.choice(c)
    for step in range(rnd.randint(4, 9)):
        kind = rnd.choice(["conv", "conv", "conv", "ew", "ew", "bcast", "reduce", "pool", "add2", "se"])
        name, (n, c, h, w) = four()
        if kind == "conv":
            o = rnd.choice([2, 3, 4, 6])
            groups = rnd.choice([1, 1, c]) if c > 1 else 1
            if o % groups: groups = 1
            k = rnd.choice([1, 3])
            pad = rnd.choice([[0,0,0,0],[1,1,1,1],[0,1,1,0]]) if k == 3 else [0,0,0,0]
            st = rnd.choice([1, 1, 2])
            oh = (h + pad[0] + pad[2] - k) // st + 1; ow = (w + pad[1] + pad[3] - k) // st + 1
            if oh < 1 or ow < 1: continue
            wn = new("w"); params.append(f"%{wn}: f32[{o},{c//groups},{k},{k}]")
            v = new(); lines.append(f"  %{v} = conv2d %{name}, %{wn} {{strides = [{st}, {st}], pads = {pad}, groups = {groups}}}")
            act = rnd.choice([None, None, "bias", "relu", "relu6"])
            if act:  # a real CNN's conv + bias (+ activation): the libraries' epilogues
                bn, biased = new("b"), new()
                params.append(f"%{bn}: f32[{o},1,1]")
                lines.append(f"  %{biased} = add %{v}, %{bn}")
                v = biased
                if act in ("relu", "relu6"):
                    r = new(); lines.append(f"  %{r} = relu %{v}"); v = r
                if act == "relu6":
                    six, m = new("k"), new()
                    lines += [f"  %{six} = constant 6.0 : f32[]", f"  %{m} = min %{v}, %{six}"]
                    v = m
            vals.append((v, (n, o, oh, ow)))
        elif kind == "ew":
            op = rnd.choice(["relu", "tanh", "neg", "sigmoid", "relu6"])
            if op == "relu6":  # MobileNet's clip, which oneDNN applies after a channels-last conv's bias
                six, r, v = new("k"), new(), new()
                lines += [f"  %{six} = constant 6.0 : f32[]", f"  %{r} = relu %{name}", f"  %{v} = min %{r}, %{six}"]
            else:
                v = new(); lines.append(f"  %{v} = {op} %{name}")
            vals.append((v, (n, c, h, w)))
        elif kind == "bcast":
            shape = rnd.choice([(c,1,1), (1,c,1,1), (n,c,1,1), (1,1,h,w), (w,), (), (1,c,h,1), (h,1)])
            bn = new("b"); params.append(f"%{bn}: f32[{','.join(map(str, shape))}]")
            v = new(); op = rnd.choice(["add", "mul", "sub", "max"])
            a, b = (f"%{name}", f"%{bn}") if rnd.random() < 0.7 else (f"%{bn}", f"%{name}")
            lines.append(f"  %{v} = {op} {a}, {b}"); vals.append((v, (n, c, h, w)))
        elif kind == "add2":
            same = [v for v in vals if v[1] == (n, c, h, w) and v[0] != name]
            if not same: continue
            other = rnd.choice(same)[0]
            v = new(); lines.append(f"  %{v} = add %{name}, %{other}"); vals.append((v, (n, c, h, w)))
        elif kind == "reduce":
            axes = rnd.choice([[2, 3], [1], [3], [1, 2], [0, 2, 3], [2]])
            keep = rnd.choice([True, False])
            v = new(); op = rnd.choice(["reduce_mean", "reduce_sum", "reduce_max"])
            lines.append(f"  %{v} = {op} %{name} {{axes = {axes}, keepdims = {'true' if keep else 'false'}}}")
            shape = tuple((1 if i in axes else d) for i, d in enumerate((n, c, h, w)) if keep or i not in axes)
            vals.append((v, shape))
        elif kind == "se":  # squeeze-and-excite: 1x1 convs over the pooled 1x1 image (conv-as-matmul)
            r = rnd.choice([1, 2, 3])
            pooled, w1, b1, hidden, act, w2, scale, gate, v = (new(p) for p in ("v", "w", "b", "v", "v", "w", "v", "v", "v"))
            params += [f"%{w1}: f32[{r},{c},1,1]", f"%{b1}: f32[{r},1,1]", f"%{w2}: f32[{c},{r},1,1]"]
            squeezed = new()
            lines += [f"  %{pooled} = reduce_mean %{name} {{axes = [2, 3], keepdims = true}}",
                      f"  %{hidden} = conv2d %{pooled}, %{w1}",
                      f"  %{squeezed} = add %{hidden}, %{b1}",
                      f"  %{act} = {rnd.choice(['relu', 'silu', 'sigmoid'])} %{squeezed}",
                      f"  %{scale} = conv2d %{act}, %{w2}",
                      f"  %{gate} = sigmoid %{scale}",
                      f"  %{v} = mul %{name}, %{gate}"]
            vals.append((v, (n, c, h, w)))
        elif kind == "pool":
            if h < 3 or w < 3: continue
            op = rnd.choice(["max_pool2d", "max_pool2d", "avg_pool2d"])
            k, stride, pad = rnd.choice([(2, 2, 0), (3, 2, 1), (3, 1, 1), (2, 1, 0)])
            v = new(); lines.append(f"  %{v} = {op} %{name} {{kernel = [{k}, {k}], strides = [{stride}, {stride}], "
                                    f"pads = [{pad}, {pad}, {pad}, {pad}]}}")
            vals.append((v, (n, c, (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1)))
    outs = rnd.sample(vals[1:], min(3, len(vals) - 1)) if len(vals) > 1 else []
    if not outs: return None
    ty = lambda s: f"f32[{','.join(map(str, s))}]"
    text = f"func @main({', '.join(params)}) -> ({', '.join(ty(s) for _, s in outs)}) {{\n" + "\n".join(lines) + \
           f"\n  return {', '.join('%' + v for v, _ in outs)}\n}}\n"
    return text


def loss_of(text):
    """The program with its results summed into one loss: the sum of every result's squares."""
    head, body = text.split("\n", 1)
    body, ret = body.rsplit("  return ", 1)
    outs = [v.strip() for v in ret.split("}")[0].split(",")]
    lines, terms = [], []
    for i, out in enumerate(outs):
        lines += [f"  %sq{i} = mul {out}, {out}", f"  %l{i} = reduce_sum %sq{i}"]
        terms.append(f"%l{i}")
    total = terms[0]
    for i, term in enumerate(terms[1:]):
        lines.append(f"  %t{i} = add {total}, {term}")
        total = f"%t{i}"
    return head.split(" -> ")[0] + " -> f32[] {\n" + body + "\n".join(lines) + f"\n  return {total}\n}}\n"


def differing_gradients(got_dir, want_dir):
    """The results that differ: f32's relative tolerance, and an absolute one scaled by the
    tensor's largest value. A gradient element is a sum of many products (oneDNN's in f32, in
    an order of its own): where they cancel, one of 0.15 among gradients of 40 carries the
    error of the 40s (seen on 3 of 70 seeds, as much before channels-last training as after)."""
    import numpy as np
    names = sorted(f for f in os.listdir(want_dir) if f.startswith("result_"))
    differs = []
    for name in names:
        got, want = (np.load(os.path.join(d, name)).astype(np.float64) for d in (got_dir, want_dir))
        scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
        if got.shape != want.shape or not np.allclose(got, want, rtol=1e-5, atol=1e-5 * scale, equal_nan=True):
            differs.append(name)
    return differs


def check(first, last, out_dir, grad=False):
    failed = 0
    kiln = os.environ.get("KILN", "kiln")
    for seed in range(first, last + 1):
        text = gen(seed)
        if text is None:
            continue
        path = os.path.join(out_dir, f"cnn_{seed}.kiln")
        if grad:
            loss = os.path.join(out_dir, f"cnn_{seed}_loss.kiln")
            with open(loss, "w") as f:
                f.write(loss_of(text))
            wrt = ["x"] + [p.split(":")[0].strip()[1:] for p in text.split("(", 1)[1].split(")")[0].split(", ")[1:]]
            made = subprocess.run([kiln, "grad", loss, "--wrt", ",".join(wrt), "-o", path], capture_output=True, text=True)
            if made.returncode != 0:
                print(f"seed {seed}: kiln grad FAILED: {made.stderr.strip()}")
                failed += 1
                continue
        else:
            with open(path, "w") as f:
                f.write(text)
        outs = {}
        for backend in ("cpu", "interp"):
            outs[backend] = os.path.join(out_dir, f"cnn_{seed}_{backend}")
            run = subprocess.run([kiln, "run", path, "--backend", backend, "--seed", str(seed), "--out", outs[backend]],
                                 capture_output=True, text=True)
            if run.returncode != 0:
                print(f"seed {seed}: kiln run --backend {backend} FAILED: {run.stderr.strip()}")
                failed += 1
                break
        else:
            if grad:
                differs = differing_gradients(outs["cpu"], outs["interp"])
            else:
                with open(os.devnull, "w") as quiet:
                    stdout, sys.stdout = sys.stdout, quiet
                    try:
                        differs = numpy_reference.same(outs["cpu"], outs["interp"])
                    finally:
                        sys.stdout = stdout
            print(f"seed {seed}: " + ("DIFFERS (numpy_reference.py same " + outs["cpu"] + " " + outs["interp"] + ")" if differs else "same"))
            failed += bool(differs)
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 5 or sys.argv[1] not in ("check", "grad"):
        sys.exit(__doc__)
    sys.exit(check(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], grad=sys.argv[1] == "grad"))
