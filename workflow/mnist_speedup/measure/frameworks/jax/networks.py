"""The workloads in JAX, built from their specs exactly as TensorLayer builds them.

- Initial weights as TensorLayer 2.2.5's defaults: ``Dense`` draws W from a
  truncated normal (stddev 0.05, cut at two standard deviations), ``Conv2d``
  from a truncated normal (stddev 0.02); every bias starts at 0.
- ``Dropout(keep)`` in training: keep each unit with probability ``keep``
  and scale it by ``1/keep`` (tf.nn.dropout); none in evaluation.
- Convolutions NHWC with HWIO kernels, stride 1, SAME, ReLU; max-pooling
  ``pool`` x ``pool``, stride ``pool``, VALID; then flatten.
- The loss: mean sparse softmax cross-entropy of float32 logits.
- Adam: TensorFlow's fused kernel's update (the "epsilon hat" form,
  ``lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t)``, ``w -= lr_t * m /
  (sqrt(v) + epsilon)``), as an optax transformation.
- Mixed precision as precisions.py defines it: float32 weights, each layer's
  input and weights cast to the low dtype, logits back to float32; float16
  with dynamic loss scaling that skips and counts an overflowing step.
"""

from __future__ import annotations

from typing import NamedTuple

from mnist_speedup.spec import precisions


def truncated_normal(rng, shape, stddev: float):
    """A normal cut at two standard deviations (redrawn beyond), as
    tf.random.truncated_normal; drawn by NumPy on the host (JAX's own
    generator takes seconds per large tensor on a CPU)."""
    z = rng.standard_normal(shape, dtype="float32")
    while (far := abs(z) > 2).any():
        z[far] = rng.standard_normal(int(far.sum()), dtype="float32")
    return z * stddev


def init_params(jax, workload, seed: int) -> list[dict]:
    """One {W, b} per layer with weights, in order, float32, drawn from ``seed``."""
    import numpy as np

    jnp, rng = jax.numpy, np.random.default_rng(seed)
    weighted = [layer for layer in workload.network() if layer.weight_shape]
    return [
        {
            "W": jnp.asarray(truncated_normal(rng, layer.weight_shape, layer.stddev)),
            "b": jnp.zeros(layer.units, jnp.float32),
        }
        for layer in weighted
    ]


def _dropout(jax, x, rate: float, key):
    if rate <= 0 or key is None:
        return x
    keep = 1.0 - rate
    mask = jax.random.bernoulli(key, keep, x.shape)
    return jax.numpy.where(mask, x / keep, 0).astype(x.dtype)


