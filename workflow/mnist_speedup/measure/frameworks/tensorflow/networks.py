"""The workloads' networks in TensorLayer, built layer by layer from the workload's spec
(spec/workloads.py's :class:`~mnist_speedup.spec.workloads.Layer` list), as the original article did."""

from __future__ import annotations

import functools

from mnist_speedup import plugins
from mnist_speedup.spec import workloads


def build(tf, tl, workload: workloads.Workload):
    """A TensorLayer model of ``workload``: its layers in order, TensorLayer's own initialisers
    (the spec's stddevs are TensorLayer's defaults)."""
    ni = tl.layers.Input([None, *workload.input_shape])
    nn = ni
    for layer in workload.network():
        nn = plugins.layer_kind(layer_kinds(), layer, "tensorflow")(tf, tl, layer)(nn)
    return tl.models.Model(inputs=ni, outputs=nn)


#: the layer kinds' files (mnist_speedup/plugins.py)
PLUGINS = "layers/*.py"


@functools.cache
def layer_kinds() -> dict:
    """Every layer kind TensorFlow builds: the ``LAYERS`` of each file in layers/."""
    return plugins.collect(__file__, PLUGINS, "LAYERS")
