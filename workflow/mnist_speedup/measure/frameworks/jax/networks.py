"""The workloads in JAX, built from their specs exactly as TensorLayer builds them.

- The layers: each kind from layers/ (the basic ones in layers/basic.py, as TensorLayer 2.2.5 draws and
  computes them); a network is its workload's layer list, run in order.
- The loss: mean sparse softmax cross-entropy of float32 logits.
- Adam: TensorFlow's fused kernel's update (the "epsilon hat" form,
  ``lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t)``, ``w -= lr_t * m /
  (sqrt(v) + epsilon)``), as an optax transformation.
- Mixed precision as precisions.py defines it: float32 weights, each layer's
  input and weights cast to the low dtype, logits back to float32; float16
  with dynamic loss scaling that skips and counts an overflowing step.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from mnist_speedup import plugins
from mnist_speedup.spec import precisions


def init_params(jax, workload, seed: int) -> list[dict]:
    """The weights of each layer that has some (a dict of float32 arrays each), in order, drawn from ``seed``."""
    import numpy as np

    rng, kinds = np.random.default_rng(seed), layer_kinds()
    drawn = [kind.init(rng, layer) for layer in workload.network() if (kind := _kind(kinds, layer)).init]
    return [{name: jax.numpy.asarray(value) for name, value in weights.items()} for weights in drawn]


#: the layer kinds' files (mnist_speedup/plugins.py)
PLUGINS = "layers/*.py"


@functools.cache
def layer_kinds() -> dict:
    """Every layer kind JAX builds: the ``LAYERS`` of each file in layers/."""
    return plugins.collect(__file__, PLUGINS, "LAYERS")


def _kind(kinds, layer):
    return plugins.layer_kind(kinds, layer, "jax")


def forward(jax, workload, params, x, dtype: str, key=None):
    """The logits (float32) of ``x``; ``key`` None: evaluation (no dropout)."""
    network, kinds = workload.network(), layer_kinds()
    drawing = sum(_kind(kinds, layer).random for layer in network)  # a key each: no two dropouts share a mask
    keys = iter(jax.random.split(key, drawing) if key is not None and drawing else [None] * drawing)
    weights = iter(params)
    x = x.astype(dtype)
    for layer in network:
        kind = _kind(kinds, layer)
        x = kind.apply(jax, layer, x, next(weights) if kind.init else None, next(keys) if kind.random else None, dtype)
    return x.astype(jax.numpy.float32)


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
