"""The training-step benchmark cases: one optimizer step (forward, gradient, Adam update) of an MLP
classifier, the model of examples/train/mlp_classifier.kiln, at the example's size and at sizes
that fill a GPU.

A case names a loss function (kiln text: the example file, or generated here at another size) and
how it is trained: the parameters, the batch, Adam's hyperparameters and the precision. kiln's
side is the step function `kiln train LOSS --print-step` builds from it (bench/peers/train_kiln.py);
the peers build theirs from the same description (jax_peer.py, torch_peer.py). The step's
signature is docs/training.md's contract, derived here without kiln:

  (w1, b1, ..., m_w1, ..., v_w1, ..., x, y, lr: f32[], step: f32[])
      -> (loss, accuracy, new params..., new m..., new v...)

Precision "f32" computes everything in f32. Precision "bf16" is mixed precision as PyTorch's
autocast and Flax's `dtype=bfloat16, param_dtype=float32` do it: parameters and Adam's state stay
f32; each dense layer casts its input, weight and bias to bf16 and computes x @ w + b in bf16;
tanh runs on the bf16 values; the logits go back to f32 for the softmax cross-entropy.

Needs only the Python standard library, except make_train_inputs (NumPy).
"""

import math
import os
from dataclasses import dataclass

from cases import EXAMPLES_DIRS, Tensor

# Adam as kiln train, optax.adam and torch.optim.Adam all default it (docs/training.md).
ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8


@dataclass
class TrainCase:
    name: str          # the join key: kiln's step is written as <name>.kiln, so kiln bench reports it
    widths: tuple      # layer widths, input first, classes last: (2, 64, 64, 3) is 2 -> 64 -> 64 -> 3
    batch: int
    precision: str     # "f32", or "bf16": mixed precision as described above
    lr: float
    description: str = ""
    source: str = ""   # where the loss's kiln text comes from
    group: str = "train"

    @property
    def layers(self):
        return len(self.widths) - 1

    @property
    def param_names(self):
        return [f"{k}{i}" for i in range(1, self.layers + 1) for k in "wb"]

    @property
    def param_tensors(self):
        out = []
        for i in range(self.layers):
            out += [Tensor(f"w{i + 1}", (self.widths[i], self.widths[i + 1]), "f32"),
                    Tensor(f"b{i + 1}", (self.widths[i + 1],), "f32")]
        return out

    @property
    def data_tensors(self):
        return [Tensor("x", (self.batch, self.widths[0]), "f32"), Tensor("y", (self.batch,), "i32")]

    @property
    def params(self):
        """The step function's parameters, in its order (docs/training.md)."""
        ps = self.param_tensors
        state = [Tensor(f"{slot}_{p.name}", p.shape, p.dtype) for slot in "mv" for p in ps]
        return tuple(ps + state + self.data_tensors + [Tensor("lr", (), "f32"), Tensor("step", (), "f32")])

    @property
    def outputs(self):
        """The step function's results: loss, accuracy, then the new parameters and state."""
        ps = self.param_tensors
        updated = [Tensor(f"new_{p.name}", p.shape, p.dtype) for p in ps]
        updated += [Tensor(f"new_{slot}_{p.name}", p.shape, p.dtype) for slot in "mv" for p in ps]
        return tuple([Tensor("loss", (), "f32"), Tensor("accuracy", (), "f32")] + updated)

    @property
    def dtype(self):
        return self.precision

    @property
    def shape(self):
        """A label: the batch's shape, e.g. 1024x1024."""
        return f"{self.batch}x{self.widths[0]}"

    @property
    def bytes_moved(self):
        """The fewest bytes a step must move: every input of the step read once (parameters, Adam's
        m and v, the batch, lr, step) and every result written once. Activations kept for the
        backward pass are not counted: how many round trips they make is the implementation's
        choice, and this is a lower bound."""
        return sum(t.nbytes for t in self.params) + sum(t.nbytes for t in self.outputs)

    @property
    def forward_flops(self):
        return sum(2 * self.batch * a * b for a, b in zip(self.widths, self.widths[1:]))

    @property
    def flops(self):
        """Matrix-product FLOPs of one step. Each forward product Y = X @ W (2*M*N*K) has two
        backward products of the same size, dW = X^T @ dY and dX = dY @ W^T, so a step is about
        3x the forward FLOPs, as the usual "6 x parameters x samples" rule counts. Exactly: the
        first layer's dX is the gradient with respect to the data, which no framework computes
        (x is not differentiated), so it is left out. Elementwise work, the softmax and the Adam
        update are memory-bound and not counted."""
        return 3 * self.forward_flops - 2 * self.batch * self.widths[0] * self.widths[1]

    @property
    def kiln_text(self):
        """The loss function's kiln text."""
        if self.source.startswith("examples/"):
            return example_text(self.source)
        return kiln_mlp_classifier(self.batch, self.widths, self.precision)


def example_text(source):
    name = os.path.basename(source)
    for d in EXAMPLES_DIRS:
        path = os.path.join(d, "train", name)
        if os.path.exists(path):
            with open(path) as f:
                return f.read()
    raise FileNotFoundError(f"{source} not found (looked in {', '.join(EXAMPLES_DIRS)})")


