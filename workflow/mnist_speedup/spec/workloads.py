"""Workloads: the networks a run trains, and the analytic cost of one step.

A workload spec is a plain dict from the config's ``workloads:`` mapping:
``{"type": "mlp", "hidden": [800, 800], "dropout": [0.2, 0.5, 0.5]}`` or
``{"type": "cnn", "filters": [32, 64], ...}``. Each type is one
:class:`Workload` subclass registered in :data:`TYPES`: its defaults and
checks, its words, its network as a list of :class:`Layer` (which each framework
builds in its own folder), and the products (matrix
products and convolutions) of one training step, from which both the FLOP
count and the calibration's shapes come. Nothing outside this module asks
which type a workload is; a new network is one class here.

FLOPs are counted as the original did: a multiply-add counts 2; forward
products, weight gradients, and input gradients from the second layer on
(the input needs no gradient); plus written-down element-wise costs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: MNIST's images and classes
IMAGE_SIDE = 28
N_INPUTS = IMAGE_SIDE * IMAGE_SIDE
N_CLASSES = 10
#: the article's network
DEFAULT = {"type": "mlp"}
#: the article's batch size
ARTICLE_BATCH_SIZE = 500

# Element-wise costs per element. Conventions, written down so that the
# count can be checked by hand; the products dominate (97.5% of the MLP's step at batch 100).
_ADAM_FLOPS_PER_PARAM = 12  # m, v moments, bias corrections folded, sqrt, divide, update
_SOFTMAX_XENT_FLOPS_PER_LOGIT = 5  # max-subtract, exp, sum, divide/log, label pick (fwd + bwd)
_RELU_FLOPS = 1  # fwd compare; bwd mask multiply counted as 1 more
_DROPOUT_FLOPS = 1  # multiply by mask/keep (fwd), same again bwd


#: TensorLayer 2.2.5's initial weights, which every framework draws: a normal cut at two standard
#: deviations (tl.layers.Dense's W_init 0.05, Conv2d's 0.02); every bias starts at 0
DENSE_STDDEV = 0.05
CONV_STDDEV = 0.02


@dataclass(frozen=True)
class Layer:
    """One layer of a network, as every framework builds it.

    ``dense``: ``inputs`` -> ``units``; ``conv``: ``inputs`` channels ->
    ``units`` filters, ``kernel`` x ``kernel``, stride 1, SAME; both with
    ``relu`` or not, weights from a truncated normal of ``stddev``.
    ``max_pool``: ``pool`` x ``pool``, stride ``pool``, VALID. ``dropout``:
    drop with probability ``rate`` in training (kept units scaled by
    1/(1-rate)), nothing in evaluation. ``flatten``: NHWC to a row per image."""

    kind: str
    units: int = 0
    inputs: int = 0
    kernel: int = 0
    relu: bool = False
    stddev: float = 0.0
    rate: float = 0.0
    pool: int = 0

    @property
    def weight_shape(self) -> tuple[int, ...] | None:
        """The weights' shape (HWIO for a convolution; None: no weights)."""
        if self.kind == "dense":
            return (self.inputs, self.units)
        if self.kind == "conv":
            return (self.kernel, self.kernel, self.inputs, self.units)
        return None


def dense(inputs: int, units: int, relu: bool) -> Layer:
    return Layer("dense", units=units, inputs=inputs, relu=relu, stddev=DENSE_STDDEV)


class WorkloadError(ValueError):
    """A workload spec that cannot be built; the message names the fix."""


@dataclass(frozen=True)
class Product:
    """One matrix product or convolution of a training step.

    ``kind``: ``matmul`` (m, k, n), or ``conv`` / ``conv_filter`` /
    ``conv_input`` (the forward convolution and its two gradients) with
    ``shape`` = (batch, side, in channels, out channels, kernel), stride 1,
    SAME padding."""

    kind: str
    shape: tuple[int, ...]

    @property
    def flops(self) -> int:
        if self.kind == "matmul":
            m, k, n = self.shape
            return 2 * m * k * n
        b, side, cin, cout, kernel = self.shape
        return 2 * b * side * side * kernel * kernel * cin * cout


def _dense_products(b: int, layers, first_needs_input_grad: bool) -> list[Product]:
    out = [Product("matmul", (b, i, o)) for i, o in layers]  # forward X W
    out += [Product("matmul", (i, b, o)) for i, o in layers]  # weight gradients X^T dY
    needs = layers if first_needs_input_grad else layers[1:]
    out += [Product("matmul", (b, o, i)) for i, o in needs]  # input gradients dY W^T
    return out


