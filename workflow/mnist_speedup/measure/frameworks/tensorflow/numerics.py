"""TensorFlow's side of the precisions (precisions.py says what they mean).

TensorLayer's layers know nothing of mixed precision, so
:func:`cast_layers` wraps the ``forward`` of every layer with weights
(Dense, Conv2d), or sets the ``compute_dtype`` of a layer kind that casts its own weights
(``casts_itself``); float16's dynamic loss scaling is :class:`DynamicLossScale`.
"""

from __future__ import annotations

from mnist_speedup.spec import precisions


def cast_layers(tf, net, precision: str) -> None:
    """Make every layer with weights of ``net`` compute in the precision's
    low dtype, with its float32 weights cast on each call."""
    if not precisions.of(precision).casts:
        return
    dtype = precisions.compute_dtype(precision)
    for layer in net.all_layers:
        if getattr(layer, "casts_itself", False):  # a layer kind with weights of its own names casts them itself
            layer.compute_dtype = dtype
        elif getattr(layer, "W", None) is not None:
            layer.forward = _casting(tf, layer, dtype)


def _casting(tf, layer, dtype):
    original = layer.forward
    names = [n for n in ("W", "b") if getattr(layer, n, None) is not None]

    def forward(inputs, **kwargs):
        master = {n: getattr(layer, n) for n in names}
        try:
            for n, weight in master.items():
                setattr(layer, n, tf.cast(weight, dtype))
            return original(tf.cast(inputs, dtype), **kwargs)
        finally:
            for n, weight in master.items():
                setattr(layer, n, weight)

    return forward


class NoScaling:
    """float32 and bfloat16: the loss as it is, every step applied."""

    def __init__(self, tf):
        self.tf = tf

    def scale(self, loss):
        return loss

    def apply(self, grads, apply_fn) -> None:
        apply_fn(grads)

    def summary(self) -> None:
        return None

    def skipped_steps(self) -> int:
        return 0


class DynamicLossScale:
    """float16's dynamic loss scaling; counts the steps it skipped."""

    def __init__(self, tf):
        self.tf = tf
        self.value = tf.Variable(precisions.INITIAL_SCALE, dtype=tf.float32, trainable=False)
        self.good_steps = tf.Variable(0, dtype=tf.int64, trainable=False)
        self.skipped = tf.Variable(0, dtype=tf.int64, trainable=False)

    def scale(self, loss):
        return loss * self.value

    def apply(self, grads, apply_fn) -> None:
        tf = self.tf
        grads = [g / self.value for g in grads]
        finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in grads])

        def good():
            apply_fn(grads)
            self.good_steps.assign_add(1)
            grow = self.good_steps >= precisions.GROWTH_STEPS
            self.value.assign(tf.where(grow, self.value * 2.0, self.value))
            self.good_steps.assign(tf.where(grow, tf.constant(0, tf.int64), self.good_steps))

        def skip():
            self.skipped.assign_add(1)
            self.value.assign(tf.maximum(self.value / 2.0, 1.0))
            self.good_steps.assign(0)

        tf.cond(finite, good, skip)

    def summary(self) -> dict:
        return {"skipped_steps": self.skipped_steps(), "final_scale": float(self.value.numpy())}

    def skipped_steps(self) -> int:
        return int(self.skipped.numpy())


def loss_scale(tf, precision: str):
    """The loss scaling a precision needs."""
    return DynamicLossScale(tf) if precisions.scales_loss(precision) else NoScaling(tf)
