"""Architecture builders for kiln's model-zoo tests (driven by make_models.py in this folder).

Every model is written from scratch with onnx.helper, in the node style that PyTorch's exporter
produces for the original network (Conv + BatchNormalization + Relu unfused, LayerNormalization,
MatMul + Add for linear layers, Gemm for classifier heads), using only the standard ONNX domain at
opset 17. Weights are random, drawn from numpy's default_rng with a fixed seed; their scales are
chosen so that activations stay of order one through the whole depth, which keeps the reference
outputs meaningful (no overflow, no softmax collapsed to one-hot or flattened to uniform).

Each architecture has two scales: "real" (the published sizes) and "small" (the same graph
structure, far narrower and on tiny inputs, so that a slow GPU simulator can run it).
"""
import collections
import contextlib
import math
import zlib

import numpy as np
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8  # the IR version that goes with opset 17 (ONNX 1.12)
SCALES = ("real", "small")


# ----------------------------------------------------------------------------------------------
# Graph builder
# ----------------------------------------------------------------------------------------------

class Builder:
    """Collects the nodes, initializers, inputs and outputs of one graph.

    Names follow the module path of the PyTorch original ("layer1.0.conv1.weight"): `scope()`
    pushes a path component, and every node or initializer is named under the current path; a
    counter makes repeated names unique ("layer1.0.Relu", "layer1.0.Relu_1", ...).
    """

    def __init__(self, graph_name, seed):
        self.graph_name = graph_name
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.initializers = []
        self.inputs = []
        self.outputs = []
        self.num_params = 0        # elements of learned weights (shape constants not counted)
        self._scopes = []
        self._used = set()         # every node and tensor name taken so far
        self._counters = collections.Counter()
        self._consts = {}          # (dtype, shape, bytes) -> name, so constants are shared

    # -- names ---------------------------------------------------------------------------------

    @contextlib.contextmanager
    def scope(self, name):
        self._scopes.append(str(name))
        try:
            yield
        finally:
            self._scopes.pop()

    def _unique(self, leaf):
        base = ".".join(self._scopes + [leaf])
        name = base
        while name in self._used:
            self._counters[base] += 1
            name = "{}_{}".format(base, self._counters[base])
        self._used.add(name)
        return name

    # -- inputs, outputs, initializers ----------------------------------------------------------

    def input(self, name, elem_type, shape):
        self._used.add(name)
        self.inputs.append(helper.make_tensor_value_info(name, elem_type, shape))
        return name

    def output(self, value, name, elem_type, shape):
        """Makes `value` (a node's output) a graph output named `name`."""
        for node in self.nodes:
            for i, out in enumerate(node.output):
                if out == value:
                    node.output[i] = name
            for i, inp in enumerate(node.input):
                if inp == value:
                    node.input[i] = name
        self._used.add(name)
        self.outputs.append(helper.make_tensor_value_info(name, elem_type, shape))
        return name

    def _initializer(self, leaf, array, learned):
        name = self._unique(leaf)
        self.initializers.append(numpy_helper.from_array(array, name))
        if learned:
            self.num_params += array.size
        return name

    def normal(self, leaf, shape, std, mean=0.0):
        """A learned float32 weight drawn from N(mean, std^2)."""
        w = self.rng.standard_normal(shape, dtype=np.float32) * np.float32(std)
        if mean:
            w += np.float32(mean)
        return self._initializer(leaf, w, learned=True)

    def uniform(self, leaf, shape, low, high):
        """A learned float32 weight drawn from U(low, high)."""
        w = self.rng.uniform(low, high, size=shape).astype(np.float32)
        return self._initializer(leaf, w, learned=True)

    def const(self, value, dtype=np.int64):
        """A constant tensor (shapes, axes, scalars), shared between all users of the same value."""
        array = np.asarray(value, dtype=dtype)
        key = (array.dtype.str, array.shape, array.tobytes())
        if key not in self._consts:
            saved, self._scopes = self._scopes, []      # constants live at the top level
            self._consts[key] = self._initializer("const_" + array.dtype.name, array, learned=False)
            self._scopes = saved
        return self._consts[key]

    def scalar(self, value):
        """A float32 scalar constant."""
        return self.const(value, np.float32)

    # -- nodes ---------------------------------------------------------------------------------

    def op(self, op_type, inputs, leaf=None, outputs=1, **attrs):
        """Appends one node; returns its output name (or list of names when outputs > 1).

        The node is named <scope>.<leaf or op_type>; its single output carries the same name (node
        and tensor names live in separate namespaces in ONNX, but the builder keeps them apart
        anyway), multiple outputs get ":0", ":1", ... suffixes.
        """
        name = self._unique(leaf or op_type)
        if outputs == 1:
            outs = [name]
        else:
            outs = ["{}:{}".format(name, i) for i in range(outputs)]
            self._used.update(outs)
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, name=name, **attrs))
        return outs[0] if outputs == 1 else outs

    # -- the result ------------------------------------------------------------------------------

    def model(self, doc):
        graph = helper.make_graph(self.nodes, self.graph_name, self.inputs, self.outputs,
                                  initializer=self.initializers, doc_string=doc)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="kiln tests/models/make_models.py")
        model.ir_version = IR_VERSION
        return model


