"""PyTorch side of the peers' harness (harness.py --framework torch): each case's math through
torch.compile (mode from --torch-mode, static shapes), timed with CUDA events around batches of
back-to-back calls. The copy baseline is dst.copy_(src) over uint8 tensors."""

import gc
import time

import torch
import torch.nn.functional as F


class NoDevice(Exception):
    pass


DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16, "f64": torch.float64,
          "i64": torch.int64, "i32": torch.int32, "i8": torch.int8, "bool": torch.bool}
HALF = (torch.bfloat16, torch.float16)


class TorchOps:
    """cases.py's ops interface. Softmax, log-softmax and layer norm of 16-bit inputs compute in
    float32 and round the result once (as kiln and PyTorch's own kernels do)."""

    def matmul(self, a, b): return torch.matmul(a, b)

    def softmax(self, x, axis):
        return torch.softmax(x, axis, dtype=torch.float32).to(x.dtype) if x.dtype in HALF else torch.softmax(x, axis)

    def log_softmax(self, x, axis):
        if x.dtype in HALF:
            return torch.log_softmax(x, axis, dtype=torch.float32).to(x.dtype)
        return torch.log_softmax(x, axis)

    def layer_norm(self, x, scale, bias, eps): return F.layer_norm(x, (x.shape[-1],), scale, bias, eps)
    def tanh(self, x): return torch.tanh(x)
    def sqrt(self, x): return torch.sqrt(x)
    def abs(self, x): return torch.abs(x)
    def sin(self, x): return torch.sin(x)

    def maximum(self, a, b):
        return torch.clamp(a, min=b) if isinstance(b, (int, float)) else torch.maximum(a, b)

    def relu(self, x): return torch.relu(x)
    def transpose(self, x, perm): return x.permute(*perm)
    def contiguous(self, x): return x.contiguous()  # a permute is a strided view until then
    def reshape(self, x, shape): return x.reshape(shape)
    def mean(self, x, axis): return x.mean(dim=axis)
    def argmax(self, x, axis): return torch.argmax(x, dim=axis)
    def take(self, table, ids): return F.embedding(ids, table)

    def conv2d(self, x, w, pads):
        top, left, bottom, right = pads
        if top == bottom and left == right:
            return F.conv2d(x, w, padding=(top, left))
        return F.conv2d(F.pad(x, (left, right, top, bottom)), w)

    def max_pool2d(self, x, k): return F.max_pool2d(x, k)
    def cross_entropy(self, logits, labels): return F.cross_entropy(logits, labels)
    def map(self, f, xs): return torch.vmap(f)(xs)

    def while_loop(self, cond, body, init):
        state = init
        while cond(*state):
            state = body(*state)
        return state


class Backend:
    name = "torch"

    def __init__(self, cfg):
        self.cfg = cfg
        self.version = torch.__version__
        if torch.cuda.is_available():
            self.dev = torch.device("cuda")
            self.device = torch.cuda.get_device_name()
        elif cfg.allow_cpu:
            self.dev = torch.device("cpu")
            self.device = "cpu"
        else:
            raise NoDevice("torch.cuda.is_available() is False")
        tf32 = cfg.precision == "tf32"
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        torch.set_float32_matmul_precision("high" if tf32 else "highest")
        # Every case compiles the same wrapper lambda: raise the recompile limit and reset between
        # cases (compile()) so no case silently falls back to eager.
        torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
        self.mode = f"torch.compile(mode={cfg.torch_mode})"
        self.train_mode = f"torch.compile(mode={cfg.torch_mode}) of forward + backward + Adam(fused=True) step"
        self.copy_note = "dst.copy_(src), uint8 tensors"
        self.ops = TorchOps()
        self._copy = None

    @property
    def cuda(self):
        return self.dev.type == "cuda"

    def to_device(self, a, dtype):
        return torch.from_numpy(a).to(self.dev).to(DTYPES[dtype]).contiguous()

    def compile(self, fn):
        torch._dynamo.reset()
        return torch.compile(fn, mode=self.cfg.torch_mode, dynamic=False, fullgraph=False)

    def sync(self, out=None):
        if self.cuda:
            torch.cuda.synchronize()

    def _time(self, body, k):
        if not self.cuda:
            t0 = time.perf_counter()
            for _ in range(k):
                body()
            return (time.perf_counter() - t0) * 1e3
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(k):
            body()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    def time_batch(self, f, args, k):
        return self._time(lambda: f(*args), k)

    def copy_batch(self, nbytes, k):
        if self._copy is None or self._copy[0].numel() != nbytes:
            src = torch.randint(0, 256, (nbytes,), dtype=torch.uint8, device=self.dev)
            self._copy = (src, torch.empty_like(src))
        src, dst = self._copy
        return self._time(lambda: dst.copy_(src), k)

    def to_numpy(self, x, rows=None):
        if not isinstance(x, torch.Tensor):
            x = torch.as_tensor(x)
        y = x[:rows] if rows and x.dim() else x
        y = y.to(torch.float64) if y.is_floating_point() else y.to(torch.int64)
        return y.cpu().numpy()

    def train_step(self, case, inputs):
        return TrainStep(case, inputs, self)

    def free(self):
        self._copy = None
        gc.collect()
        if self.cuda:
            torch.cuda.empty_cache()


