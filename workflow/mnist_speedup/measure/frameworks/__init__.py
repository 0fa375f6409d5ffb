"""Frameworks: everything that differs between TensorFlow and JAX, behind one seam.

A device spec names its ``framework`` (``tensorflow``, the article's
TensorLayer, by default; or ``jax``). Each framework is one module here with
one :class:`~.base.Framework` subclass, registered in :data:`TYPES`. It
opens the device, builds the workload's network, compiles the epoch, the
single step and the evaluation, applies the precision's casts and loss
scaling, runs the calibration's products, reads the device's memory and
names its versions for the record. Everything else (the epoch clock, the
meters, the warm-up's place, the record) is written once, in trainer.py,
calibrate.py and run.py. A new framework is one module plus one entry below.

No module here imports its framework at import time: a workflow whose
devices all use JAX runs where ``import tensorflow`` fails.
"""

from __future__ import annotations

from mnist_speedup.measure.frameworks.base import DeviceError, Framework
from mnist_speedup.measure.frameworks.jax_backend import Jax
from mnist_speedup.measure.frameworks.tensorflow_backend import TensorFlow

#: every framework, by the name a device spec gives in ``framework``
TYPES: dict[str, type[Framework]] = {cls.name: cls for cls in (TensorFlow, Jax)}
#: the framework of a device spec that names none (the original article's)
DEFAULT = TensorFlow.name

__all__ = ["DEFAULT", "TYPES", "DeviceError", "Framework", "name_of", "of", "open_device"]


def name_of(device_spec: dict) -> str:
    """The framework a device spec trains with (a record made before
    frameworks existed names none: TensorFlow)."""
    return device_spec.get("framework") or DEFAULT


def of(device_spec: dict) -> type[Framework]:
    return TYPES[name_of(device_spec)]


def open_device(device_spec: dict, *, deterministic: bool = False, seed: int | None = None):
    """The framework of ``device_spec``, imported and opened on exactly that device."""
    return of(device_spec)(device_spec, deterministic=deterministic, seed=seed)