# ----------------------------------------------------------------------------------------------
# Layers shared by the architectures
# ----------------------------------------------------------------------------------------------

def relu(b, x):
    return b.op("Relu", [x])


def relu6(b, x):
    """ReLU6 as PyTorch exports it: Clip with min 0 and max 6 given as inputs (opset >= 11)."""
    return b.op("Clip", [x, b.scalar(0.0), b.scalar(6.0)])


def silu(b, x):
    """SiLU (swish) written out as x * Sigmoid(x), as exported before ONNX had a Swish op."""
    return b.op("Mul", [x, b.op("Sigmoid", [x])])


def gelu_erf(b, x):
    """Exact GELU, 0.5 x (1 + erf(x / sqrt 2)), in the node order of PyTorch's export."""
    e = b.op("Erf", [b.op("Div", [x, b.scalar(math.sqrt(2.0))])])
    return b.op("Mul", [b.op("Mul", [x, b.op("Add", [e, b.scalar(1.0)])]), b.scalar(0.5)])


def gelu_tanh(b, x):
    """GPT-2's GELU, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), with Pow for the cube."""
    cube = b.op("Pow", [x, b.scalar(3.0)])
    inner = b.op("Add", [x, b.op("Mul", [cube, b.scalar(0.044715)])])
    t = b.op("Tanh", [b.op("Mul", [inner, b.scalar(math.sqrt(2.0 / math.pi))])])
    return b.op("Mul", [b.op("Mul", [x, b.scalar(0.5)]), b.op("Add", [t, b.scalar(1.0)])])


ACTIVATIONS = {"relu": relu, "relu6": relu6, "silu": silu, None: lambda b, x: x}


