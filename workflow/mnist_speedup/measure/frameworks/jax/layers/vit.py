"""The ViT's layer kinds in JAX (spec: mnist_speedup/workloads/vit.py): every parameter by the spec's name and
layout, the exact GELU (``jax.nn.gelu`` defaults to the tanh form), layer norm in float32 over the last axis."""

from __future__ import annotations

import numpy as np

from mnist_speedup.measure.frameworks.jax.layer_kind import LayerKind, truncated_normal


def _weights(rng, layer) -> dict:
    stddev = 0.02
    drawn = {
        "normal": lambda shape: truncated_normal(rng, shape, stddev),
        "zeros": lambda shape: np.zeros(shape, np.float32),
        "ones": lambda shape: np.ones(shape, np.float32),
    }
    return {name: drawn[init](shape) for name, (shape, init) in layer.weights.items()}


def _norm(jax, x, weights, name: str):
    """Layer norm over the last axis, in float32, back in the input's dtype."""
    jnp, dtype = jax.numpy, x.dtype
    x = x.astype(jnp.float32)
    mean = x.mean(-1, keepdims=True)
    variance = jnp.square(x - mean).mean(-1, keepdims=True)
    y = (x - mean) * jax.lax.rsqrt(variance + 1e-6) * weights[f"{name}_scale"] + weights[f"{name}_bias"]
    return y.astype(dtype)


def _linear(x, weights, name: str, dtype):
    return x @ weights[f"{name}_kernel"].astype(dtype) + weights[f"{name}_bias"].astype(dtype)


def _dropout(jax, x, rate: float, key):
    if rate <= 0 or key is None:
        return x
    keep = 1.0 - rate
    return jax.numpy.where(jax.random.bernoulli(key, keep, x.shape), x / keep, 0).astype(x.dtype)


def _patch_embed(jax, layer, x, weights, key, dtype):
    jnp, p = jax.numpy, layer.patch
    side = 28 // p
    patches = x.reshape(-1, side, p, side, p).transpose(0, 1, 3, 2, 4).reshape(-1, side * side, p * p)
    tokens = patches @ weights["kernel"].astype(dtype) + weights["bias"].astype(dtype)
    cls = jnp.broadcast_to(weights["class_token"].astype(dtype), (tokens.shape[0], 1, layer.width))
    return jnp.concatenate([cls, tokens], axis=1) + weights["position"].astype(dtype)


def _attention(jax, layer, h, weights, dtype):
    b, t, w = h.shape
    heads = layer.heads
    d = w // heads

    def split(name):
        return _linear(h, weights, name, dtype).reshape(b, t, heads, d).transpose(0, 2, 1, 3)

    q, k, v = split("query"), split("key"), split("value")
    scores = jax.numpy.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(d).astype(np.float32)
    probs = jax.nn.softmax(scores.astype(jax.numpy.float32), axis=-1).astype(dtype)
    mixed = jax.numpy.einsum("bhqk,bhkd->bhqd", probs, v).transpose(0, 2, 1, 3).reshape(b, t, w)
    return _linear(mixed, weights, "out", dtype)


def _encoder_block(jax, layer, x, weights, key, dtype):
    keys = jax.random.split(key, 3) if key is not None else [None] * 3
    x = x + _dropout(jax, _attention(jax, layer, _norm(jax, x, weights, "norm1"), weights, dtype), layer.rate, keys[0])
    h = jax.nn.gelu(_linear(_norm(jax, x, weights, "norm2"), weights, "mlp1", dtype), approximate=False)
    h = _linear(_dropout(jax, h, layer.rate, keys[1]), weights, "mlp2", dtype)
    return x + _dropout(jax, h, layer.rate, keys[2])


def _vit_head(jax, layer, x, weights, key, dtype):
    cls = _norm(jax, x[:, 0], weights, "norm")
    return cls @ weights["kernel"].astype(dtype) + weights["bias"].astype(dtype)


LAYERS = {
    "patch_embed": LayerKind(_patch_embed, init=_weights),
    "encoder_block": LayerKind(_encoder_block, init=_weights, random=True),
    "vit_head": LayerKind(_vit_head, init=_weights),
}
