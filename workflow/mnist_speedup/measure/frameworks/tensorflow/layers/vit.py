"""The ViT's layer kinds in TensorFlow, as TensorLayer layers (spec: mnist_speedup/workloads/vit.py).

TensorLayer 2.2.5 has no attention, GELU, class token or position embedding, and its LayerNorm normalises
over more than the last axis by default, so each kind is a ``tl.layers.Layer`` subclass here: its weights
by the spec's names and layouts (TensorLayer's own truncated normal, cut at two standard deviations), the
exact GELU, layer norm over the last axis in float32. Mixed precision: the products run in the layer's
``compute_dtype`` (tensorflow/numerics.py sets it), the weights stay float32.
"""

from __future__ import annotations

import functools
import math


@functools.cache
def _base(tf, tl):
    """What the three layer classes share: the spec's weights, the casts, a linear map, the layer norm and
    the dropout (made once the framework is imported)."""
    initial = {
        "normal": lambda: tl.initializers.truncated_normal(stddev=0.02),
        "zeros": tl.initializers.zeros,
        "ones": tl.initializers.ones,
    }

    class Vit(tl.layers.Layer):
        casts_itself = True  # tensorflow/numerics.py sets compute_dtype instead of wrapping a W

        def __init__(self, layer):
            super().__init__(None)
            self.layer, self.compute_dtype = layer, "float32"
            self.build(None)
            self._built = True

        def build(self, inputs_shape):
            self.w = {
                name: self._get_weights(name, shape=shape, init=initial[init]())
                for name, (shape, init) in self.layer.weights.items()
            }

        def cast(self, name: str):
            return tf.cast(self.w[name], self.compute_dtype)

        def linear(self, x, name: str):
            return tf.matmul(x, self.cast(f"{name}_kernel")) + self.cast(f"{name}_bias")

        def norm(self, x, name: str):
            x32 = tf.cast(x, tf.float32)
            mean, variance = tf.nn.moments(x32, axes=[-1], keepdims=True)
            y = (x32 - mean) * tf.math.rsqrt(variance + 1e-6) * self.w[f"{name}_scale"] + self.w[f"{name}_bias"]
            return tf.cast(y, x.dtype)

        def dropout(self, x):
            return tf.nn.dropout(x, rate=self.layer.rate) if self.is_train and self.layer.rate > 0 else x

    return Vit


@functools.cache
def _classes(tf, tl):
    """The three layer classes, made once the framework is imported."""
    Vit = _base(tf, tl)  # noqa: N806 (a class)

    class PatchEmbed(Vit):
        def forward(self, x):
            p = self.layer.patch
            side = 28 // p
            x = tf.cast(x, self.compute_dtype)
            patches = tf.reshape(
                tf.transpose(tf.reshape(x, [-1, side, p, side, p]), [0, 1, 3, 2, 4]), [-1, side * side, p * p]
            )
            tokens = tf.matmul(patches, self.cast("kernel")) + self.cast("bias")
            cls = tf.tile(tf.reshape(self.cast("class_token"), [1, 1, -1]), [tf.shape(tokens)[0], 1, 1])
            return tf.concat([cls, tokens], axis=1) + self.cast("position")

    class EncoderBlock(Vit):
        def attention(self, h):
            t, w, heads = self.layer.tokens, self.layer.width, self.layer.heads
            d = w // heads

            def split(name):
                return tf.transpose(tf.reshape(self.linear(h, name), [-1, t, heads, d]), [0, 2, 1, 3])

            q, k, v = split("query"), split("key"), split("value")
            scores = tf.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(d)
            probs = tf.cast(tf.nn.softmax(tf.cast(scores, tf.float32), axis=-1), v.dtype)
            mixed = tf.reshape(tf.transpose(tf.einsum("bhqk,bhkd->bhqd", probs, v), [0, 2, 1, 3]), [-1, t, w])
            return self.linear(mixed, "out")

        def forward(self, x):
            x = x + self.dropout(self.attention(self.norm(x, "norm1")))
            h = tf.nn.gelu(self.linear(self.norm(x, "norm2"), "mlp1"), approximate=False)
            return x + self.dropout(self.linear(self.dropout(h), "mlp2"))

    class Head(Vit):
        def forward(self, x):
            return tf.matmul(self.norm(x[:, 0], "norm"), self.cast("kernel")) + self.cast("bias")

    return {"patch_embed": PatchEmbed, "encoder_block": EncoderBlock, "vit_head": Head}


def _build(kind: str):
    return lambda tf, tl, layer: _classes(tf, tl)[kind](layer)


LAYERS = {kind: _build(kind) for kind in ("patch_embed", "encoder_block", "vit_head")}
