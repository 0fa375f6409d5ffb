"""The toy workload's Gram layer in JAX."""

from __future__ import annotations

from mnist_speedup.measure.frameworks.jax.layer_kind import LayerKind


def _gram(jax, layer, x, weights, key, dtype):
    t = layer.tokens
    tokens = x.reshape(-1, t, t)
    gram = jax.numpy.einsum("bmk,bnk->bmn", tokens, tokens)
    return (tokens + gram @ tokens / (t * t)).reshape(-1, t * t)


LAYERS = {"gram": LayerKind(_gram)}
