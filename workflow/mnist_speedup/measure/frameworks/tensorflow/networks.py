"""The workloads' networks in TensorLayer, built layer by layer from the workload's spec
(spec/workloads.py's :class:`~mnist_speedup.spec.workloads.Layer` list), as the original article did."""

from __future__ import annotations

from mnist_speedup.spec import workloads


def build(tf, tl, workload: workloads.Workload):
    """A TensorLayer model of ``workload``: its layers in order, TensorLayer's own initialisers
    (the spec's stddevs are TensorLayer's defaults)."""
    ni = tl.layers.Input([None, *workload.input_shape])
    nn = ni
    for layer in workload.network():
        nn = _LAYERS[layer.kind](tf, tl, layer)(nn)
    return tl.models.Model(inputs=ni, outputs=nn)


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


#: how each kind of layer is built here: a new kind in spec/workloads.py is one entry in each framework
_LAYERS = {"dense": _dense, "conv": _conv, "max_pool": _max_pool, "dropout": _dropout, "flatten": _flatten}
