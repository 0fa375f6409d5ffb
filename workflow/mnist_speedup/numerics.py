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
Each framework applies this in its own module (frameworks/tf_numerics.py,
frameworks/jax_model.py); this module says what the precisions are.
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


def scales_loss(precision: str) -> bool:
    """Whether a precision needs dynamic loss scaling (float16's narrow range)."""
    return precision == "mixed_float16"


def section(device_spec: dict, scaling: dict | None, skipped_per_epoch: list[int], products: dict) -> dict:
    """A run record's ``numerics`` section. ``scaling``: the loss scaling's
    summary (None: none); ``products``: what the framework says of how its
    products ran (TF32 on or off, JAX's matmul precision)."""
    precision = device_spec.get("precision", "float32")
    return {
        "precision": precision,
        "compute_dtype": compute_dtype(precision),
        "jit_compile": bool(device_spec.get("jit_compile", False)),
        "loss_scaling": None if scaling is None else {**scaling, "skipped_steps_per_epoch": skipped_per_epoch},
        **products,
    }


def words(spec: dict) -> str:
    """``float32``, ``bf16 mixed``, ``fp16 mixed, XLA``: a device's numerics in words."""
    precision = spec.get("precision") or "float32"
    text = {"float32": "float32", "mixed_bfloat16": "bf16 mixed", "mixed_float16": "fp16 mixed"}[precision]
    return text + (", XLA" if spec.get("jit_compile") else "")
