"""What a JAX layer kind provides (jax/layers/): a pure function of the layer's input, its weights and,
where it draws random numbers (dropout), a key of its own."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple


class LayerKind(NamedTuple):
    #: ``apply(jax, layer, x, weights, key, dtype) -> y``: ``x`` in ``dtype`` (the device's precision);
    #: ``weights`` the layer's (None without), ``key`` None in evaluation
    apply: Callable
    #: ``init(rng, layer) -> {name: float32 array}``: the weights, drawn by NumPy's ``rng`` (None: no weights)
    init: Callable | None = None
    #: whether the layer draws random numbers in training (it gets a key of its own)
    random: bool = False


def truncated_normal(rng, shape, stddev: float):
    """A normal cut at two standard deviations (redrawn beyond), as
    tf.random.truncated_normal; drawn by NumPy on the host (JAX's own
    generator takes seconds per large tensor on a CPU)."""
    z = rng.standard_normal(shape, dtype="float32")
    while (far := abs(z) > 2).any():
        z[far] = rng.standard_normal(int(far.sum()), dtype="float32")
    return z * stddev