class Workload:
    """One network. Subclasses set ``type``, ``keys`` (their spec keys
    with defaults) and the methods that differ."""

    type = ""
    #: the family's name in a legend, and its marker in the figures (each type its own)
    family: str = ""
    marker: str = ""
    keys: dict = {}
    #: ``dropout`` is a list (one rate per layer) rather than one rate
    dropout_per_layer = False

    def __init__(self, spec: dict):
        self.spec = {**self.keys, **{k: v for k, v in spec.items() if k != "type"}}

    @classmethod
    def with_defaults(cls, spec: dict) -> dict:
        """The spec with every key filled in (so that writing a default out
        or leaving it reruns nothing)."""
        return {"type": cls.type} | cls(spec).spec

    # -- what every type provides -----------------------------------------
    input_shape: tuple[int, ...] = (N_INPUTS,)

    def words(self) -> str:
        raise NotImplementedError

    def products(self, batch_size: int) -> list[Product]:
        raise NotImplementedError

    def n_parameters(self) -> int:
        raise NotImplementedError

    def activations(self, batch_size: int) -> dict[str, int]:
        """Elements passed through each element-wise op kind in one forward pass."""
        raise NotImplementedError

    def check(self, label: str, fail) -> None:
        """Refuse a spec that cannot be built: ``fail(key, problem, fix)``."""

    def network(self) -> list[Layer]:
        """The network as a list of layers, from the input on: what every
        framework builds (frameworks/<name>/networks.py), with nothing to ask of the type."""
        raise NotImplementedError

    # -- shared ---------------------------------------------------------------
    def has_convolutions(self) -> bool:
        return any(p.kind != "matmul" for p in self.products(1))

    def matmul_flops(self, batch_size: int) -> int:
        return sum(p.flops for p in self.products(batch_size))

    def elementwise_flops(self, batch_size: int) -> int:
        """Bias adds and their gradients, ReLU, dropout, pooling, softmax
        cross-entropy and the Adam update, with the per-element costs above."""
        a = self.activations(batch_size)
        return (
            2 * a["bias"]  # add fwd + reduce-sum for the bias gradient
            + 2 * _RELU_FLOPS * a["relu"]
            + 2 * _DROPOUT_FLOPS * a["dropout"]
            + 2 * a["pool"]  # compare fwd, route the gradient bwd
            + _SOFTMAX_XENT_FLOPS_PER_LOGIT * batch_size * N_CLASSES
            + _ADAM_FLOPS_PER_PARAM * self.n_parameters()
        )

    def training_step_flops(self, batch_size: int) -> int:
        """Floating-point operations of one training step (forward,
        backward, optimizer update) at ``batch_size``."""
        return self.matmul_flops(batch_size) + self.elementwise_flops(batch_size)


class Mlp(Workload):
    """TensorLayer's MNIST multilayer perceptron (tutorial_mnist_mlp):
    Input 784 -> Dropout -> Dense ReLU ... -> Dropout -> Dense 10."""

    type = "mlp"
    family, marker = "MLP", "o"
    keys = {"hidden": [800, 800], "dropout": None}
    dropout_per_layer = True

    def __init__(self, spec: dict):
        super().__init__(spec)
        if self.spec["dropout"] is None:  # the original's rates: 0.2 on the input, 0.5 after each hidden layer
            self.spec["dropout"] = [0.2] + [0.5] * len(self.spec["hidden"])

    @property
    def layers(self) -> list[tuple[int, int]]:
        widths = [N_INPUTS, *self.spec["hidden"], N_CLASSES]
        return list(zip(widths[:-1], widths[1:]))

    def words(self) -> str:
        sizes = "-".join(str(w) for w in (N_INPUTS, *self.spec["hidden"], N_CLASSES))
        return f"MLP {sizes}"

    def products(self, batch_size: int) -> list[Product]:
        return _dense_products(batch_size, self.layers, first_needs_input_grad=False)

    def network(self) -> list[Layer]:
        out, last = [], len(self.layers) - 1
        for n, ((i, o), rate) in enumerate(zip(self.layers, self.spec["dropout"])):
            if rate > 0:
                out.append(Layer("dropout", rate=rate))
            out.append(dense(i, o, relu=n < last))
        return out

    def n_parameters(self) -> int:
        return sum(i * o + o for i, o in self.layers)

    def activations(self, b: int) -> dict[str, int]:
        hidden = sum(self.spec["hidden"])
        dropped = sum(w for w, r in zip((N_INPUTS, *self.spec["hidden"]), self.spec["dropout"]) if r > 0)
        return {"bias": b * (hidden + N_CLASSES), "relu": b * hidden, "dropout": b * dropped, "pool": 0}

    def check(self, label: str, fail) -> None:
        hidden, dropout = self.spec["hidden"], self.spec["dropout"]
        if len(dropout) != len(hidden) + 1:
            fail(
                f"workloads.{label}.dropout",
                f"has {len(dropout)} rates for {len(hidden)} hidden layers",
                f"give {len(hidden) + 1} rates: one for the input and one after each hidden layer, "
                f"e.g. {[0.2] + [0.5] * len(hidden)}",
            )


