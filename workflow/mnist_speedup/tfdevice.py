"""Bring TensorFlow up on exactly one device, and lock the machine for timing.

Everything that must happen *before* ``import tensorflow`` lives here:
hiding GPUs from CPU runs, thread counts, log levels.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import time
from pathlib import Path

from . import devices


class DeviceError(RuntimeError):
    """The requested device is not available; never fall back silently."""


def prepare_environment(spec: dict) -> None:
    """Set the process environment for ``spec``; call before importing TF."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.update(devices.of(spec).process_environment())


def open_device(spec: dict):
    """Import TensorFlow/TensorLayer configured for ``spec``.

    Returns ``(tf, tl, device_name, physical)`` where ``physical`` is the
    physical accelerator (None for a CPU). Raises DeviceError when the
    device cannot be opened (a GPU TensorFlow cannot see).
    """
    prepare_environment(spec)
    import tensorflow as tf

    device_name, physical = devices.of(spec).open(tf)
    import tensorlayer as tl

    return tf, tl, device_name, physical


def sync(tf) -> None:
    """Wait for all queued device work (a no-op cost on the CPU)."""
    tf.test.experimental.sync_devices()


class NoDeviceMemory:
    """The memory reader of a device without its own memory (a CPU run)."""

    def peak(self) -> dict:
        return {"gpu_peak_bytes": None, "gpu_reason": "not a GPU run"}


class GpuMemory:
    """Peak GPU memory allocated by TensorFlow from construction on (the
    timed epochs): ``reset_memory_stats`` then ``get_memory_info``."""

    def __init__(self, tf, device_name: str):
        self.tf, self.device = tf, device_name.strip("/")
        self.reason = None
        if device_name == "/CPU:0":
            self.reason = "not a GPU run"
            return
        try:
            tf.config.experimental.reset_memory_stats(self.device)
        except (ValueError, RuntimeError, AttributeError) as exc:
            self.reason = f"GPU memory statistics unavailable ({exc})"

    def peak(self) -> dict:
        if self.reason is None:
            try:
                return {"gpu_peak_bytes": int(self.tf.config.experimental.get_memory_info(self.device)["peak"]),
                        "gpu_reason": None}  # fmt: skip
            except (ValueError, RuntimeError, KeyError) as exc:
                self.reason = f"GPU memory statistics unavailable ({exc})"
        return {"gpu_peak_bytes": None, "gpu_reason": self.reason}


def lock_path() -> Path:
    folder = os.environ.get("MNIST_SPEEDUP_LOCK_DIR") or tempfile.gettempdir()
    return Path(folder) / "mnist-speedup-timing.lock"


@contextlib.contextmanager
def timing_lock(log=print):
    """Hold this machine's timing lock: no two timing jobs on one host overlap,
    whatever the scheduler does. Yields the seconds spent waiting."""
    path = lock_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        start = time.perf_counter()
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"another timing job holds {path}; waiting so that timings do not overlap")
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield time.perf_counter() - start
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
