"""Frameworks: everything that differs between TensorFlow, JAX and PyTorch, behind one seam.

Each framework is one folder here (``tensorflow/``, ``jax/``, ``pytorch/``) with
- ``framework.yaml``: its declaration (name, software, modules, extra,
  environments per platform), which spec/frameworks.py reads without importing it;
- ``backend.py``: one :class:`~.base.Framework` subclass that opens the device,
  runs the calibration's products, reads the device's memory and names its versions;
- ``training.py``: its :class:`~.base.Training` (the compiled epoch, step and evaluation);
- ``networks.py``: the workload's layers (spec/workloads.py) built in that framework;
- its numerics (the precision's casts and loss scaling).
Everything else (the epoch clock, the meters, the warm-up's place, the record)
is written once, in trainer.py, calibrate.py and record.py. A new framework is
one folder plus one line in :data:`TYPES`.

No module here imports its framework at import time: a workflow whose
devices all use JAX runs where ``import tensorflow`` fails.
"""

from __future__ import annotations

from mnist_speedup.measure.frameworks.base import DeviceError, Framework
from mnist_speedup.measure.frameworks.jax.backend import Jax
from mnist_speedup.measure.frameworks.pytorch.backend import PyTorch
from mnist_speedup.measure.frameworks.tensorflow.backend import TensorFlow
from mnist_speedup.spec.frameworks import name_of

#: every framework class, by the name its declaration gives (tests/test_frameworks.py: the same names)
TYPES: dict[str, type[Framework]] = {cls.name: cls for cls in (TensorFlow, Jax, PyTorch)}

__all__ = ["TYPES", "DeviceError", "Framework", "of", "open_device"]


def of(device_spec: dict) -> type[Framework]:
    return TYPES[name_of(device_spec)]


def open_device(device_spec: dict, *, deterministic: bool = False, seed: int | None = None):
    """The framework of ``device_spec``, imported and opened on exactly that device."""
    return of(device_spec)(device_spec, deterministic=deterministic, seed=seed)
