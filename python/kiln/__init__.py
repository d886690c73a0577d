"""kiln: a JIT compiler from tensor graphs to CPU and GPU kernels.

    import numpy as np, kiln
    f = kiln.compile('''
    func @main(%x: f32[2,3], %s: f32[]) -> f32[2] {
      %y = mul %x, %s
      %r = reduce_sum %y {axes = [1]}
      return %r
    }''', backend="cpu")
    f(np.ones((2, 3), np.float32), np.float32(2))    # array([6., 6.], dtype=float32)

`compile` takes .kiln text, a path to a .kiln file or an ONNX model, or a Graph. Calls take NumPy
arrays or anything that exports DLPack on the CPU (PyTorch and JAX arrays), of the exact dtype and
shape of each parameter, and return NumPy arrays (which PyTorch and JAX take back through DLPack
without a copy). kiln's errors raise KilnError with kiln's message. docs/python.md has the tour.
"""
import os

import numpy as np

from ._kiln import DType, FunctionBuilder, Graph, KilnError, Node, Trainer, version
from ._kiln import compile as _compile
# The element types: kiln.f32, kiln.bf16, kiln.i64, ..., kiln.bool_ (as jax.numpy names them).
from ._kiln import bf16, bool_, f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64

__all__ = ["compile", "load", "parse", "train_step", "DType", "Function", "FunctionBuilder", "Graph", "KilnError",
           "Node", "TrainStep", "version", "bf16", "bool_", "f16", "f32", "f64", "i8", "i16", "i32", "i64", "u8",
           "u16", "u32", "u64"]
__version__ = version()


def parse(text, filename="<text>"):
    """A Graph from .kiln text."""
    return Graph.parse(text, filename)


def load(path):
    """A Graph from a .kiln file or an ONNX model (.onnx)."""
    return Graph.load(os.fspath(path))


def _graph(source):
    if isinstance(source, Graph):
        return source
    if isinstance(source, os.PathLike):
        return load(source)
    if isinstance(source, str):
        # Text has a function body in braces; a path has none.
        return parse(source) if "{" in source else load(source)
    raise TypeError(f"kiln: expected .kiln text, a path or a kiln.Graph, got {type(source).__name__}")


def _array(x, position):
    """A C-contiguous CPU array over x's memory where it allows (NumPy, DLPack exporters)."""
    # np.asarray(order="C") keeps 0-d arrays (scalars) 0-d, where np.ascontiguousarray makes them 1-d.
    if isinstance(x, np.ndarray) or not hasattr(x, "__dlpack__"):
        return np.asarray(x, order="C")
    try:
        return np.asarray(np.from_dlpack(x), order="C")
    except (BufferError, RuntimeError, TypeError) as e:
        raise KilnError(f"input {position}: cannot read it on the CPU through DLPack ({e})") from None


class Function:
    """A compiled function: call it with one array per parameter."""

    def __init__(self, compiled):
        self._compiled = compiled

    def __call__(self, *inputs):
        results = self._compiled.run([_array(x, i) for i, x in enumerate(inputs)])
        return results[0] if len(results) == 1 else tuple(results)

    @property
    def name(self):
        return self._compiled.name

    @property
    def params(self):
        """(name, dtype, shape) of each parameter."""
        return self._compiled.params

    @property
    def results(self):
        """(name, dtype, shape) of each result (names are empty)."""
        return self._compiled.results

    @property
    def backend(self):
        """"cpu", "cuda" or "interp"."""
        return self._compiled.backend

    @property
    def kernels(self):
        """The kernels a call runs, in order."""
        return self._compiled.kernels

    def dump(self, stage="kiln"):
        """A stage of compilation as text: "kiln" (after kiln's passes), "llvm-unopt", "llvm", "asm"/"ptx"."""
        return self._compiled.dump(stage)

    def __repr__(self):
        return f"<kiln.Function @{self.name} on {self.backend}: {len(self.kernels)} kernels>"


def compile(source, backend="auto", *, function="", fast_math=False, gpu_arch="sm_80", disabled_passes=(),
            dump_dir="", devices=0, split=False):
    """Compiles a function (the entry, @main else the first, unless `function` names one) of .kiln text,
    a .kiln or .onnx file, or a Graph, for backend "auto" (cuda where a GPU is usable, else cpu), "cpu",
    "cuda" or "interp". Compiled code is cached by content, so compiling the same function again is quick.
    `devices=N` runs it placed across N devices (its ops' `device` attributes, or with `split=True`
    placed by compute; docs/parallelism.md)."""
    return Function(_compile(_graph(source), backend, function, gpu_arch, fast_math, list(disabled_passes),
                             os.fspath(dump_dir), devices, split))


class TrainStep:
    """A loss function's forward pass, gradient and optimizer update compiled into one step, with the
    parameters and optimizer state kept where the step runs."""

    def __init__(self, trainer):
        self._trainer = trainer

    def __call__(self, *data, lr):
        """One update on a batch (the function's data parameters in order); returns the loss, or
        (loss, metrics) where the function has further scalar results."""
        loss, metrics = self._trainer.step([_array(x, i) for i, x in enumerate(data)], float(lr))
        return (loss, metrics) if metrics else loss

    @property
    def param_names(self):
        return self._trainer.param_names

    @property
    def data_names(self):
        return self._trainer.data_names

    @property
    def step_count(self):
        return self._trainer.step_count

    @property
    def params(self):
        """The trained parameters' current values, by name."""
        return dict(zip(self._trainer.param_names, self._trainer.params()))

    @params.setter
    def params(self, values):
        """Sets the parameters from a dict by name, or a sequence in param_names' order."""
        if isinstance(values, dict):
            missing = [n for n in self._trainer.param_names if n not in values]
            if missing:
                raise KilnError(f"no value for parameter(s) {', '.join(missing)}")
            values = [values[n] for n in self._trainer.param_names]
        self._trainer.set_params([_array(v, i) for i, v in enumerate(values)])

    def save(self, directory):
        """Parameters, optimizer state and step count as a checkpoint directory."""
        self._trainer.save(os.fspath(directory))

    def load(self, directory):
        self._trainer.load(os.fspath(directory))


def train_step(source, params, optimizer="sgd", *, batch=0, accumulate=1, backend="cpu", function="", devices=0,
               split=False, pipeline=False, schedule="gpipe"):
    """Builds and compiles the training step of a loss function (its first result a scalar loss):
    `params` names the parameters to train, the others are data; `optimizer` is "sgd", "momentum",
    "nesterov", "adam" or "adamw"; `batch` samples per update (0: as written), `accumulate`
    micro-batches per update. `devices=N` trains it placed across N devices (`split=True`: placed by
    compute), `pipeline=True` pipelines the micro-batches through them ("gpipe" or "1f1b").
    Parameters start at zero until `step.params = {...}`."""
    return TrainStep(Trainer.create(_graph(source), list(params), optimizer, batch, accumulate, backend, function,
                                    devices, split, pipeline, schedule))
