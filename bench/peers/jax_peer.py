"""JAX side of the peers' harness (harness.py --framework jax): each case's math through jax.jit,
timed on the host around batches of back-to-back calls that end in block_until_ready (JAX has no
public device events; a batch of a few milliseconds makes the final synchronisation negligible).
The copy baseline is jit(x + 1) over a float32 vector: reading and writing every byte once, as a
copy does (an identity jit may be elided or forwarded by JAX, so it would time nothing).
Without jax_enable_x64 (JAX's default, kept here) i64 inputs become i32."""

import gc
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax


class NoDevice(Exception):
    pass


DTYPES = {"f32": jnp.float32, "bf16": jnp.bfloat16, "f16": jnp.float16, "f64": jnp.float64,
          "i64": jnp.int32, "i32": jnp.int32, "i8": jnp.int8, "bool": jnp.bool_}
HALF = (jnp.bfloat16, jnp.float16)


def _up(x):
    return x.astype(jnp.float32) if x.dtype in HALF else x


class JaxOps:
    """cases.py's ops interface. Softmax, log-softmax and layer norm of 16-bit inputs compute in
    float32 and round the result once."""

    def matmul(self, a, b): return jnp.matmul(a, b)
    def softmax(self, x, axis): return jax.nn.softmax(_up(x), axis=axis).astype(x.dtype)
    def log_softmax(self, x, axis): return jax.nn.log_softmax(_up(x), axis=axis).astype(x.dtype)

    def layer_norm(self, x, scale, bias, eps):
        xf = _up(x)
        mean = jnp.mean(xf, axis=-1, keepdims=True)
        var = jnp.mean(jnp.square(xf - mean), axis=-1, keepdims=True)
        return ((xf - mean) * lax.rsqrt(var + eps) * _up(scale) + _up(bias)).astype(x.dtype)

    def tanh(self, x): return jnp.tanh(x)
    def sqrt(self, x): return jnp.sqrt(x)
    def abs(self, x): return jnp.abs(x)
    def sin(self, x): return jnp.sin(x)
    def maximum(self, a, b): return jnp.maximum(a, b)
    def relu(self, x): return jax.nn.relu(x)
    def transpose(self, x, perm): return jnp.transpose(x, perm)
    def contiguous(self, x): return x  # XLA's results are laid out row-major already
    def reshape(self, x, shape): return jnp.reshape(x, shape)
    def mean(self, x, axis): return jnp.mean(x, axis=axis)
    def argmax(self, x, axis): return jnp.argmax(x, axis=axis)
    def take(self, table, ids): return jnp.take(table, ids, axis=0)

    def conv2d(self, x, w, pads):
        top, left, bottom, right = pads
        return lax.conv_general_dilated(x, w, (1, 1), [(top, bottom), (left, right)],
                                        dimension_numbers=("NCHW", "OIHW", "NCHW"))

    def max_pool2d(self, x, k):
        return lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, k, k), (1, 1, k, k), "VALID")

    def cross_entropy(self, logits, labels):
        lp = jax.nn.log_softmax(logits, axis=-1)
        return -jnp.mean(jnp.take_along_axis(lp, labels[:, None], axis=1))

    def map(self, f, xs): return jax.vmap(f)(xs)

    def while_loop(self, cond, body, init):
        init = tuple(jnp.asarray(v, jnp.int32) if isinstance(v, int) else v for v in init)
        return lax.while_loop(lambda s: cond(*s), lambda s: tuple(body(*s)), init)


