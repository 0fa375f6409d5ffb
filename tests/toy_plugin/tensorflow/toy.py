"""The toy workload's Gram layer in TensorFlow (a TensorLayer Lambda: it has no weights)."""

from __future__ import annotations


def _gram(tf, tl, layer):
    t = layer.tokens

    def mix(x):
        tokens = tf.reshape(x, [-1, t, t])
        gram = tf.einsum("bmk,bnk->bmn", tokens, tokens)
        return tf.reshape(tokens + tf.matmul(gram, tokens) / (t * t), [-1, t * t])

    return tl.layers.Lambda(mix)


LAYERS = {"gram": _gram}