class Cnn(Workload):
    """A LeNet-style network: conv kxk (SAME, ReLU) then max-pool per entry
    of ``filters``, flatten, dense ReLU, dropout, dense 10."""

    type = "cnn"
    family, marker = "CNN", "s"
    keys = {"filters": [32, 64], "kernel": 5, "pool": 2, "dense": 1024, "dropout": 0.5}
    input_shape = (IMAGE_SIDE, IMAGE_SIDE, 1)

    def sides(self) -> list[int]:
        """The image side entering each conv layer, then after the last pool."""
        sides = [IMAGE_SIDE]
        for _ in self.spec["filters"]:
            sides.append(sides[-1] // self.spec["pool"])  # VALID pooling drops a remainder
        return sides

    @property
    def dense_layers(self) -> list[tuple[int, int]]:
        flat = self.sides()[-1] ** 2 * self.spec["filters"][-1]
        return [(flat, self.spec["dense"]), (self.spec["dense"], N_CLASSES)]

    def _convs(self) -> list[tuple[int, int, int]]:
        """(side, in channels, out channels) of each conv layer."""
        chans = [1, *self.spec["filters"]]
        return [(s, chans[i], chans[i + 1]) for i, s in enumerate(self.sides()[:-1])]

    def words(self) -> str:
        f, k = self.spec["filters"], self.spec["kernel"]
        convs = "-".join(f"conv{k}x{k}x{c}" for c in f)
        return f"CNN {convs}-dense{self.spec['dense']}-10"

    def products(self, b: int) -> list[Product]:
        k = self.spec["kernel"]
        out = []
        for i, (side, cin, cout) in enumerate(self._convs()):
            shape = (b, side, cin, cout, k)
            out += [Product("conv", shape), Product("conv_filter", shape)]
            if i > 0:
                out.append(Product("conv_input", shape))
        return out + _dense_products(b, self.dense_layers, first_needs_input_grad=True)

    def network(self) -> list[Layer]:
        k, p = self.spec["kernel"], self.spec["pool"]
        out = []
        for _, cin, cout in self._convs():
            out += [
                Layer("conv", units=cout, inputs=cin, kernel=k, relu=True, stddev=CONV_STDDEV),
                Layer("max_pool", pool=p),
            ]
        (flat, hidden), (_, classes) = self.dense_layers
        out += [Layer("flatten"), dense(flat, hidden, relu=True)]
        if self.spec["dropout"] > 0:
            out.append(Layer("dropout", rate=self.spec["dropout"]))
        return out + [dense(hidden, classes, relu=False)]

    def n_parameters(self) -> int:
        k = self.spec["kernel"]
        conv = sum(k * k * cin * cout + cout for _, cin, cout in self._convs())
        return conv + sum(i * o + o for i, o in self.dense_layers)

    def activations(self, b: int) -> dict[str, int]:
        conv_out = sum(side * side * cout for side, _, cout in self._convs())
        dense = self.spec["dense"]
        pool = sum(side * side * cout for side, (_, _, cout) in zip(self.sides()[1:], self._convs()))
        return {
            "bias": b * (conv_out + dense + N_CLASSES),
            "relu": b * (conv_out + dense),
            "dropout": b * dense if self.spec["dropout"] > 0 else 0,
            "pool": b * pool,
        }

    def check(self, label: str, fail) -> None:
        if self.spec["kernel"] > IMAGE_SIDE:
            fail(
                f"workloads.{label}.kernel",
                f"{self.spec['kernel']} is larger than the {IMAGE_SIDE}-pixel image",
                "use a kernel of at most 28, e.g. 5",
            )
        sides = self.sides()
        if sides[-1] < 1:
            fail(
                f"workloads.{label}.filters",
                f"{len(self.spec['filters'])} conv layers, each pooled by {self.spec['pool']}, leave no spatial "
                f"size (28 -> {' -> '.join(str(s) for s in sides[1:])})",
                "use fewer conv layers or a smaller pool, e.g. filters: [32, 64] with pool: 2",
            )


#: every workload type, by its ``type:`` in the config
TYPES: dict[str, type[Workload]] = {cls.type: cls for cls in (Mlp, Cnn)}


def of(spec: dict | None) -> Workload:
    """The workload a spec describes (None: the article's MLP)."""
    spec = spec or DEFAULT
    try:
        return TYPES[spec["type"]](spec)
    except KeyError:
        raise WorkloadError(f"unknown workload type {spec.get('type')!r}; use one of {sorted(TYPES)}") from None


def words(spec: dict | None) -> str:
    """The workload in words, e.g. ``MLP 784-800-800-10``."""
    return of(spec).words()


def flop_words(flops: float) -> str:
    """``12 MFLOP``, ``3.2 GFLOP``: a FLOP count as a reader says it."""
    for scale, unit in ((1e12, "TFLOP"), (1e9, "GFLOP"), (1e6, "MFLOP"), (1e3, "kFLOP")):
        if flops >= scale:
            value = flops / scale
            return f"{value:.2g} {unit}" if value < 10 else f"{value:.0f} {unit}"
    return f"{math.floor(flops)} FLOP"