class Backend:
    name = "jax"

    def __init__(self, cfg):
        self.cfg = cfg
        self.version = jax.__version__
        try:
            gpus = jax.devices("gpu")
        except RuntimeError as e:
            gpus, why = [], str(e).splitlines()[0]
        else:
            why = "no GPU device"
        if gpus:
            self.dev = gpus[0]
            self.device = self.dev.device_kind
        elif cfg.allow_cpu:
            self.dev = jax.devices("cpu")[0]
            self.device = "cpu"
        else:
            raise NoDevice(why)
        jax.config.update("jax_default_matmul_precision", "tensorfloat32" if cfg.precision == "tf32" else "highest")
        self.mode = "jax.jit"
        self.train_mode = "jax.jit(value_and_grad + optax.adam, params and state donated)"
        self.copy_note = "jit(x + 1) over float32 (an identity jit may be elided)"
        self.ops = JaxOps()
        self._copy = None

    def to_device(self, a, dtype):
        if np.issubdtype(a.dtype, np.integer):
            a = a.astype(np.int32)
        return jax.device_put(a, self.dev).astype(DTYPES[dtype])

    def compile(self, fn):
        return jax.jit(fn)

    def sync(self, out=None):
        jax.block_until_ready(out)

    def time_batch(self, f, args, k):
        t0 = time.perf_counter()
        for _ in range(k):
            out = f(*args)
        jax.block_until_ready(out)
        return (time.perf_counter() - t0) * 1e3

    def copy_batch(self, nbytes, k):
        if self._copy is None or self._copy[0].size * 4 != nbytes:
            x = jax.device_put(jax.random.normal(jax.random.PRNGKey(0), (nbytes // 4,), jnp.float32), self.dev)
            self._copy = (x, jax.jit(lambda v: v + 1.0))
        x, f = self._copy
        return self.time_batch(f, (x,), k)

    def to_numpy(self, x, rows=None):
        x = jnp.asarray(x)
        y = x[:rows] if rows and x.ndim else x
        if jnp.issubdtype(y.dtype, jnp.floating):
            return np.asarray(y.astype(jnp.float32) if y.dtype in HALF else y).astype(np.float64)
        return np.asarray(y).astype(np.int64)

    def train_step(self, case, inputs):
        return TrainStep(case, inputs, self.dev)

    def free(self):
        self._copy = None
        gc.collect()
        jax.clear_caches()


# --- the training step (train_cases.py) -------------------------------------------------------

class TrainStep:
    """One optimizer step as JAX users write it: jax.value_and_grad of the loss (with accuracy as
    aux) and optax.adam's update, in one jax.jit with the parameters and the optimizer state
    donated (donate_argnums), so XLA updates them in place. step() carries them into the next call."""

    def __init__(self, case, inputs, dev):
        import optax
        from train_cases import ADAM_BETAS, ADAM_EPS
        compute = jnp.bfloat16 if case.precision == "bf16" else jnp.float32
        layers = case.layers

        def mlp(params, x):
            h = x
            for i in range(1, layers + 1):
                # Mixed precision as Flax's Dense(dtype=bfloat16, param_dtype=float32) does it.
                z = jnp.matmul(h.astype(compute), params[f"w{i}"].astype(compute)) + params[f"b{i}"].astype(compute)
                h = jnp.tanh(z) if i < layers else z
            return h.astype(jnp.float32)

        def cnn(params, x):
            def block(h, k, c):  # conv 3x3 (padding 1) + bias, relu, 2x2 max pool, as Flax's nn.Conv and nn.max_pool
                z = lax.conv_general_dilated(h, k, (1, 1), [(1, 1), (1, 1)], dimension_numbers=("NCHW", "OIHW", "NCHW"))
                return lax.reduce_window(jax.nn.relu(z + c), -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
            h = block(block(x, params["k1"], params["c1"]), params["k2"], params["c2"])
            return jnp.matmul(h.reshape(h.shape[0], -1), params["w"]) + params["b"]

        model = cnn if case.model == "cnn" else mlp

        def loss_fn(params, x, y):
            logits = model(params, x)
            loss = optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
            return loss, jnp.mean(jnp.argmax(logits, axis=1) == y)

        self.opt = optax.adam(case.lr, b1=ADAM_BETAS[0], b2=ADAM_BETAS[1], eps=ADAM_EPS)

        def step(params, opt_state, x, y):
            (loss, accuracy), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, x, y)
            updates, opt_state = self.opt.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state, loss, accuracy

        self.fn = jax.jit(step, donate_argnums=(0, 1))
        self.names = case.param_names
        self.params = {n: jax.device_put(inputs[n], dev) for n in self.names}
        self.state = self.opt.init(self.params)
        self.x = jax.device_put(inputs["x"], dev)
        self.y = jax.device_put(inputs["y"].astype(np.int32), dev)
        self.out = None

    def step(self):
        self.params, self.state, loss, accuracy = self.fn(self.params, self.state, self.x, self.y)
        self.out = (loss, accuracy)

    def sync(self):
        jax.block_until_ready((self.params, self.out))

    def time(self, k):
        t0 = time.perf_counter()
        for _ in range(k):
            self.step()
        self.sync()
        return (time.perf_counter() - t0) * 1e3

    def results(self):
        """After a step: loss, accuracy and the new parameters, m and v by train_cases' names."""
        adam = self.state[0]  # optax.adam = chain(scale_by_adam, scale_by_learning_rate)
        out = {"loss": float(self.out[0]), "accuracy": float(self.out[1])}
        for n in self.names:
            out[f"new_{n}"] = np.asarray(self.params[n], np.float64)
            out[f"new_m_{n}"] = np.asarray(adam.mu[n], np.float64)
            out[f"new_v_{n}"] = np.asarray(adam.nu[n], np.float64)
        return out
