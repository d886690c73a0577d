"""The training-step benchmark cases: one optimizer step (forward, gradient, Adam update) of an MLP
classifier, the model of examples/train/mlp_classifier.kiln, at the example's size and at sizes
that fill a GPU, and of a CNN classifier, the model of examples/train/cnn_classifier.kiln (two
3x3 convolutions with relu and 2x2 max pooling, then a dense layer), at an image classifier's size.

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

    model = "mlp"

    @property
    def param_names(self):
        return [t.name for t in self.param_tensors]

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


@dataclass
class CnnTrainCase(TrainCase):
    """examples/train/cnn_classifier.kiln's model at any size: widths are the channels, the image's
    first and the classes last, e.g. (3, 32, 64, 10): a 3-channel image -> conv 3x3 (32 filters,
    padding 1) + bias, relu, 2x2 max pool -> conv 3x3 (64 filters, padding 1) + bias, relu, 2x2
    max pool -> dense to 10 classes. Convolution weights are OIHW, biases [1, C, 1, 1] (they
    broadcast over NCHW), the dense weight [features, classes]. f32 only."""
    image: tuple = (32, 32)  # height, width; each pool halves them, so both divide by 4

    model = "cnn"

    @property
    def layers(self):
        return 3

    @property
    def feature_shape(self):
        """The activations at each stage: [(C, H, W) after conv 1, after pool 1, after conv 2, after pool 2]."""
        c, c1, c2 = self.widths[:3]
        h, w = self.image
        return [(c1, h, w), (c1, h // 2, w // 2), (c2, h // 2, w // 2), (c2, h // 4, w // 4)]

    @property
    def dense_in(self):
        c, h, w = self.feature_shape[-1]
        return c * h * w

    @property
    def param_tensors(self):
        c, c1, c2, classes = self.widths
        return [Tensor("k1", (c1, c, 3, 3), "f32"), Tensor("c1", (1, c1, 1, 1), "f32"),
                Tensor("k2", (c2, c1, 3, 3), "f32"), Tensor("c2", (1, c2, 1, 1), "f32"),
                Tensor("w", (self.dense_in, classes), "f32"), Tensor("b", (classes,), "f32")]

    @property
    def data_tensors(self):
        return [Tensor("x", (self.batch, self.widths[0], *self.image), "f32"), Tensor("y", (self.batch,), "i32")]

    @property
    def shape(self):
        return "x".join(map(str, self.data_tensors[0].shape))

    @property
    def conv_flops(self):
        """(conv 1, conv 2) forward FLOPs: 2 x outputs x (input channels x 9)."""
        (c1, h1, w1), _, (c2, h2, w2), _ = self.feature_shape
        return (2 * self.batch * c1 * h1 * w1 * self.widths[0] * 9, 2 * self.batch * c2 * h2 * w2 * c1 * 9)

    @property
    def forward_flops(self):
        return sum(self.conv_flops) + 2 * self.batch * self.dense_in * self.widths[-1]

    @property
    def flops(self):
        """3x the forward's products (each has a data and a weight gradient of its size), less the
        first convolution's data gradient (x is not differentiated). Pooling, relu, the softmax and
        Adam are memory-bound and not counted."""
        return 3 * self.forward_flops - self.conv_flops[0]

    @property
    def kiln_text(self):
        if self.source.startswith("examples/"):
            return example_text(self.source)
        return kiln_cnn_classifier(self)


def kiln_cnn_classifier(case):
    """examples/train/cnn_classifier.kiln's loss for CnnTrainCase's layout (both convolutions padded,
    a pool after each)."""
    p = {t.name: t for t in case.param_tensors + case.data_tensors}
    ty = lambda n: f"f32[{','.join(map(str, p[n].shape))}]"  # noqa: E731
    sig = ", ".join(f"%{n}: {ty(n)}" for n in ("k1", "c1", "k2", "c2", "w", "b"))
    body = ["  %h1 = conv2d %x, %k1 {pads = [1,1,1,1]}", "  %h1b = add %h1, %c1", "  %a1 = relu %h1b",
            "  %p1 = max_pool2d %a1 {kernel = [2,2], strides = [2,2]}",
            "  %h2 = conv2d %p1, %k2 {pads = [1,1,1,1]}", "  %h2b = add %h2, %c2", "  %a2 = relu %h2b",
            "  %p2 = max_pool2d %a2 {kernel = [2,2], strides = [2,2]}",
            f"  %flat = reshape %p2 {{shape = [-1,{case.dense_in}]}}", "  %o = matmul %flat, %w",
            "  %logits = add %o, %b", "  %ce = softmax_cross_entropy %logits, %y", "  %loss = reduce_mean %ce",
            "  %pred = argmax %logits {axis = 1}", "  %predi = cast %pred {to = i32}", "  %hit = eq %predi, %y",
            "  %hitf = cast %hit {to = f32}", "  %accuracy = reduce_mean %hitf", "  return %loss, %accuracy"]
    return (f"# Generated by bench/peers/train_cases.py: examples/train/cnn_classifier.kiln's model at "
            f"{' -> '.join(map(str, case.widths))} channels, {case.image[0]}x{case.image[1]} images, batch {case.batch}.\n"
            f"func @main({sig},\n           %x: {ty('x')}, %y: i32[{case.batch}]) -> (f32[], f32[]) {{\n"
            + "\n".join(body) + "\n}\n")


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


def cnn_case(batch, widths, image, label=None):
    label = label or f"{batch}x{widths[0]}x{image[0]}x{image[1]}"
    return CnnTrainCase(name=f"train_cnn_{label}_f32", widths=tuple(widths), batch=batch, precision="f32", lr=1e-3,
                        image=tuple(image),
                        description=f"Adam step of a CNN classifier ({' -> '.join(map(str, widths))} channels, "
                                    f"3x3 convolutions, relu, 2x2 max pools, dense), {image[0]}x{image[1]} images, "
                                    f"batch {batch}, f32")


def cpu_train_cases():
    """The CPU group's training steps (cases.cpu_cases): an MNIST-sized MLP classifier, batch 256,
    and a CIFAR-sized CNN classifier (3x32x32 images, 32 and 64 filters), batch 32."""
    cases = [mlp_case(256, (784, 1024, 1024, 10), "f32", label="cpu"),
             cnn_case(32, (3, 32, 64, 10), (32, 32), label="cpu")]
    for case in cases:
        case.group = "cpu"
    return cases


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
        if t.name[0] in "wk":  # a dense [in, out] or convolution [out, in, kh, kw] weight, not a bias
            window = math.prod(t.shape[2:])
            fan_in, fan_out = (t.shape[0], t.shape[1]) if len(t.shape) == 2 else (t.shape[1] * window, t.shape[0] * window)
            a = math.sqrt(6.0 / (fan_in + fan_out))
            out[t.name] = rng.uniform(-a, a, t.shape).astype(np.float32)
        else:
            out[t.name] = rng.uniform(-0.1, 0.1, t.shape).astype(np.float32)
    for slot in "mv":
        for t in case.param_tensors:
            out[f"{slot}_{t.name}"] = np.zeros(t.shape, np.float32)
    x = next(t for t in case.data_tensors if t.name == "x")
    out["x"] = rng.standard_normal(x.shape, dtype=np.float32)
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

