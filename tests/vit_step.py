"""One ViT training step in one framework, from weights given by the spec's names (tests/test_vit.py runs it,
one process per framework): ``python vit_step.py <framework> <in.npz> <out.npz>``. In: ``x``, ``y`` and each
weight as ``<layer index>.<name>``; out: ``loss``, ``count`` (the framework's own parameter count), ``grad/<key>`` and ``after/<key>`` (the weights after one
step of the framework's own Adam at lr 1e-3). No dropout (evaluation mode), float32 throughout."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))
from mnist_speedup.spec import workloads  # noqa: E402

ADAM = {"lr": 1e-3, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-8}
WORKLOAD = workloads.of({"type": "vit", "depth": 1})
WEIGHTED = [(i, layer) for i, layer in enumerate(WORKLOAD.network()) if getattr(layer, "weights", None)]


def keys():
    return [f"{i}.{name}" for i, layer in WEIGHTED for name in layer.weights]


def tensorflow(given):
    import tensorflow as tf
    import tensorlayer as tl

    from mnist_speedup.measure.frameworks.tensorflow import networks
    from mnist_speedup.measure.frameworks.tensorflow.training import make_optimizer

    net = networks.build(tf, tl, WORKLOAD)
    net.eval()
    ours = [layer for layer in net.all_layers if getattr(layer, "casts_itself", False)]
    variables = [layer.w[name] for layer in ours for name in layer.layer.weights]
    for variable, key in zip(variables, keys(), strict=True):
        variable.assign(given[key])
    with tf.GradientTape() as tape:
        logits = net(tf.constant(given["x"]))
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=given["y"], logits=logits))
    grads = tape.gradient(loss, variables)
    spec = type("Spec", (), {"learning_rate": ADAM["lr"], "adam": ADAM})
    make_optimizer(tf, spec).apply_gradients(zip(grads, variables))
    count = sum(int(np.prod(v.shape)) for v in net.trainable_weights)
    return float(loss), [g.numpy() for g in grads], [v.numpy() for v in variables], count


def jax(given):
    import jax
    import optax

    from mnist_speedup.measure.frameworks.jax import networks

    jax.config.update("jax_default_matmul_precision", "highest")
    names = [list(layer.weights) for _, layer in WEIGHTED]
    params = [{n: jax.numpy.asarray(given[f"{i}.{n}"]) for n in ns} for (i, _), ns in zip(WEIGHTED, names)]

    def loss_fn(p):
        return networks.mean_loss(jax, networks.forward(jax, WORKLOAD, p, given["x"], "float32"), given["y"])

    loss, grads = jax.value_and_grad(loss_fn)(params)
    optimizer = networks.tf_adam(jax, ADAM["lr"], ADAM["beta_1"], ADAM["beta_2"], ADAM["epsilon"])
    updates, _ = optimizer.update(grads, optimizer.init(params), params)
    after = optax.apply_updates(params, updates)

    def flat(trees):  # in the spec's order (JAX gives dicts back with their keys sorted)
        return [np.asarray(tree[n]) for tree, ns in zip(trees, names) for n in ns]

    return (
        float(loss),
        flat(grads),
        flat(after),
        sum(int(np.prod(leaf.shape)) for leaf in jax.tree_util.tree_leaves(params)),
    )


def pytorch(given):
    import torch

    from mnist_speedup.measure.frameworks.pytorch import networks

    model = networks.build(torch, WORKLOAD, seed=0).eval()
    ours = [m for m in model if hasattr(m, "layer")]
    parameters = [getattr(m, name) for m in ours for name in m.layer.weights]
    with torch.no_grad():
        for parameter, key in zip(parameters, keys(), strict=True):
            parameter.copy_(torch.from_numpy(given[key]))
    optimizer = torch.optim.Adam(parameters, lr=ADAM["lr"], betas=(ADAM["beta_1"], ADAM["beta_2"]), eps=ADAM["epsilon"])
    loss = torch.nn.functional.cross_entropy(model(torch.from_numpy(given["x"])), torch.from_numpy(given["y"]).long())
    loss.backward()
    grads = [p.grad.numpy().copy() for p in parameters]
    optimizer.step()
    count = sum(p.numel() for p in model.parameters())
    return float(loss), grads, [p.detach().numpy().copy() for p in parameters], count


if __name__ == "__main__":
    framework, source, target = sys.argv[1:]
    given = dict(np.load(source))
    loss, grads, after, count = {"tensorflow": tensorflow, "jax": jax, "pytorch": pytorch}[framework](given)
    out = {"loss": np.float64(loss), "count": np.int64(count)} | {f"grad/{k}": g for k, g in zip(keys(), grads)}
    np.savez(target, **out, **{f"after/{k}": w for k, w in zip(keys(), after)})
