"""The NumPy reference of one training step (train_cases.py's MLP and CNN classifiers with Adam), in float64,
written from the model's definition and not from any framework's code, and the check that compares
a framework's step with it. Every side of the training benchmark (kiln, jax.jit, torch.compile) is
checked against this one function.

Mixed precision ("bf16") is modelled by rounding to bf16 exactly where the model says the values
are bf16 (each dense layer's cast operands, its product and bias sum, tanh's result); the backward
pass runs in float64 through those rounded values (rounding is treated as the identity, as every
framework's cast does in its derivative). The frameworks round their backward products to bf16
too, which the bf16 tolerance allows for.
"""

import numpy as np


def bf16_round(a):
    """float64 values rounded to the nearest bfloat16 (ties to even), as float64."""
    f = np.asarray(a, dtype=np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def forward(case, params, x, y):
    """(loss, accuracy, logits, the layers' inputs, the weights as used, the hidden activations)."""
    r = bf16_round if case.precision == "bf16" else (lambda v: v)
    h = np.asarray(x, np.float64)
    inputs, weights, hidden = [], [], []
    for i in range(1, case.layers + 1):
        h_in, w = r(h), r(params[f"w{i}"])
        inputs.append(h_in)
        weights.append(w)
        z = r(r(h_in @ w) + r(params[f"b{i}"]))
        if i < case.layers:
            h = r(np.tanh(z))
            hidden.append(h)
    logits = z
    loss, accuracy, _ = cross_entropy(logits, y)
    return loss, accuracy, logits, inputs, weights, hidden


def cross_entropy(logits, y):
    """(mean softmax cross-entropy, accuracy, d loss / d logits)."""
    n = len(y)
    shifted = logits - logits.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    dz = np.exp(logp)
    dz[np.arange(n), y] -= 1.0
    return -logp[np.arange(n), y].mean(), float(np.mean(np.argmax(logits, axis=1) == y)), dz / n


def gradients(case, params, x, y):
    """(loss, accuracy, {name: d loss / d name}) by reverse mode, written out layer by layer."""
    if case.model == "cnn":
        return cnn_gradients(params, x, y)
    loss, accuracy, logits, inputs, weights, hidden = forward(case, params, x, y)
    dz = cross_entropy(logits, y)[2]
    grads = {}
    for i in range(case.layers, 0, -1):
        grads[f"w{i}"] = inputs[i - 1].T @ dz     # dW = X^T dY
        grads[f"b{i}"] = dz.sum(axis=0)
        if i > 1:                                 # the data x gets no gradient
            da = dz @ weights[i - 1].T            # dX = dY W^T
            dz = da * (1.0 - hidden[i - 2] ** 2)  # tanh' = 1 - tanh^2
    return loss, accuracy, grads


def windows3x3(a):
    """[N, C, H, W] padded by one on each side -> [N, C, H, W, 3, 3]: each output's input window."""
    return np.lib.stride_tricks.sliding_window_view(np.pad(a, ((0, 0), (0, 0), (1, 1), (1, 1))), (3, 3), axis=(2, 3))


def conv3x3(x, k):
    """A 3x3 convolution, stride 1, padding 1: y[n,o,i,j] = sum_{c,a,b} x[n,c,i+a-1,j+b-1] k[o,c,a,b]."""
    return np.einsum("nchwab,ocab->nohw", windows3x3(x), k, optimize=True)


def conv3x3_backward(x, k, dy):
    """(d x, d k) of conv3x3: d x is dy convolved with the kernel flipped and its channels swapped;
    d k correlates the input windows with dy."""
    dx = conv3x3(dy, k[:, :, ::-1, ::-1].transpose(1, 0, 2, 3))
    dk = np.einsum("nchwab,nohw->ocab", windows3x3(x), dy, optimize=True)
    return dx, dk


def max_pool2x2(a):
    """(2x2 max pool, stride 2, of [N, C, H, W]; the index 0-3 of each window's first maximum)."""
    n, c, h, w = a.shape
    win = a.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(n, c, h // 2, w // 2, 4)
    return win.max(axis=-1), win.argmax(axis=-1)


def max_pool2x2_backward(dy, first_max):
    """The pool's gradient: each window's dy to its first maximum (a tie is a relu's zeros, whose
    gradient relu's derivative zeroes anyway)."""
    n, c, h, w = dy.shape
    win = (np.arange(4) == first_max[..., None]) * dy[..., None]
    return win.reshape(n, c, h, w, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(n, c, 2 * h, 2 * w)


def cnn_gradients(params, x, y):
    """train_cases.CnnTrainCase's model: (loss, accuracy, {name: d loss / d name})."""
    z1 = conv3x3(x, params["k1"]) + params["c1"]
    p1, arg1 = max_pool2x2(np.maximum(z1, 0))
    z2 = conv3x3(p1, params["k2"]) + params["c2"]
    p2, arg2 = max_pool2x2(np.maximum(z2, 0))
    flat = p2.reshape(len(x), -1)
    loss, accuracy, dlogits = cross_entropy(flat @ params["w"] + params["b"], y)
    grads = {"w": flat.T @ dlogits, "b": dlogits.sum(axis=0)}
    dz2 = max_pool2x2_backward((dlogits @ params["w"].T).reshape(p2.shape), arg2) * (z2 > 0)
    grads["c2"] = dz2.sum(axis=(0, 2, 3), keepdims=True)
    dp1, grads["k2"] = conv3x3_backward(p1, params["k2"], dz2)
    dz1 = max_pool2x2_backward(dp1, arg1) * (z1 > 0)
    grads["c1"] = dz1.sum(axis=(0, 2, 3), keepdims=True)
    grads["k1"] = conv3x3_backward(x, params["k1"], dz1)[1]
    return loss, accuracy, grads


def adam(p, g, m, v, lr, t, betas, eps):
    """torch.optim.Adam's (and kiln's, and optax's) update: (new p, new m, new v)."""
    b1, b2 = betas
    m2 = b1 * m + (1 - b1) * g
    v2 = b2 * v + (1 - b2) * g * g
    return p - lr / (1 - b1 ** t) * m2 / (np.sqrt(v2) / np.sqrt(1 - b2 ** t) + eps), m2, v2


def reference_step(case, inputs):
    """One step from `inputs` (train_cases.make_train_inputs' names): {name: float64 array} for every
    result, named as train_cases.TrainCase.outputs names them."""
    from train_cases import ADAM_BETAS, ADAM_EPS
    f64 = {k: np.asarray(v, np.float64) for k, v in inputs.items()}
    y = np.asarray(inputs["y"], np.int64)
    loss, accuracy, grads = gradients(case, f64, f64["x"], y)
    out = {"loss": np.float64(loss), "accuracy": np.float64(accuracy)}
    t = float(f64["step"])
    for name in case.param_names:
        p2, m2, v2 = adam(f64[name], grads[name], f64[f"m_{name}"], f64[f"v_{name}"], float(f64["lr"]), t,
                          ADAM_BETAS, ADAM_EPS)
        out[f"new_{name}"], out[f"new_m_{name}"], out[f"new_v_{name}"] = p2, m2, v2
    return out


def rel_error(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape or not np.all(np.isfinite(got)):
        return float("inf")
    denom = float(np.linalg.norm(want))
    return float(np.linalg.norm(got - want)) / (denom if denom else 1.0)


def check_step(case, got, want, tol=None):
    """Compares a framework's step results with reference_step's. Returns (ok, worst relative error
    over loss, parameters and state, a short text naming the worst result or what is missing).
    Accuracy is compared in samples: a near-tie in the logits may round either way. `tol` replaces
    the case's relative tolerance (train_cases.check_tolerance)."""
    from train_cases import check_tolerance
    case_tol, samples = check_tolerance(case)
    tol = case_tol if tol is None else tol
    missing = [k for k in want if k not in got]
    if missing:
        return False, float("inf"), f"missing results: {', '.join(missing[:4])}"
    errs = {k: rel_error(got[k], want[k]) for k in want if k != "accuracy"}
    worst = max(errs, key=errs.get)
    flips = abs(float(got["accuracy"]) - float(want["accuracy"])) * case.batch
    ok = errs[worst] <= tol and flips <= samples + 1e-6
    detail = f"worst {worst} rel err {errs[worst]:.3g} (tolerance {tol:g})"
    if flips > 1e-6:
        detail += f"; accuracy differs in {flips:.0f} sample(s) (at most {samples})"
    return ok, errs[worst], detail
