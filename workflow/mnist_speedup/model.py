"""The original experiment's model and the analytic cost of one training step.

TensorLayer's MNIST multilayer perceptron (tutorial_mnist_mlp):
Input 784 -> Dropout(keep=0.8) -> Dense 800 ReLU -> Dropout(keep=0.5)
-> Dense 800 ReLU -> Dropout(keep=0.5) -> Dense 10 (identity).
"""

from __future__ import annotations

#: (fan_in, fan_out) of the three dense layers
LAYERS = ((784, 800), (800, 800), (800, 10))
KEEP = (0.8, 0.5, 0.5)
N_CLASSES = 10

# Element-wise costs in floating-point operations, per element. These are
# conventions (a multiply-add counts 2), written down so that the count can
# be checked by hand; the matrix products dominate (> 99% at batch >= 10).
_ADAM_FLOPS_PER_PARAM = 12  # m, v moments, bias corrections folded, sqrt, divide, update
_SOFTMAX_XENT_FLOPS_PER_LOGIT = 5  # max-subtract, exp, sum, divide/log, label pick (fwd + bwd)
_RELU_FLOPS = 1  # fwd compare; bwd mask multiply counted as 1 more
_DROPOUT_FLOPS = 1  # multiply by mask/keep (fwd), same again bwd


def n_parameters() -> int:
    return sum(i * o + o for i, o in LAYERS)


def matmul_flops(batch_size: int) -> int:
    """Multiply-add operations (x2) of every matrix product in one step.

    Forward: X W for each layer, 2 B i o.
    Backward: dL/dW = X^T dY for each layer (2 B i o); dL/dX = dY W^T for
    layers 2 and 3 only (the input needs no gradient), 2 B i o each.
    """
    b = batch_size
    forward = sum(2 * b * i * o for i, o in LAYERS)
    weight_grads = sum(2 * b * i * o for i, o in LAYERS)
    input_grads = sum(2 * b * i * o for i, o in LAYERS[1:])
    return forward + weight_grads + input_grads


def elementwise_flops(batch_size: int) -> int:
    """Bias adds and their gradients, ReLU, dropout, softmax cross-entropy
    and the Adam update, with the per-element costs above."""
    b = batch_size
    bias = sum(2 * b * o for _, o in LAYERS)  # add fwd + reduce-sum for the bias gradient
    relu = sum(2 * _RELU_FLOPS * b * o for _, o in LAYERS[:2])
    dropout = 2 * _DROPOUT_FLOPS * b * (LAYERS[0][0] + LAYERS[0][1] + LAYERS[1][1])
    xent = _SOFTMAX_XENT_FLOPS_PER_LOGIT * b * N_CLASSES
    adam = _ADAM_FLOPS_PER_PARAM * n_parameters()
    return bias + relu + dropout + xent + adam


def training_step_flops(batch_size: int) -> int:
    """Floating-point operations of one training step (forward, backward,
    optimizer update) at ``batch_size``."""
    return matmul_flops(batch_size) + elementwise_flops(batch_size)


def layer_matmul_shapes(batch_size: int) -> list[tuple[int, int, int]]:
    """(m, k, n) of the matrix products in one step, for calibration."""
    b = batch_size
    shapes = [(b, i, o) for i, o in LAYERS]  # forward
    shapes += [(i, b, o) for i, o in LAYERS]  # weight gradients X^T dY
    shapes += [(b, o, i) for i, o in LAYERS[1:]]  # input gradients dY W^T
    return shapes


def build(tf, tl):
    """The TensorLayer 2.x model. ``tf`` and ``tl`` are passed in so that
    importing this module never imports TensorFlow."""
    ni = tl.layers.Input([None, LAYERS[0][0]])
    nn = tl.layers.Dropout(keep=KEEP[0])(ni)
    nn = tl.layers.Dense(n_units=LAYERS[0][1], act=tf.nn.relu)(nn)
    nn = tl.layers.Dropout(keep=KEEP[1])(nn)
    nn = tl.layers.Dense(n_units=LAYERS[1][1], act=tf.nn.relu)(nn)
    nn = tl.layers.Dropout(keep=KEEP[2])(nn)
    nn = tl.layers.Dense(n_units=LAYERS[2][1], act=None)(nn)
    return tl.models.Model(inputs=ni, outputs=nn)
