"""The basic layer kinds in JAX, exactly as TensorLayer builds them.

- Initial weights as TensorLayer 2.2.5's defaults: ``Dense`` draws W from a truncated normal (stddev 0.05,
  cut at two standard deviations), ``Conv2d`` from a truncated normal (stddev 0.02); every bias starts at 0.
- ``Dropout(keep)`` in training: keep each unit with probability ``keep`` and scale it by ``1/keep``
  (tf.nn.dropout); none in evaluation.
- Convolutions NHWC with HWIO kernels, stride 1, SAME, ReLU; max-pooling ``pool`` x ``pool``, stride
  ``pool``, VALID; then flatten.
"""

from __future__ import annotations

import numpy as np

from mnist_speedup.measure.frameworks.jax.layer_kind import LayerKind, truncated_normal


def _weights(rng, layer) -> dict:
    return {"W": truncated_normal(rng, layer.weight_shape, layer.stddev), "b": np.zeros(layer.units, np.float32)}


def _biased(jax, layer, y, weights, dtype):
    y = y + weights["b"].astype(dtype)
    return jax.nn.relu(y) if layer.relu else y


def _dense(jax, layer, x, weights, key, dtype):
    return _biased(jax, layer, x @ weights["W"].astype(dtype), weights, dtype)


def _conv(jax, layer, x, weights, key, dtype):
    w = weights["W"].astype(dtype)
    y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return _biased(jax, layer, y, weights, dtype)


def _dropout(jax, layer, x, weights, key, dtype):
    if layer.rate <= 0 or key is None:
        return x
    keep = 1.0 - layer.rate
    mask = jax.random.bernoulli(key, keep, x.shape)
    return jax.numpy.where(mask, x / keep, 0).astype(x.dtype)


def _max_pool(jax, layer, x, weights, key, dtype):
    """Max-pooling pool x pool, stride pool, VALID (a remainder row or column
    dropped), as a reshape and a max: its gradient is a mask, where XLA's
    reduce_window gradient (select-and-scatter) runs about 20 times slower
    inside a compiled loop on the CPU (measured with JAX 0.10.2)."""
    pool = layer.pool
    b, h, w, c = x.shape
    h, w = h // pool * pool, w // pool * pool
    x = x[:, :h, :w, :].reshape(b, h // pool, pool, w // pool, pool, c)
    return x.max(axis=(2, 4))


#: the basic kinds every workload type may use (spec/workloads.py's Layer)
LAYERS = {
    "dense": LayerKind(_dense, init=_weights),
    "conv": LayerKind(_conv, init=_weights),
    "dropout": LayerKind(_dropout, random=True),
    "max_pool": LayerKind(_max_pool),
    "flatten": LayerKind(lambda jax, layer, x, weights, key, dtype: x.reshape(x.shape[0], -1)),
}
