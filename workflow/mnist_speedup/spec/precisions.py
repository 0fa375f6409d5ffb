"""Numerics: the precision and compiler a device trains with.

A device spec may set ``precision`` (``float32``, ``tf32``, ``mixed_bfloat16``,
``mixed_float16``; :data:`PRECISIONS`) and ``jit_compile`` (XLA for the compiled training
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

import functools
from dataclasses import dataclass

from mnist_speedup.spec import schema

#: dynamic loss scaling, as Keras's LossScaleOptimizer does it
INITIAL_SCALE = 2.0**15
GROWTH_STEPS = 2000


@functools.cache
def _default() -> str:
    devices = next(s for s in schema.load()["properties"]["devices"]["oneOf"] if s.get("type") == "object")
    return devices["additionalProperties"]["properties"]["precision"]["default"]


#: the precision of a device spec that names none (the schema's default)
DEFAULT = _default()


def name_of(device_spec: dict) -> str:
    """The precision a device spec names, or the default."""
    return device_spec.get("precision") or DEFAULT


@dataclass(frozen=True)
class Precision:
    """One precision a device may train in: everything the workflow needs to
    know of it, in one place (the frameworks, the device types, the
    calibration and the report read it here)."""

    name: str
    #: the dtype the products' inputs are cast to ("float32": no cast)
    compute_dtype: str
    #: how the report says it
    words: str
    #: float16's narrow range: dynamic loss scaling, skipped steps counted
    loss_scaling: bool = False
    #: float32 products with their inputs rounded to TF32 (NVIDIA GPUs from compute capability 8.0)
    tensor_float_32: bool = False
    #: CPU flags with which a CPU runs it natively (float32: every CPU); None: not on a CPU at all
    cpu_flags: tuple[str, ...] | None = ()
    #: the compute capability from which a GPU runs it natively
    gpu_from: tuple[int, int] = (0, 0)

    @property
    def casts(self) -> bool:
        return self.compute_dtype != "float32"


#: every precision, by the name a device spec gives in ``precision``
PRECISIONS: dict[str, Precision] = {
    p.name: p
    for p in (
        Precision("float32", "float32", "float32"),
        Precision("tf32", "float32", "TF32", tensor_float_32=True, cpu_flags=None, gpu_from=(8, 0)),
        Precision("mixed_bfloat16", "bfloat16", "bf16 mixed", cpu_flags=("avx512_bf16", "amx_bf16"), gpu_from=(8, 0)),
        Precision(
            "mixed_float16",
            "float16",
            "fp16 mixed",
            loss_scaling=True,
            cpu_flags=("avx512_fp16", "amx_fp16"),
            gpu_from=(7, 0),
        ),
    )
}


def of(name: str | None) -> Precision:
    return PRECISIONS[name or DEFAULT]


def compute_dtype(precision: str) -> str:
    """The dtype of the products (``float32`` for float32 and TF32)."""
    return of(precision).compute_dtype


def scales_loss(precision: str) -> bool:
    """Whether a precision needs dynamic loss scaling (float16's narrow range)."""
    return of(precision).loss_scaling


def section(device_spec: dict, scaling: dict | None, skipped_per_epoch: list[int], products: dict) -> dict:
    """A run record's ``numerics`` section. ``scaling``: the loss scaling's
    summary (None: none); ``products``: what the framework says of how its
    products ran (TF32 on or off, JAX's matmul precision)."""
    precision = name_of(device_spec)
    return {
        "precision": precision,
        "compute_dtype": compute_dtype(precision),
        "jit_compile": bool(device_spec.get("jit_compile", False)),
        "loss_scaling": None if scaling is None else {**scaling, "skipped_steps_per_epoch": skipped_per_epoch},
        **products,
    }


def words(spec: dict) -> str:
    """``float32``, ``bf16 mixed``, ``fp16 mixed, XLA``: a device's numerics in words."""
    return of(spec.get("precision")).words + (", XLA" if spec.get("jit_compile") else "")
