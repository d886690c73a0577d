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

    def free(self):
        self._copy = None
        gc.collect()
        if self.cuda:
            torch.cuda.empty_cache()
