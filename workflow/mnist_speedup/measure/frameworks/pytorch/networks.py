"""The workloads' networks in plain ``torch.nn``, built layer by layer from the workload's spec
(spec/workloads.py's layer list), initialised as TensorLayer initialises them.

- Weights from a normal cut at two standard deviations (the layer's ``stddev``:
  TensorLayer's Dense 0.05, Conv2d 0.02), biases 0, drawn from the run's seed.
- Convolutions NCHW (PyTorch's layout; the data is permuted once when it is
  placed on the device), stride 1, SAME; max-pooling VALID; dropout as
  ``nn.Dropout`` (drop with probability ``rate``, scale kept units by 1/(1-rate)).
- The FLOPs are the workload's own: the same products at the same shapes.
"""

from __future__ import annotations


def build(torch, workload, seed: int):
    """An ``nn.Sequential`` of ``workload``'s layers, float32, initialised from ``seed`` on the host."""
    nn = torch.nn
    generator = torch.Generator().manual_seed(seed)
    modules = []
    for layer in workload.network():
        modules += _LAYERS[layer.kind](nn, layer)
        weighted = modules[-2] if layer.relu else modules[-1]
        if layer.weight_shape:
            std = layer.stddev
            nn.init.trunc_normal_(weighted.weight, std=std, a=-2 * std, b=2 * std, generator=generator)
            nn.init.zeros_(weighted.bias)
    return nn.Sequential(*modules)


def _relu(nn, layer) -> list:
    return [nn.ReLU()] if layer.relu else []


def _dense(nn, layer) -> list:
    return [nn.Linear(layer.inputs, layer.units), *_relu(nn, layer)]


def _conv(nn, layer) -> list:
    return [nn.Conv2d(layer.inputs, layer.units, layer.kernel, padding="same"), *_relu(nn, layer)]


#: how each kind of layer is built here: a new kind in spec/workloads.py is one entry in each framework
_LAYERS = {
    "dense": _dense,
    "conv": _conv,
    "max_pool": lambda nn, layer: [nn.MaxPool2d(layer.pool, stride=layer.pool)],
    "dropout": lambda nn, layer: [nn.Dropout(layer.rate)],
    "flatten": lambda nn, layer: [nn.Flatten()],
}
