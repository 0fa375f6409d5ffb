"""JAX's layer kinds, one file per workload type that adds kinds (networks.py finds them here): each file
lists ``LAYERS = {kind: LayerKind(...)}`` (jax/layer_kind.py): how the layer's weights are drawn and how it
computes."""