# --- the training step (train_cases.py) -------------------------------------------------------

class TrainStep:
    """One optimizer step as PyTorch users write it: an nn.Sequential of nn.Linear and nn.Tanh (the
    MLP) or of nn.Conv2d, nn.ReLU, nn.MaxPool2d, nn.Flatten and nn.Linear (the CNN), torch.optim.Adam (fused=True: one multi-tensor kernel, PyTorch's fastest Adam), and the whole
    step -- forward, loss.backward(), opt.step(), opt.zero_grad() -- under one torch.compile, as
    PyTorch's tutorials compile a training step. Dynamo breaks the graph at backward(): the forward
    and its AOT-compiled backward are one graph; the fused Adam kernel runs as is (PyTorch keeps it
    out of Dynamo's graphs). Mixed precision is
    torch.autocast(bfloat16) around the forward, the loss computed from float32 logits. Parameters
    and state are updated in place, so step() is the next step."""

    def __init__(self, case, inputs, backend):
        from train_cases import ADAM_BETAS, ADAM_EPS
        dev = backend.dev
        model, self.named = (cnn_model if case.model == "cnn" else mlp_model)(case)
        self.shapes = {t.name: t.shape for t in case.param_tensors}
        with torch.no_grad():
            for name, p in self.named:
                p.copy_(from_kiln(inputs[name], p))
        model = model.to(dev)
        opt = torch.optim.Adam(model.parameters(), lr=case.lr, betas=ADAM_BETAS, eps=ADAM_EPS, fused=True)
        mixed = case.precision == "bf16"

        def train_step(x, y):
            with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=mixed):
                logits = model(x)
            loss = F.cross_entropy(logits.float(), y)
            accuracy = (logits.argmax(1) == y).float().mean()
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            return loss.detach(), accuracy

        self.opt = opt
        torch._dynamo.reset()
        self.fn = torch.compile(train_step, mode=backend.cfg.torch_mode)
        self.x = torch.from_numpy(inputs["x"]).to(dev)
        self.y = torch.from_numpy(inputs["y"]).to(dev).long()  # cross_entropy takes int64 labels
        self.backend = backend
        self.out = None

    def step(self):
        self.out = self.fn(self.x, self.y)

    def sync(self):
        self.backend.sync()

    def time(self, k):
        return self.backend._time(self.step, k)

    def results(self):
        """After a step: loss, accuracy and the new parameters, m and v by train_cases' names."""
        self.sync()
        f64 = lambda t: t.detach().to(torch.float64).cpu().numpy()  # noqa: E731
        out = {"loss": float(self.out[0]), "accuracy": float(self.out[1])}
        for name, p in self.named:
            state = self.opt.state[p]
            for key, t in ((f"new_{name}", p), (f"new_m_{name}", state["exp_avg"]),
                           (f"new_v_{name}", state["exp_avg_sq"])):
                out[key] = to_kiln(f64(t), self.shapes[name])
        return out


# The models as PyTorch users write them, and their parameters under train_cases' names. Layouts
# differ from kiln's in two places: nn.Linear keeps its weight as [out, in] (kiln's w transposed)
# and nn.Conv2d its bias as [C] (kiln's c is [1, C, 1, 1]).

def mlp_model(case):
    mods = []
    for i in range(1, case.layers + 1):
        mods += [torch.nn.Linear(case.widths[i - 1], case.widths[i]), torch.nn.Tanh()]
    model = torch.nn.Sequential(*mods[:-1])
    linears = [m for m in model if isinstance(m, torch.nn.Linear)]
    return model, [(f"{k}{i}", getattr(lin, attr)) for i, lin in enumerate(linears, start=1)
                   for k, attr in (("w", "weight"), ("b", "bias"))]


def cnn_model(case):
    c, c1, c2, classes = case.widths
    conv1, conv2 = torch.nn.Conv2d(c, c1, 3, padding=1), torch.nn.Conv2d(c1, c2, 3, padding=1)
    dense = torch.nn.Linear(case.dense_in, classes)
    model = torch.nn.Sequential(conv1, torch.nn.ReLU(), torch.nn.MaxPool2d(2), conv2, torch.nn.ReLU(),
                                torch.nn.MaxPool2d(2), torch.nn.Flatten(), dense)
    return model, [("k1", conv1.weight), ("c1", conv1.bias), ("k2", conv2.weight), ("c2", conv2.bias),
                   ("w", dense.weight), ("b", dense.bias)]


def from_kiln(a, p):
    """kiln's layout of a parameter (NumPy) as PyTorch's tensor p holds it."""
    t = torch.from_numpy(a)
    return t.T if t.dim() == 2 else t.reshape(p.shape)


def to_kiln(a, shape):
    """A NumPy copy of a PyTorch parameter (or its Adam state) in kiln's layout, whose shape is `shape`."""
    return a.T if a.ndim == 2 else a.reshape(shape)