def conv(b, x, cin, cout, k, stride=1, groups=1, bias=False, leaf="conv", std=None, pad=None,
         bias_mean=0.0):
    """Conv2d, by default with PyTorch's "same" padding (k-1)/2 on every side; He-initialised
    (std sqrt(2 / fan_in)) unless `std` is given."""
    fan_in = cin // groups * k * k
    with b.scope(leaf):
        inputs = [x, b.normal("weight", (cout, cin // groups, k, k), std or math.sqrt(2.0 / fan_in))]
        if bias:
            inputs.append(b.normal("bias", (cout,), 0.02, bias_mean))
    p = (k - 1) // 2 if pad is None else pad
    return b.op("Conv", inputs, leaf=leaf, kernel_shape=[k, k], strides=[stride, stride],
                pads=[p, p, p, p], group=groups)


def batch_norm(b, x, c, eps, gamma=(0.8, 1.2), leaf="bn"):
    """Inference-mode BatchNormalization with random affine parameters and running statistics.

    `gamma` is the range of the scale; residual branches end with a small one (the way
    zero_init_residual trains them towards) so that the sum of many blocks does not blow up.
    """
    with b.scope(leaf):
        scale = b.uniform("weight", (c,), *gamma)
        shift = b.normal("bias", (c,), 0.05)
        mean = b.normal("running_mean", (c,), 0.05)
        var = b.uniform("running_var", (c,), 0.8, 1.2)
    return b.op("BatchNormalization", [x, scale, shift, mean, var], leaf=leaf, epsilon=eps)


def conv_bn_act(b, x, cin, cout, k, stride=1, groups=1, act="relu", eps=1e-5, gamma=(0.8, 1.2),
                index=None):
    """Conv + BatchNormalization + activation, the unit of every CNN here.

    `index` names the pair "conv<i>"/"bn<i>" (torchvision's ResNet); without it the pair is
    "<n>.0"/"<n>.1" inside a numbered Sequential, as in MobileNetV2 and EfficientNet.
    """
    if index is not None:
        y = conv(b, x, cin, cout, k, stride, groups, leaf="conv{}".format(index))
        y = batch_norm(b, y, cout, eps, gamma, leaf="bn{}".format(index))
    else:
        y = conv(b, x, cin, cout, k, stride, groups, leaf="0")
        y = batch_norm(b, y, cout, eps, gamma, leaf="1")
    return ACTIVATIONS[act](b, y)


def classifier_head(b, x, features, classes):
    """GlobalAveragePool -> Flatten -> Gemm (weight [classes, features], transB), torchvision's tail."""
    pooled = b.op("GlobalAveragePool", [x], leaf="avgpool")
    flat = b.op("Flatten", [pooled], axis=1)
    return gemm(b, flat, features, classes, leaf="fc")


def gemm(b, x, fin, fout, leaf):
    """nn.Linear on a 2-D input as exported: Gemm with the [out, in] weight and transB=1."""
    with b.scope(leaf):
        w = b.normal("weight", (fout, fin), 1.0 / math.sqrt(fin))
        bias = b.normal("bias", (fout,), 0.02)
    return b.op("Gemm", [x, w, bias], leaf=leaf, transB=1)


def linear(b, x, fin, fout, leaf, std=None):
    """nn.Linear on a 3-D input as exported: MatMul with the [in, out] weight, then Add the bias."""
    with b.scope(leaf):
        w = b.normal("weight", (fin, fout), std or 1.0 / math.sqrt(fin))
        bias = b.normal("bias", (fout,), 0.02)
        return b.op("Add", [b.op("MatMul", [x, w]), bias])


def layer_norm(b, x, dim, eps, leaf):
    """LayerNormalization over the last axis (an opset-17 op) with random scale and shift."""
    with b.scope(leaf):
        scale = b.uniform("weight", (dim,), 0.8, 1.2)
        shift = b.normal("bias", (dim,), 0.05)
    return b.op("LayerNormalization", [x, scale, shift], leaf=leaf, axis=-1, epsilon=eps)


# -- attention --------------------------------------------------------------------------------

def split_heads(b, t, batch, seq, heads, head_dim, keys=False):
    """[B, S, H] -> [B, heads, S, head_dim] (or [B, heads, head_dim, S] for keys, ready to MatMul)."""
    t = b.op("Reshape", [t, b.const([batch, seq, heads, head_dim])])
    return b.op("Transpose", [t], perm=[0, 2, 3, 1] if keys else [0, 2, 1, 3])


def merge_heads(b, t, batch, seq, hidden):
    """[B, heads, S, head_dim] -> [B, S, H]."""
    t = b.op("Transpose", [t], perm=[0, 2, 1, 3])
    return b.op("Reshape", [t, b.const([batch, seq, hidden])])


def attend(b, q, k_t, v, head_dim, additive_mask=None, keep=None, fill=-1e9):
    """softmax(q k^T / sqrt(head_dim) + mask) v on [B, heads, S, *] tensors.

    `additive_mask` is added to the scores (BERT's padding mask); `keep` is a boolean mask that
    Where uses to replace the scores it does not keep by `fill` (GPT-2's causal mask).
    """
    scores = b.op("MatMul", [q, k_t])
    scores = b.op("Div", [scores, b.scalar(math.sqrt(head_dim))])
    if additive_mask is not None:
        scores = b.op("Add", [scores, additive_mask])
    if keep is not None:
        scores = b.op("Where", [keep, scores, b.scalar(fill)])
    probs = b.op("Softmax", [scores], axis=-1)
    return b.op("MatMul", [probs, v])


# ----------------------------------------------------------------------------------------------
# CNNs
# ----------------------------------------------------------------------------------------------

def bottleneck(b, x, cin, planes, stride):
    """torchvision's ResNet-50 Bottleneck (v1.5: the stride sits on the 3x3 conv), expansion 4."""
    cout = planes * 4
    y = conv_bn_act(b, x, cin, planes, 1, index=1)
    y = conv_bn_act(b, y, planes, planes, 3, stride, index=2)
    y = conv_bn_act(b, y, planes, cout, 1, act=None, gamma=(0.1, 0.3), index=3)
    if stride != 1 or cin != cout:
        with b.scope("downsample"):
            identity = conv_bn_act(b, x, cin, cout, 1, stride, act=None)
    else:
        identity = x
    return relu(b, b.op("Add", [y, identity])), cout


def resnet50(b, cfg):
    width, image, classes = cfg["width"], cfg["image"], cfg["classes"]
    x = b.input("input", TensorProto.FLOAT, [1, 3, image, image])
    y = conv_bn_act(b, x, 3, width, 7, stride=2, index=1)
    y = b.op("MaxPool", [y], leaf="maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    channels = width
    for stage, blocks in enumerate([3, 4, 6, 3]):
        planes = width * 2 ** stage
        for i in range(blocks):
            with b.scope("layer{}".format(stage + 1)), b.scope(i):
                y, channels = bottleneck(b, y, channels, planes, 2 if (i == 0 and stage > 0) else 1)
    logits = classifier_head(b, y, channels, classes)
    b.output(logits, "logits", TensorProto.FLOAT, [1, classes])


def make_divisible(v, divisor=8):
    """torchvision's channel rounding: to a multiple of 8, never below 90% of v."""
    new = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new + divisor if new < 0.9 * v else new


def inverted_residual(b, x, cin, cout, stride, expand):
    """MobileNetV2 block: 1x1 expand (ReLU6), 3x3 depthwise (ReLU6), linear 1x1 projection."""
    hidden = cin * expand
    residual = stride == 1 and cin == cout
    y, i = x, 0
    with b.scope("conv"):
        if expand != 1:
            with b.scope(i):
                y = conv_bn_act(b, y, cin, hidden, 1, act="relu6")
            i += 1
        with b.scope(i):
            y = conv_bn_act(b, y, hidden, hidden, 3, stride, groups=hidden, act="relu6")
        y = conv(b, y, hidden, cout, 1, leaf=str(i + 1))
        y = batch_norm(b, y, cout, 1e-5, (0.2, 0.4) if residual else (0.8, 1.2), leaf=str(i + 2))
    return b.op("Add", [x, y]) if residual else y


def mobilenetv2(b, cfg):
    wm, image, classes = cfg["width_mult"], cfg["image"], cfg["classes"]
    x = b.input("input", TensorProto.FLOAT, [1, 3, image, image])
    # (expansion t, channels c, repeats n, first stride s), torchvision's table.
    settings = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
    channels = make_divisible(32 * wm)
    last = cfg["last_channel"]
    with b.scope("features"), b.scope(0):
        y = conv_bn_act(b, x, 3, channels, 3, stride=2, act="relu6")
    index = 1
    for t, c, n, s in settings:
        cout = make_divisible(c * wm)
        for i in range(n):
            with b.scope("features"), b.scope(index):
                y = inverted_residual(b, y, channels, cout, s if i == 0 else 1, t)
            channels, index = cout, index + 1
    with b.scope("features"), b.scope(index):
        y = conv_bn_act(b, y, channels, last, 1, act="relu6")
    # Dropout is the identity at inference: torchvision's export leaves it out.
    logits = classifier_head(b, y, last, classes)
    b.output(logits, "logits", TensorProto.FLOAT, [1, classes])


def squeeze_excitation(b, x, channels, squeeze):
    """SE: global pool, 1x1 conv down (SiLU), 1x1 conv up (Sigmoid), scale the input channels.

    The up-projection's bias is centred on 1.5 so that the gates sit around 0.8 rather than 0.5,
    which would halve the activations in every block."""
    with b.scope("SE"):
        s = b.op("GlobalAveragePool", [x], leaf="avgpool")
        s = silu(b, conv(b, s, channels, squeeze, 1, bias=True, leaf="fc1"))
        s = b.op("Sigmoid", [conv(b, s, squeeze, channels, 1, bias=True, leaf="fc2", bias_mean=1.5)])
        return b.op("Mul", [x, s])


def mbconv(b, x, cin, cout, k, stride, expand):
    """EfficientNet MBConv: 1x1 expand (SiLU), kxk depthwise (SiLU), SE, linear 1x1 projection."""
    hidden = cin * expand
    residual = stride == 1 and cin == cout
    y, i = x, 0
    with b.scope("block"):
        if expand != 1:
            with b.scope(i):
                y = conv_bn_act(b, y, cin, hidden, 1, act="silu", eps=1e-3)
            i += 1
        with b.scope(i):
            y = conv_bn_act(b, y, hidden, hidden, k, stride, groups=hidden, act="silu", eps=1e-3)
        with b.scope(i + 1):
            y = squeeze_excitation(b, y, hidden, max(1, cin // 4))
        with b.scope(i + 2):
            y = conv_bn_act(b, y, hidden, cout, 1, act=None, eps=1e-3,
                            gamma=(0.2, 0.4) if residual else (0.8, 1.2))
    # Stochastic depth is the identity at inference.
    return b.op("Add", [y, x]) if residual else y


def efficientnet_b0(b, cfg):
    wm, image, classes = cfg["width_mult"], cfg["image"], cfg["classes"]
    x = b.input("input", TensorProto.FLOAT, [1, 3, image, image])
    # (expansion, kernel, stride, in channels, out channels, layers), torchvision's B0 table.
    stages = [(1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2), (6, 3, 2, 40, 80, 3),
              (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4), (6, 3, 1, 192, 320, 1)]
    channels = make_divisible(32 * wm)
    with b.scope("features"), b.scope(0):
        y = conv_bn_act(b, x, 3, channels, 3, stride=2, act="silu", eps=1e-3)
    for s, (e, k, stride, _, c, n) in enumerate(stages):
        cout = make_divisible(c * wm)
        for i in range(n):
            with b.scope("features"), b.scope(s + 1), b.scope(i):
                y = mbconv(b, y, channels, cout, k, stride if i == 0 else 1, e)
            channels = cout
    head = 4 * channels
    with b.scope("features"), b.scope(len(stages) + 1):
        y = conv_bn_act(b, y, channels, head, 1, act="silu", eps=1e-3)
    logits = classifier_head(b, y, head, classes)
    b.output(logits, "logits", TensorProto.FLOAT, [1, classes])


# ----------------------------------------------------------------------------------------------
# Transformers
# ----------------------------------------------------------------------------------------------

def vit_attention(b, x, seq, hidden, heads):
    """torchvision's nn.MultiheadAttention: one fused in-projection [H, 3H], then the heads are
    cut out of a [B, S, 3, heads, hd] view (Reshape, Transpose, Split, Squeeze)."""
    hd = hidden // heads
    with b.scope("self_attention"):
        qkv = linear(b, x, hidden, 3 * hidden, leaf="in_proj")
        qkv = b.op("Reshape", [qkv, b.const([1, seq, 3, heads, hd])])
        qkv = b.op("Transpose", [qkv], perm=[2, 0, 3, 1, 4])          # [3, B, heads, S, hd]
        parts = b.op("Split", [qkv, b.const([1, 1, 1])], outputs=3, axis=0)
        q, k, v = (b.op("Squeeze", [p, b.const([0])]) for p in parts)
        k_t = b.op("Transpose", [k], perm=[0, 1, 3, 2])
        y = merge_heads(b, attend(b, q, k_t, v, hd), 1, seq, hidden)
        return linear(b, y, hidden, hidden, leaf="out_proj")


def vit_b16(b, cfg):
    image, patch, hidden, heads = cfg["image"], cfg["patch"], cfg["hidden"], cfg["heads"]
    grid = image // patch
    seq = grid * grid + 1
    x = b.input("input", TensorProto.FLOAT, [1, 3, image, image])
    # Patch embedding: a patch x patch conv with stride patch, flattened to [B, patches, H].
    y = conv(b, x, 3, hidden, patch, stride=patch, bias=True, leaf="conv_proj",
             std=1.0 / math.sqrt(3 * patch * patch), pad=0)
    y = b.op("Reshape", [y, b.const([1, hidden, grid * grid])])
    y = b.op("Transpose", [y], perm=[0, 2, 1])
    y = b.op("Concat", [b.normal("class_token", (1, 1, hidden), 0.02), y], axis=1)
    with b.scope("encoder"):
        y = b.op("Add", [y, b.normal("pos_embedding", (1, seq, hidden), 0.02)])
        for i in range(cfg["layers"]):
            with b.scope("layers"), b.scope("encoder_layer_{}".format(i)):
                # Pre-LN: x + attention(LN(x)), then x + MLP(LN(x)).
                a = vit_attention(b, layer_norm(b, y, hidden, 1e-6, "ln_1"), seq, hidden, heads)
                y = b.op("Add", [y, a])
                with b.scope("mlp"):
                    m = layer_norm(b, y, hidden, 1e-6, "ln_2")
                    m = gelu_erf(b, linear(b, m, hidden, cfg["mlp"], leaf="0"))
                    m = linear(b, m, cfg["mlp"], hidden, leaf="3")
                y = b.op("Add", [y, m])
        y = layer_norm(b, y, hidden, 1e-6, "ln")
    cls = b.op("Gather", [y, b.const(0)], axis=1)                   # x[:, 0] -> [B, H]
    logits = gemm(b, cls, hidden, cfg["classes"], leaf="heads.head")
    b.output(logits, "logits", TensorProto.FLOAT, [1, cfg["classes"]])


def bert_attention(b, x, mask, seq, hidden, heads):
    """BERT self-attention: separate query, key and value projections, additive padding mask."""
    hd = hidden // heads
    # With random weights, attention averages the tokens together layer after layer until the
    # last layers' softmax is uniform. Query and key weights a little larger than 1/sqrt(H) and
    # a small output projection (the averaged part added back to each token) keep them apart.
    qk_std, out_std = 1.5 / math.sqrt(hidden), 0.3 / math.sqrt(hidden)
    with b.scope("attention"):
        with b.scope("self"):
            q = split_heads(b, linear(b, x, hidden, hidden, "query", qk_std), 1, seq, heads, hd)
            k = split_heads(b, linear(b, x, hidden, hidden, "key", qk_std), 1, seq, heads, hd, keys=True)
            v = split_heads(b, linear(b, x, hidden, hidden, "value"), 1, seq, heads, hd)
            y = merge_heads(b, attend(b, q, k, v, hd, additive_mask=mask), 1, seq, hidden)
        with b.scope("output"):
            y = linear(b, y, hidden, hidden, "dense", out_std)
            return layer_norm(b, b.op("Add", [y, x]), hidden, 1e-12, "LayerNorm")


def bert_encoder(b, cfg):
    seq, hidden, heads = cfg["seq"], cfg["hidden"], cfg["heads"]
    ids = b.input("input_ids", TensorProto.INT64, [1, seq])
    mask = b.input("attention_mask", TensorProto.INT64, [1, seq])
    with b.scope("embeddings"):
        words = b.op("Gather", [b.normal("word_embeddings", (cfg["vocab"], hidden), 0.02), ids])
        pos = b.op("Gather", [b.normal("position_embeddings", (cfg["positions"], hidden), 0.02),
                              b.const([list(range(seq))])])
        # No token_type_ids input: all tokens are segment 0, gathered from a constant.
        types = b.op("Gather", [b.normal("token_type_embeddings", (2, hidden), 0.02),
                                b.const([[0] * seq])])
        y = layer_norm(b, b.op("Add", [b.op("Add", [words, types]), pos]), hidden, 1e-12, "LayerNorm")
    # The extended attention mask (1 - mask) * -10000, broadcast as [B, 1, 1, S] over the scores.
    m = b.op("Cast", [mask], to=TensorProto.FLOAT)
    m = b.op("Mul", [b.op("Sub", [b.scalar(1.0), m]), b.scalar(-10000.0)])
    m = b.op("Unsqueeze", [m, b.const([1, 2])])
    for i in range(cfg["layers"]):
        with b.scope("encoder"), b.scope("layer"), b.scope(i):
            # Post-LN: LN(x + attention(x)), then LN(x + FFN(x)).
            y = bert_attention(b, y, m, seq, hidden, heads)
            f = gelu_erf(b, linear(b, y, hidden, cfg["ffn"], "intermediate.dense"))
            with b.scope("output"):
                f = linear(b, f, cfg["ffn"], hidden, "dense")
                y = layer_norm(b, b.op("Add", [f, y]), hidden, 1e-12, "LayerNorm")
    b.output(y, "last_hidden_state", TensorProto.FLOAT, [1, seq, hidden])


def gpt2_attention(b, x, causal, seq, hidden, heads):
    """GPT-2 attention: fused c_attn [H, 3H] split on the last axis, causal mask through Where."""
    hd = hidden // heads
    with b.scope("attn"):
        qkv = linear(b, x, hidden, 3 * hidden, "c_attn")
        q, k, v = b.op("Split", [qkv, b.const([hidden] * 3)], outputs=3, axis=2)
        q = split_heads(b, q, 1, seq, heads, hd)
        k = split_heads(b, k, 1, seq, heads, hd, keys=True)
        v = split_heads(b, v, 1, seq, heads, hd)
        y = merge_heads(b, attend(b, q, k, v, hd, keep=causal), 1, seq, hidden)
        return linear(b, y, hidden, hidden, "c_proj")


def gpt2_decoder(b, cfg):
    seq, hidden, heads, vocab = cfg["seq"], cfg["hidden"], cfg["heads"], cfg["vocab"]
    ids = b.input("input_ids", TensorProto.INT64, [1, seq])
    with b.scope("transformer"):
        wte = b.normal("wte.weight", (vocab, hidden), 0.02)
        y = b.op("Add", [b.op("Gather", [wte, ids]),
                         b.op("Gather", [b.normal("wpe.weight", (cfg["positions"], hidden), 0.01),
                                         b.const([list(range(seq))])])])
        # Causal mask built in the graph: the lower triangle of a [S, S] block of ones, as bool.
        with b.scope("causal_mask"):
            ones = b.op("ConstantOfShape", [b.const([seq, seq])],
                        value=helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0]))
            causal = b.op("Cast", [b.op("Trilu", [ones], upper=0)], to=TensorProto.BOOL)
        for i in range(cfg["layers"]):
            with b.scope("h"), b.scope(i):
                # Pre-LN: x + attention(LN(x)), then x + MLP(LN(x)).
                a = gpt2_attention(b, layer_norm(b, y, hidden, 1e-5, "ln_1"), causal, seq, hidden, heads)
                y = b.op("Add", [y, a])
                with b.scope("mlp"):
                    m = layer_norm(b, y, hidden, 1e-5, "ln_2")
                    m = gelu_tanh(b, linear(b, m, hidden, 4 * hidden, "c_fc"))
                    m = linear(b, m, 4 * hidden, hidden, "c_proj")
                y = b.op("Add", [y, m])
        y = layer_norm(b, y, hidden, 1e-5, "ln_f")
    # The LM head shares the token embedding (tied weights): logits = h wte^T.
    logits = b.op("MatMul", [y, b.op("Transpose", [wte], leaf="lm_head.transpose", perm=[1, 0])],
                  leaf="lm_head")
    b.output(logits, "logits", TensorProto.FLOAT, [1, seq, vocab])


# ----------------------------------------------------------------------------------------------
# The zoo: builders, configurations at both scales, and input data
# ----------------------------------------------------------------------------------------------

def image_inputs(rng, cfg):
    return {"input": rng.standard_normal((1, 3, cfg["image"], cfg["image"]), dtype=np.float32)}


def bert_inputs(rng, cfg):
    seq = cfg["seq"]
    ids = rng.integers(0, cfg["vocab"], size=(1, seq), dtype=np.int64)
    mask = np.zeros((1, seq), dtype=np.int64)
    mask[0, :rng.integers(seq // 2, seq)] = 1      # some padding at the end, so the mask matters
    return {"input_ids": ids, "attention_mask": mask}


def gpt2_inputs(rng, cfg):
    return {"input_ids": rng.integers(0, cfg["vocab"], size=(1, cfg["seq"]), dtype=np.int64)}


Arch = collections.namedtuple("Arch", "build inputs doc configs")

ZOO = collections.OrderedDict([
    ("resnet50", Arch(resnet50, image_inputs,
                      "ResNet-50 (torchvision layout), Conv + BatchNormalization + Relu unfused", {
                          "real": dict(image=224, width=64, classes=1000),
                          "small": dict(image=32, width=8, classes=10)})),
    ("mobilenetv2", Arch(mobilenetv2, image_inputs,
                         "MobileNetV2 (torchvision layout), ReLU6 as Clip, depthwise grouped convs", {
                             "real": dict(image=224, width_mult=1.0, last_channel=1280, classes=1000),
                             "small": dict(image=32, width_mult=0.25, last_channel=160, classes=10)})),
    ("efficientnet_b0", Arch(efficientnet_b0, image_inputs,
                             "EfficientNet-B0 (torchvision layout), MBConv with squeeze-excitation, SiLU", {
                                 "real": dict(image=224, width_mult=1.0, classes=1000),
                                 "small": dict(image=32, width_mult=0.25, classes=10)})),
    ("vit_b16", Arch(vit_b16, image_inputs,
                     "ViT-B/16 (torchvision layout), pre-LN encoder, erf GELU", {
                         "real": dict(image=224, patch=16, hidden=768, heads=12, layers=12, mlp=3072,
                                      classes=1000),
                         "small": dict(image=32, patch=8, hidden=64, heads=4, layers=2, mlp=256,
                                       classes=10)})),
    ("bert_encoder", Arch(bert_encoder, bert_inputs,
                          "BERT-base encoder (HF layout), post-LN, additive padding mask", {
                              "real": dict(seq=128, hidden=768, heads=12, layers=12, ffn=3072,
                                           vocab=30522, positions=512),
                              "small": dict(seq=16, hidden=64, heads=4, layers=2, ffn=256,
                                            vocab=1000, positions=64)})),
    ("gpt2_decoder", Arch(gpt2_decoder, gpt2_inputs,
                          "GPT-2 small decoder (HF layout), pre-LN, causal mask, tanh GELU, tied LM head", {
                              "real": dict(seq=64, hidden=768, heads=12, layers=12, vocab=50257,
                                           positions=1024),
                              "small": dict(seq=16, hidden=64, heads=4, layers=2, vocab=1000,
                                            positions=64)})),
])


def model_seed(name, seed):
    """Each model's own seed, so a model's weights do not depend on which others are built."""
    return (seed * 1000003 + zlib.crc32(name.encode())) & 0xFFFFFFFF


def build(name, scale="real", seed=0):
    """Builds one zoo model: returns (onnx.ModelProto, {input name: numpy array}, learned params)."""
    arch = ZOO[name]
    cfg = arch.configs[scale]
    b = Builder(name, model_seed(name, seed))
    arch.build(b, cfg)
    doc = "{} at {} scale ({}), random weights (seed {}); generated by kiln's tests/models/make_models.py".format(
        arch.doc, scale, ", ".join("{}={}".format(k, v) for k, v in cfg.items()), seed)
    feeds = arch.inputs(np.random.default_rng(model_seed(name + ".inputs", seed)), cfg)
    return b.model(doc), feeds, b.num_params
