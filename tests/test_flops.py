"""Issue 19: the analytic FLOPs per training step against TensorFlow's own count.

TensorFlow's profiler counts the float operations of every op in the traced
graph of one training step (the same step the trainer compiles: forward,
GradientTape gradients, the fused Adam update) from the shapes, with its
registered statistics (MatMul, Conv2D and both of its gradients,
element-wise ops). Our count comes from the layers alone
(``Workload.training_step_flops``); the two must agree within 10%.
"""

import os

import pytest

from mnist_speedup.measure.frameworks.tensorflow import networks
from mnist_speedup.spec import workloads

TOLERANCE = 0.10
BATCH = 100


def tensorflow_count(spec: dict, batch_size: int) -> int:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    import tensorlayer as tl

    workload = workloads.of(spec)
    net = networks.build(tf, tl, workload)
    net.train()
    optimizer = tf.compat.v1.train.AdamOptimizer(1e-4)

    @tf.function(
        input_signature=[
            tf.TensorSpec([batch_size, *workload.input_shape], tf.float32),
            tf.TensorSpec([batch_size], tf.int64),
        ]
    )
    def step(x, y):
        with tf.GradientTape() as tape:
            logits = net(x)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        grads = tape.gradient(loss, net.trainable_weights)
        optimizer.apply_gradients(zip(grads, net.trainable_weights))
        return loss

    options = tf.compat.v1.profiler.ProfileOptionBuilder.float_operation()
    options["output"] = "none"
    graph = step.get_concrete_function().graph
    return tf.compat.v1.profiler.profile(graph=graph, options=options).total_float_ops


@pytest.mark.parametrize(
    "spec",
    [
        {"type": "mlp", "hidden": [32, 32]},
        {"type": "mlp"},  # the article's 800-800
        {"type": "mlp", "hidden": [4096, 4096]},
        {"type": "cnn"},
    ],
    ids=["mlp-32", "mlp-800", "mlp-4096", "cnn"],
)
def test_flops_per_step_match_tensorflows_count(spec):
    ours = workloads.of(spec).training_step_flops(BATCH)
    theirs = tensorflow_count(spec, BATCH)
    assert theirs > 0
    assert abs(ours / theirs - 1) <= TOLERANCE, f"ours {ours:,} against TensorFlow's {theirs:,}"
