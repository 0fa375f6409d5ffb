"""Workloads: the networks a run trains, and the analytic cost of one step.

A workload spec is a plain dict from the config's ``workloads:`` mapping:
``{"type": "mlp", "hidden": [800, 800], "dropout": [0.2, 0.5, 0.5]}`` or
``{"type": "cnn", "filters": [32, 64], ...}``. Each type is one :class:`Workload`
subclass in a file of its own under mnist_speedup/workloads/ (found there, :func:`types`):
its defaults and checks, its words, its network as a list of :class:`Layer` (which each
framework builds from its ``layers/`` folder), and the products (matrix products,
batched products and convolutions) of one training step, from which both the FLOP count
and the calibration's shapes come. Nothing outside these files asks which type a workload is.

A product kind (:class:`ProductKind`) is an Einstein sum (every framework runs it from the
sum alone: a new kind needs no framework code) or a convolution. FLOPs are counted as the
original did: a multiply-add counts 2; forward products, weight gradients, and input
gradients from the second layer on (the input needs no gradient); plus written-down
element-wise costs.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from mnist_speedup import plugins
from mnist_speedup.spec import schema

#: MNIST's images and classes
IMAGE_SIDE = 28
N_INPUTS = IMAGE_SIDE * IMAGE_SIDE
N_CLASSES = 10
#: the article's network
DEFAULT = {"type": "mlp"}
#: the article's batch size
ARTICLE_BATCH_SIZE = 500
#: the workload types' files (mnist_speedup/plugins.py)
PLUGINS = "../workloads/*.py"

# Element-wise costs per element, forward and backward together. Conventions, written down so that the
# count can be checked by hand; the products dominate (97.5% of the MLP's step at batch 100).
# A workload type adds its own kinds in ``elementwise_costs``.
ELEMENTWISE_COSTS = {
    "bias": 2,  # add fwd + reduce-sum for the bias gradient
    "relu": 2,  # fwd compare; bwd mask multiply
    "dropout": 2,  # multiply by mask/keep (fwd), same again bwd
    "pool": 2,  # compare fwd, route the gradient bwd
}
_ADAM_FLOPS_PER_PARAM = 12  # m, v moments, bias corrections folded, sqrt, divide, update
_SOFTMAX_XENT_FLOPS_PER_LOGIT = 5  # max-subtract, exp, sum, divide/log, label pick (fwd + bwd)


#: TensorLayer 2.2.5's initial weights, which every framework draws: a normal cut at two standard
#: deviations (tl.layers.Dense's W_init 0.05, Conv2d's 0.02); every bias starts at 0
DENSE_STDDEV = 0.05
CONV_STDDEV = 0.02


@dataclass(frozen=True)
class Layer:
    """One layer of a network, as every framework builds it (frameworks/<name>/layers/).

    ``dense``: ``inputs`` -> ``units``; ``conv``: ``inputs`` channels ->
    ``units`` filters, ``kernel`` x ``kernel``, stride 1, SAME; both with
    ``relu`` or not, weights from a truncated normal of ``stddev``.
    ``max_pool``: ``pool`` x ``pool``, stride ``pool``, VALID. ``dropout``:
    drop with probability ``rate`` in training (kept units scaled by
    1/(1-rate)), nothing in evaluation. ``flatten``: NHWC to a row per image.
    A workload type's own kind is a subclass with the fields it needs."""

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
class ProductKind:
    """A kind of product. ``einsum``: the product as an Einstein sum (``"mk,kn->mn"``); a product's
    ``shape`` gives each letter's size in the order the letters first appear (m, k, n), and every
    framework runs it from the sum alone. None: a convolution or one of its two gradients, with
    ``shape`` = (batch, side, in channels, out channels, kernel), stride 1, SAME padding."""

    name: str
    einsum: str | None = None

    @property
    def letters(self) -> str:
        return "".join(dict.fromkeys(c for c in self.einsum if c.isalpha()))

    def operand_shapes(self, shape: tuple[int, ...]) -> list[tuple[int, ...]]:
        """The shapes of the sum's operands (einsum kinds only)."""
        size = dict(zip(self.letters, shape, strict=True))
        return [tuple(size[c] for c in operand) for operand in self.einsum.split("->")[0].split(",")]

    @property
    def matmul_form(self) -> bool:
        """Whether ``a @ b`` computes the sum: ``...ij,...jk->...ik`` with the same leading letters."""
        inputs, out = self.einsum.split("->")
        a, b = inputs.split(",")
        batch = a[:-2]
        return (
            len(a) == len(b) == len(out) >= 2
            and b[:-2] == out[:-2] == batch
            and (a[-1], out)
            == (
                b[-2],
                batch + a[-2] + b[-1],
            )
        )

    def flops(self, shape: tuple[int, ...]) -> int:
        if self.einsum is not None:  # one multiply-add per point of the letters' grid
            return 2 * math.prod(shape)
        b, side, cin, cout, kernel = shape
        return 2 * b * side * side * kernel * kernel * cin * cout


