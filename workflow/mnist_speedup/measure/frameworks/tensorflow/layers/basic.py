"""The basic layer kinds in TensorLayer, as the original article built them."""

from __future__ import annotations


def _dense(tf, tl, layer):
    return tl.layers.Dense(n_units=layer.units, act=tf.nn.relu if layer.relu else None)


def _conv(tf, tl, layer):
    k = layer.kernel
    return tl.layers.Conv2d(
        n_filter=layer.units, filter_size=(k, k), strides=(1, 1), act=tf.nn.relu if layer.relu else None, padding="SAME"
    )


def _max_pool(tf, tl, layer):
    p = layer.pool
    return tl.layers.MaxPool2d(filter_size=(p, p), strides=(p, p), padding="VALID")


def _dropout(tf, tl, layer):
    return tl.layers.Dropout(keep=1.0 - layer.rate)


def _flatten(tf, tl, layer):
    return tl.layers.Flatten()


#: the basic kinds every workload type may use (spec/workloads.py's Layer)
LAYERS = {"dense": _dense, "conv": _conv, "max_pool": _max_pool, "dropout": _dropout, "flatten": _flatten}
