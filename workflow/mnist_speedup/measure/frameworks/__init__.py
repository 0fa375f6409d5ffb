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
one folder: its framework.yaml and a backend.py that names its class in ``FRAMEWORK``.

No module here imports its framework at import time: a workflow whose
devices all use JAX runs where ``import tensorflow`` fails.
"""

from __future__ import annotations

import functools
import importlib

from mnist_speedup.measure.frameworks.base import DeviceError, Framework
from mnist_speedup.spec.frameworks import declarations, name_of

__all__ = ["DeviceError", "Framework", "of", "open_device", "types"]

#: each framework's class, in its folder (codedigest.py follows this to every backend a run may open)
PLUGINS = "*/backend.py"


@functools.cache
def class_of(name: str) -> type[Framework]:
    """The framework class of folder ``name``: its backend.py's ``FRAMEWORK`` (imported on first use, so that
    no framework is imported where it is not used)."""
    cls = importlib.import_module(f"{__name__}.{name}.backend").FRAMEWORK
    if cls.name != name:
        raise ValueError(f"frameworks/{name}/backend.py's FRAMEWORK is named {cls.name!r}; they must agree")
    return cls


def types() -> dict[str, type[Framework]]:
    """Every framework class, by the name its folder declares (spec/frameworks.py)."""
    return {name: class_of(name) for name in declarations()}


def of(device_spec: dict) -> type[Framework]:
    return class_of(name_of(device_spec))


def open_device(device_spec: dict, *, deterministic: bool = False, seed: int | None = None):
    """The framework of ``device_spec``, imported and opened on exactly that device."""
    return of(device_spec)(device_spec, deterministic=deterministic, seed=seed)
