"""Plain probes of the ViT (mnist_speedup/workloads/vit.py's default: width 64, 2 blocks, 4 heads, MLP 128,
patch 4, dropout 0.1), each written in its framework alone with that framework's own building blocks, for
benchmarks/frameworks_bench.py --workload vit. Each takes the training images ``x`` (rows of 784), labels ``y``,
the batch size, Adam's learning rate and a ``timed(epoch)`` that returns the steady epochs' mean."""

from __future__ import annotations

import os

import probe_loops

WIDTH, DEPTH, HEADS, MLP, PATCH, DROPOUT = 64, 2, 4, 128, 4, 0.1
SIDE = 28 // PATCH
TOKENS = SIDE * SIDE


def pytorch(x, y, threads, batch, lr, timed):
    import torch

    torch.set_num_threads(threads)
    x, y = torch.from_numpy(x), torch.from_numpy(y)

    class Vit(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Linear(PATCH * PATCH, WIDTH)
            self.cls = torch.nn.Parameter(torch.zeros(1, 1, WIDTH))
            self.pos = torch.nn.Parameter(torch.randn(1, TOKENS + 1, WIDTH) * 0.02)
            self.drop = torch.nn.Dropout(DROPOUT)
            blocks = [
                torch.nn.TransformerEncoderLayer(
                    WIDTH, HEADS, MLP, DROPOUT, "gelu", 1e-6, batch_first=True, norm_first=True
                )
                for _ in range(DEPTH)
            ]
            for block in blocks:
                block.self_attn.dropout = 0.0  # none on the attention probabilities, as the spec
            self.blocks = torch.nn.Sequential(*blocks)
            self.norm, self.head = torch.nn.LayerNorm(WIDTH, eps=1e-6), torch.nn.Linear(WIDTH, 10)

        def forward(self, images):
            patches = images.reshape(-1, SIDE, PATCH, SIDE, PATCH).permute(0, 1, 3, 2, 4).reshape(-1, TOKENS, PATCH**2)
            tokens = torch.cat([self.cls.expand(len(images), -1, -1), self.embed(patches)], dim=1) + self.pos
            return self.head(self.norm(self.blocks(self.drop(tokens))[:, 0]))

    net = Vit()
    epoch = probe_loops.pytorch(torch, net, torch.optim.Adam(net.parameters(), lr=lr), x, y, batch)
    return timed(epoch)


def _jax_params(jnp, rng) -> dict:
    """The ViT's weights for the JAX probe, drawn by NumPy."""

    def normal(*shape):
        return jnp.asarray(rng.normal(0, 0.02, shape).astype("float32"))

    def block():
        w = {k: normal(WIDTH, WIDTH) for k in ("q", "k", "v", "o")}
        return w | {"m1": normal(WIDTH, MLP), "m2": normal(MLP, WIDTH), "b1": jnp.zeros(MLP), "b2": jnp.zeros(WIDTH)}

    return {"embed": normal(PATCH**2, WIDTH), "cls": normal(WIDTH), "pos": normal(TOKENS + 1, WIDTH),
            "blocks": [block() for _ in range(DEPTH)], "head": normal(WIDTH, 10)}  # fmt: skip


def jax(x, y, threads, batch, lr, timed):
    os.environ["JAX_PLATFORMS"] = "cpu"
    os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:threads])
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    params = _jax_params(jnp, np.random.default_rng(0))

    def norm(h):
        mean, var = h.mean(-1, keepdims=True), h.var(-1, keepdims=True)
        return (h - mean) * jax.lax.rsqrt(var + 1e-6)

    def drop(h, key):
        return jnp.where(jax.random.bernoulli(key, 1 - DROPOUT, h.shape), h / (1 - DROPOUT), 0)

    def forward(p, images, key):
        keys = iter(jax.random.split(key, 1 + 3 * DEPTH))
        patches = images.reshape(-1, SIDE, PATCH, SIDE, PATCH).transpose(0, 1, 3, 2, 4).reshape(-1, TOKENS, PATCH**2)
        cls = jnp.broadcast_to(p["cls"], (len(images), 1, WIDTH))
        h = drop(jnp.concatenate([cls, patches @ p["embed"]], 1) + p["pos"], next(keys))
        for b in p["blocks"]:
            a = norm(h)
            q, k, v = ((a @ b[n]).reshape(len(images), -1, HEADS, WIDTH // HEADS) for n in "qkv")
            att = jax.nn.softmax(jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(WIDTH // HEADS), -1)
            h = h + drop(jnp.einsum("bhqk,bkhd->bqhd", att, v).reshape(h.shape) @ b["o"], next(keys))
            m = drop(jax.nn.gelu(norm(h) @ b["m1"] + b["b1"], approximate=False), next(keys))
            h = h + drop(m @ b["m2"] + b["b2"], next(keys))
        return norm(h[:, 0]) @ p["head"]

    opt = optax.adam(lr)

    @jax.jit
    def step(p, state, xb, yb, key):
        loss, grads = jax.value_and_grad(
            lambda p: optax.softmax_cross_entropy_with_integer_labels(forward(p, xb, key), yb).mean()
        )(p)
        updates, state = opt.update(grads, state, p)
        return optax.apply_updates(p, updates), state, loss

    x, y = jnp.asarray(x), jnp.asarray(y)
    epoch = probe_loops.jax(jax, step, params, opt.init(params), x, y, batch)

    epoch()  # compile outside every clock
    return timed(epoch)


def tensorflow(x, y, threads, batch, lr, timed):
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    keras = tf.keras

    class Embed(keras.layers.Layer):
        def build(self, shape):
            self.kernel = keras.layers.Dense(WIDTH)
            self.cls = self.add_weight(shape=(1, 1, WIDTH), initializer="zeros")
            self.pos = self.add_weight(
                shape=(1, TOKENS + 1, WIDTH), initializer=keras.initializers.TruncatedNormal(0, 0.02)
            )

        def call(self, images):
            patches = tf.reshape(
                tf.transpose(tf.reshape(images, (-1, SIDE, PATCH, SIDE, PATCH)), (0, 1, 3, 2, 4)),
                (-1, TOKENS, PATCH**2),
            )
            cls = tf.tile(self.cls, (tf.shape(images)[0], 1, 1))
            return tf.concat([cls, self.kernel(patches)], 1) + self.pos

    inputs = keras.Input((784,))
    h = keras.layers.Dropout(DROPOUT)(Embed()(inputs))
    for _ in range(DEPTH):
        a = keras.layers.LayerNormalization(epsilon=1e-6)(h)
        a = keras.layers.MultiHeadAttention(HEADS, WIDTH // HEADS)(a, a)
        h = h + keras.layers.Dropout(DROPOUT)(a)
        m = keras.layers.Dense(MLP, activation=lambda t: tf.nn.gelu(t, approximate=False))(
            keras.layers.LayerNormalization(epsilon=1e-6)(h)
        )
        h = h + keras.layers.Dropout(DROPOUT)(keras.layers.Dense(WIDTH)(keras.layers.Dropout(DROPOUT)(m)))
    cls = keras.layers.LayerNormalization(epsilon=1e-6)(h[:, 0])
    net = keras.Model(inputs, keras.layers.Dense(10)(cls))
    epoch = probe_loops.tensorflow(tf, net, keras.optimizers.Adam(lr), tf.constant(x), tf.constant(y), batch)
    epoch()  # trace outside every clock
    return timed(epoch)
