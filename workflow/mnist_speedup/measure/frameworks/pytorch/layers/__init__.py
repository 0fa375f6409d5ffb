"""PyTorch's layer kinds, one file per workload type that adds kinds (networks.py finds them here): each file
lists ``LAYERS = {kind: build(torch, layer, generator) -> [modules]}``, each module's weights drawn from
``generator`` in the layer's order."""