def _max_pool(x, pool: int):
    """Max-pooling pool x pool, stride pool, VALID (a remainder row or column
    dropped), as a reshape and a max: its gradient is a mask, where XLA's
    reduce_window gradient (select-and-scatter) runs about 20 times slower
    inside a compiled loop on the CPU (measured with JAX 0.10.2)."""
    b, h, w, c = x.shape
    h, w = h // pool * pool, w // pool * pool
    x = x[:, :h, :w, :].reshape(b, h // pool, pool, w // pool, pool, c)
    return x.max(axis=(2, 4))


def forward(jax, workload, params, x, dtype: str, key=None):
    """The logits (float32) of ``x``; ``key`` None: evaluation (no dropout)."""
    jnp, lax = jax.numpy, jax.lax
    network = workload.network()
    drops = sum(layer.kind == "dropout" for layer in network)  # one key per dropout: no two share a mask
    keys = iter(jax.random.split(key, drops) if key is not None and drops else [None] * drops)
    weights = iter(params)
    x = x.astype(dtype)
    for layer in network:
        if layer.kind == "dropout":
            x = _dropout(jax, x, layer.rate, next(keys))
        elif layer.kind == "max_pool":
            x = _max_pool(x, layer.pool)
        elif layer.kind == "flatten":
            x = x.reshape(x.shape[0], -1)
        else:
            p = next(weights)
            w, b = p["W"].astype(dtype), p["b"].astype(dtype)
            if layer.kind == "conv":
                x = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")) + b
            else:
                x = x @ w + b
            x = jax.nn.relu(x) if layer.relu else x
    return x.astype(jnp.float32)


def mean_loss(jax, logits, labels):
    """Mean sparse softmax cross-entropy, in float32."""
    logp = jax.nn.log_softmax(logits)
    return -jax.numpy.mean(jax.numpy.take_along_axis(logp, labels[:, None].astype("int32"), axis=1))


class AdamState(NamedTuple):
    count: object
    mu: object
    nu: object


def tf_adam(jax, learning_rate: float, beta1: float, beta2: float, epsilon: float):
    """Adam with TensorFlow's fused update (epsilon hat), as an optax transformation."""
    import optax

    jnp, tree = jax.numpy, jax.tree_util

    def init(params):
        zeros = tree.tree_map(jnp.zeros_like, params)
        return AdamState(jnp.zeros([], jnp.int32), zeros, tree.tree_map(jnp.zeros_like, params))

    def update(grads, state, params=None):
        count = state.count + 1
        mu = tree.tree_map(lambda m, g: m + (g - m) * (1 - beta1), state.mu, grads)
        nu = tree.tree_map(lambda v, g: v + (g * g - v) * (1 - beta2), state.nu, grads)
        t = count.astype(jnp.float32)
        lr_t = learning_rate * jnp.sqrt(1 - beta2**t) / (1 - beta1**t)
        updates = tree.tree_map(lambda m, v: -lr_t * m / (jnp.sqrt(v) + epsilon), mu, nu)
        return updates, AdamState(count, mu, nu)

    return optax.GradientTransformation(init, update)


def initial_scaling(jax, precision: str) -> dict:
    """The loss scaling's state: scale, good steps in a row, skipped steps."""
    jnp = jax.numpy
    scale = precisions.INITIAL_SCALE if precisions.scales_loss(precision) else 1.0
    return {"scale": jnp.float32(scale), "good": jnp.int32(0), "skipped": jnp.int32(0)}


def make_step(jax, workload, optimizer, precision: str):
    """``step(state, x, y) -> (state, loss)``: one optimizer step, or for
    float16 a skipped one when a gradient overflowed (counted)."""
    import optax

    jnp, lax = jax.numpy, jax.lax
    dtype, dynamic = precisions.compute_dtype(precision), precisions.scales_loss(precision)

    def step(state, x, y):
        key, sub = jax.random.split(state["key"])
        scaling = state["scaling"]

        def scaled_loss(params):
            loss = mean_loss(jax, forward(jax, workload, params, x, dtype, sub), y)
            return loss * scaling["scale"], loss

        grads, loss = jax.grad(scaled_loss, has_aux=True)(state["params"])
        grads = jax.tree_util.tree_map(lambda g: g / scaling["scale"], grads)

        def apply(_):
            updates, opt = optimizer.update(grads, state["opt"], state["params"])
            return optax.apply_updates(state["params"], updates), opt

        if not dynamic:
            params, opt = apply(None)
            return {**state, "key": key, "params": params, "opt": opt, "steps": state["steps"] + 1}, loss
        finite = jnp.all(jnp.array([jnp.all(jnp.isfinite(g)) for g in jax.tree_util.tree_leaves(grads)]))
        params, opt = lax.cond(finite, apply, lambda _: (state["params"], state["opt"]), None)
        good = jnp.where(finite, scaling["good"] + 1, 0)
        grow = good >= precisions.GROWTH_STEPS
        scale = jnp.where(
            finite, jnp.where(grow, scaling["scale"] * 2.0, scaling["scale"]), jnp.maximum(scaling["scale"] / 2.0, 1.0)
        )
        scaling = {
            "scale": scale,
            "good": jnp.where(grow, 0, good),
            "skipped": scaling["skipped"] + jnp.where(finite, 0, 1),
        }
        steps = state["steps"] + jnp.where(finite, 1, 0)
        return {**state, "key": key, "params": params, "opt": opt, "scaling": scaling, "steps": steps}, loss

    return step


def eval_chunk(jax, workload, params, x, y, dtype: str):
    """(summed loss, correct) of one chunk in evaluation mode."""
    jnp = jax.numpy
    logits = forward(jax, workload, params, x, dtype)
    logp = jax.nn.log_softmax(logits)
    losses = -jnp.take_along_axis(logp, y[:, None].astype("int32"), axis=1)[:, 0]
    return jnp.sum(losses), jnp.sum(jnp.argmax(logits, axis=1) == y)
