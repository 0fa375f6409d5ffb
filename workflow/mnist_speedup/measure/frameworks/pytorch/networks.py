"""The workloads' networks in plain ``torch.nn``, built layer by layer from the workload's spec
(spec/workloads.py's layer list) by the layer kinds of layers/, initialised as TensorLayer initialises them.
The FLOPs are the workload's own: the same products at the same shapes."""

from __future__ import annotations

import functools

from mnist_speedup import plugins


def build(torch, workload, seed: int):
    """An ``nn.Sequential`` of ``workload``'s layers, float32, initialised from ``seed`` on the host."""
    generator = torch.Generator().manual_seed(seed)
    modules = []
    for layer in workload.network():
        modules += plugins.layer_kind(layer_kinds(), layer, "pytorch")(torch, layer, generator)
    return torch.nn.Sequential(*modules)


#: the layer kinds' files (mnist_speedup/plugins.py)
PLUGINS = "layers/*.py"


@functools.cache
def layer_kinds() -> dict:
    """Every layer kind PyTorch builds: the ``LAYERS`` of each file in layers/."""
    return plugins.collect(__file__, PLUGINS, "LAYERS")
