"""The basic layer kinds in plain ``torch.nn``, initialised as TensorLayer initialises them: weights from a
normal cut at two standard deviations (the layer's ``stddev``), biases 0. Convolutions NCHW (PyTorch's layout;
the data is permuted once when it is placed on the device), stride 1, SAME; max-pooling VALID; dropout as
``nn.Dropout`` (drop with probability ``rate``, scale kept units by 1/(1-rate))."""

from __future__ import annotations


def _initialised(torch, module, layer, generator):
    std = layer.stddev
    torch.nn.init.trunc_normal_(module.weight, std=std, a=-2 * std, b=2 * std, generator=generator)
    torch.nn.init.zeros_(module.bias)
    return [module, torch.nn.ReLU()] if layer.relu else [module]


def _dense(torch, layer, generator) -> list:
    return _initialised(torch, torch.nn.Linear(layer.inputs, layer.units), layer, generator)


def _conv(torch, layer, generator) -> list:
    conv = torch.nn.Conv2d(layer.inputs, layer.units, layer.kernel, padding="same")
    return _initialised(torch, conv, layer, generator)


#: the basic kinds every workload type may use (spec/workloads.py's Layer)
LAYERS = {
    "dense": _dense,
    "conv": _conv,
    "max_pool": lambda torch, layer, generator: [torch.nn.MaxPool2d(layer.pool, stride=layer.pool)],
    "dropout": lambda torch, layer, generator: [torch.nn.Dropout(layer.rate)],
    "flatten": lambda torch, layer, generator: [torch.nn.Flatten()],
}