def kiln_mlp_classifier(batch, widths, precision="f32"):
    """examples/train/mlp_classifier.kiln's loss for any layer widths and either precision:
    tanh between dense layers, mean softmax cross-entropy as the loss, accuracy as a metric."""
    layers = len(widths) - 1
    sig = [f"%w{i + 1}: f32[{widths[i]},{widths[i + 1]}], %b{i + 1}: f32[{widths[i + 1]}]" for i in range(layers)]
    body, h = [], "%x"
    for i in range(1, layers + 1):
        last = i == layers
        if precision == "bf16":
            body += [f"  %h{i}c = cast {h} {{to = bf16}}", f"  %w{i}c = cast %w{i} {{to = bf16}}",
                     f"  %b{i}c = cast %b{i} {{to = bf16}}", f"  %z{i} = matmul %h{i}c, %w{i}c",
                     f"  %z{i}b = add %z{i}, %b{i}c"]
        else:
            body += [f"  %z{i} = matmul {h}, %w{i}", f"  %z{i}b = add %z{i}, %b{i}"]
        if not last:
            body.append(f"  %a{i} = tanh %z{i}b")
            h = f"%a{i}"
    logits = f"%z{layers}b"
    if precision == "bf16":
        body.append(f"  %logits = cast {logits} {{to = f32}}")
        logits = "%logits"
    body += [f"  %ce = softmax_cross_entropy {logits}, %y", "  %loss = reduce_mean %ce",
             f"  %pred = argmax {logits} {{axis = 1}}", "  %predi = cast %pred {to = i32}", "  %hit = eq %predi, %y",
             "  %hitf = cast %hit {to = f32}", "  %accuracy = reduce_mean %hitf", "  return %loss, %accuracy"]
    how = "mixed precision (bf16 dense layers, f32 parameters and loss)" if precision == "bf16" else "f32"
    return (f"# Generated by bench/peers/train_cases.py: examples/train/mlp_classifier.kiln's loss at "
            f"{' -> '.join(map(str, widths))}, tanh, batch {batch}, {how}.\n"
            f"func @main({', '.join(sig)},\n"
            f"           %x: f32[{batch},{widths[0]}], %y: i32[{batch}]) -> (f32[], f32[]) {{\n"
            + "\n".join(body) + "\n}\n")


def mlp_case(batch, widths, precision, lr=1e-3, label=None):
    label = label or f"{batch}x" + "x".join(str(w) for w in widths)
    return TrainCase(name=f"train_mlp_{label}_{precision}", widths=tuple(widths), batch=batch,
                     precision=precision, lr=lr,
                     description=f"Adam step of a {' -> '.join(map(str, widths))} tanh MLP classifier, batch {batch}, "
                                 + ("bf16 mixed precision" if precision == "bf16" else "f32"))


# The GPU-sized model: 25.2 M parameters, 155 GFLOP per step at batch 1024 (a 1024-class head on
# two 4096-wide hidden layers: an MLP block's proportions).
LARGE_WIDTHS = (1024, 4096, 4096, 1024)


def train_cases():
    """The example first (it is small enough to run anywhere), then the GPU-sized cases."""
    example = TrainCase(name="train_mlp_classifier", widths=(2, 64, 64, 3), batch=64, precision="f32", lr=0.01,
                        source="examples/train/mlp_classifier.kiln",
                        description="Adam step of examples/train/mlp_classifier.kiln (2 -> 64 -> 64 -> 3, tanh), "
                                    "batch 64, lr 0.01 as docs/training.md trains it")
    return [example] + [mlp_case(1024, LARGE_WIDTHS, p, label="large") for p in ("f32", "bf16")]


def cpu_train_cases():
    """The CPU group's training step (cases.cpu_cases): an MNIST-sized classifier, batch 256."""
    case = mlp_case(256, (784, 1024, 1024, 10), "f32", label="cpu")
    case.group = "cpu"
    return [case]


# --- inputs ---------------------------------------------------------------------------------

def make_train_inputs(case, seed=None):
    """The step's inputs as NumPy arrays by the step's parameter names: Glorot-uniform weights (as
    kiln train initialises them), small random biases (not zero, so the check sees them in the
    forward pass), zero Adam state, a standard-normal batch with uniform labels, lr, step 1."""
    import zlib

    import numpy as np
    rng = np.random.default_rng(zlib.crc32(case.name.encode()) if seed is None else seed)
    out = {}
    for t in case.param_tensors:
        if len(t.shape) == 2:
            a = math.sqrt(6.0 / (t.shape[0] + t.shape[1]))
            out[t.name] = rng.uniform(-a, a, t.shape).astype(np.float32)
        else:
            out[t.name] = rng.uniform(-0.1, 0.1, t.shape).astype(np.float32)
    for slot in "mv":
        for t in case.param_tensors:
            out[f"{slot}_{t.name}"] = np.zeros(t.shape, np.float32)
    out["x"] = rng.standard_normal((case.batch, case.widths[0]), dtype=np.float32)
    out["y"] = rng.integers(0, case.widths[-1], case.batch).astype(np.int32)
    out["lr"] = np.array(case.lr, np.float32)
    out["step"] = np.array(1.0, np.float32)
    return out


def check_tolerance(case):
    """Relative tolerance of every checked tensor (||got - want|| / ||want||), and how many samples'
    predictions may differ in the accuracy (a near-tie in the logits may go either way)."""
    if case.precision == "bf16":
        return 3e-2, max(2, case.batch // 50)
    return 1e-4, 1

