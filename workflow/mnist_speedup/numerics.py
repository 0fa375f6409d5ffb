"""Numerics: the precision and compiler a device trains with.

A device spec may set ``precision`` (``float32``, ``mixed_bfloat16``,
``mixed_float16``) and ``jit_compile`` (XLA for the compiled training
function). Mixed precision is done as the frameworks define it (Keras's
mixed-precision policy, PyTorch's autocast):
- the weights and the optimizer state stay float32 (the master copy);
- each dense layer and convolution casts its input and its weights to the
  low precision on the fly, so its product runs there; gradients flow back
  through the casts to the float32 weights;
- the logits are cast back to float32 for the softmax and the loss;
- float16 scales the loss dynamically (start 2**15, halve and skip the step
  when a gradient overflows, double after 2000 good steps); bfloat16 has
  float32's range and needs no scaling.
TensorLayer's layers know nothing of this, so :func:`cast_layers` wraps the
``forward`` of every layer with weights (Dense, Conv2d).
"""

from __future__ import annotations

#: precision -> the dtype products run in (None: float32 throughout)
PRECISIONS = {"float32": None, "mixed_bfloat16": "bfloat16", "mixed_float16": "float16"}
#: dynamic loss scaling, as Keras's LossScaleOptimizer does it
INITIAL_SCALE = 2.0**15
GROWTH_STEPS = 2000


def compute_dtype(precision: str) -> str:
    """The dtype of the products (``float32`` for plain float32)."""
    return PRECISIONS[precision] or "float32"


def cast_layers(tf, net, precision: str) -> None:
    """Make every layer with weights of ``net`` compute in the precision's
    low dtype, with its float32 weights cast on each call."""
    dtype = PRECISIONS[precision]
    if dtype is None:
        return
    for layer in net.all_layers:
        if getattr(layer, "W", None) is not None:
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
        self.value = tf.Variable(INITIAL_SCALE, dtype=tf.float32, trainable=False)
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
            grow = self.good_steps >= GROWTH_STEPS
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
    return DynamicLossScale(tf) if precision == "mixed_float16" else NoScaling(tf)


def section(device_spec: dict, scaler, skipped_per_epoch: list[int]) -> dict:
    """A run record's ``numerics`` section."""
    precision = device_spec.get("precision", "float32")
    scaling = scaler.summary()
    return {
        "precision": precision,
        "compute_dtype": compute_dtype(precision),
        "jit_compile": bool(device_spec.get("jit_compile", False)),
        "loss_scaling": None if scaling is None else {**scaling, "skipped_steps_per_epoch": skipped_per_epoch},
    }


def words(spec: dict) -> str:
    """``float32``, ``bf16 mixed``, ``fp16 mixed, XLA``: a device's numerics in words."""
    precision = spec.get("precision") or "float32"
    text = {"float32": "float32", "mixed_bfloat16": "bf16 mixed", "mixed_float16": "fp16 mixed"}[precision]
    return text + (", XLA" if spec.get("jit_compile") else "")
