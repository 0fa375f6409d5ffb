"""TensorFlow's layer kinds, one file per workload type that adds kinds (networks.py finds them here):
each file lists ``LAYERS = {kind: build(tf, tl, layer) -> a TensorLayer layer}``."""