#: the product kinds every framework knows; a workload type adds its own in ``product_kinds``
BASIC_PRODUCTS = (
    ProductKind("matmul", "mk,kn->mn"),
    ProductKind("conv"),
    ProductKind("conv_filter"),
    ProductKind("conv_input"),
)


@dataclass(frozen=True)
class Product:
    """One product of a training step: its kind's name (:func:`product_kinds`) and its shape."""

    kind: str
    shape: tuple[int, ...]

    @property
    def of_kind(self) -> ProductKind:
        return product_kinds()[self.kind]

    @property
    def flops(self) -> int:
        return self.of_kind.flops(self.shape)


def dense_products(b: int, layers, first_needs_input_grad: bool) -> list[Product]:
    """The matrix products of dense layers (``(inputs, units)`` each) in one training step."""
    out = [Product("matmul", (b, i, o)) for i, o in layers]  # forward X W
    out += [Product("matmul", (i, b, o)) for i, o in layers]  # weight gradients X^T dY
    needs = layers if first_needs_input_grad else layers[1:]
    out += [Product("matmul", (b, o, i)) for i, o in needs]  # input gradients dY W^T
    return out


class _SchemaKeys:
    """A workload type's keys and defaults, read from the schema's ``x-keys-by-type`` when asked."""

    def __get__(self, obj, cls) -> dict:
        keys = schema.workload_keys(cls.type)
        if keys is None:
            raise WorkloadError(
                f"workload type {cls.type!r} has no entry in {schema.PATH.name}: add its keys and their "
                "defaults under workloads' x-keys-by-type"
            )
        return keys


class Workload:
    """One network. Subclasses set ``type`` and the methods that differ; their keys and defaults are
    the schema's (``x-keys-by-type``)."""

    type = ""
    #: the family's name in a legend, and its marker in the figures (each type its own)
    family: str = ""
    marker: str = ""
    #: the type's spec keys with their defaults, from the schema (its only home)
    keys = _SchemaKeys()
    #: the product kinds and element-wise kinds (FLOPs per element) this type adds to the basic ones
    product_kinds: tuple[ProductKind, ...] = ()
    elementwise_costs: dict[str, int] = {}

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
        return any(p.of_kind.einsum is None for p in self.products(1))

    def matmul_flops(self, batch_size: int) -> int:
        return sum(p.flops for p in self.products(batch_size))

    def elementwise_flops(self, batch_size: int) -> int:
        """Bias adds and their gradients, ReLU, dropout, pooling (and the type's own kinds), softmax
        cross-entropy and the Adam update, with the per-element costs above."""
        a, costs = self.activations(batch_size), ELEMENTWISE_COSTS | self.elementwise_costs
        return (
            sum(costs[kind] * elements for kind, elements in a.items())
            + _SOFTMAX_XENT_FLOPS_PER_LOGIT * batch_size * N_CLASSES
            + _ADAM_FLOPS_PER_PARAM * self.n_parameters()
        )

    def training_step_flops(self, batch_size: int) -> int:
        """Floating-point operations of one training step (forward,
        backward, optimizer update) at ``batch_size``."""
        return self.matmul_flops(batch_size) + self.elementwise_flops(batch_size)


@functools.cache
def types() -> dict[str, type[Workload]]:
    """Every workload type, by its ``type:`` in the config: the ``WORKLOADS`` of each file in the folder
    mnist_speedup/workloads/ (read on first use)."""
    found = plugins.collect(__file__, PLUGINS, "WORKLOADS")
    for name, cls in found.items():
        if cls.type != name:
            raise plugins.PluginError(f"{cls.__name__} is listed as {name!r} but its type is {cls.type!r}")
    return found


@functools.cache
def product_kinds() -> dict[str, ProductKind]:
    """Every product kind, by name: the basic ones and those each workload type adds."""
    kinds = {k.name: k for k in BASIC_PRODUCTS}
    for cls in types().values():
        for kind in cls.product_kinds:
            if kinds.get(kind.name, kind) != kind:
                raise plugins.PluginError(f"product kind {kind.name!r} of {cls.type} is already another kind")
            kinds[kind.name] = kind
    return kinds


def with_types(schema_dict: dict) -> dict:
    """``schema_dict`` (the config schema) with the workload's ``type`` enum (and its fix) set to the workload
    types found, in place: the list has no copy in the schema to fall behind."""
    kind = schema_dict["properties"]["workloads"]["additionalProperties"]["properties"]["type"]
    names = sorted(types())
    kind.update(enum=names, **{"x-fix": f"use one of {names}, e.g. type: mlp (the article's network)"})
    return schema_dict


def of(spec: dict | None) -> Workload:
    """The workload a spec describes (None: the article's MLP)."""
    spec = spec or DEFAULT
    try:
        return types()[spec["type"]](spec)
    except KeyError:
        raise WorkloadError(f"unknown workload type {spec.get('type')!r}; use one of {sorted(types())}") from None


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
