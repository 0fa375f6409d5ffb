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


class DeviceError(RuntimeError):
    """The requested device is not available; never fall back silently."""


def prepare_environment(spec: dict) -> None:
    """Set the process environment for ``spec``; call before importing TF."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if spec["type"] == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""  # hide every GPU
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            os.environ[var] = str(spec["threads"])
    else:
        # index GPUs as nvidia-smi does, so that `index` means the same card
        os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")


def open_device(spec: dict):
    """Import TensorFlow/TensorLayer configured for ``spec``.

    Returns ``(tf, tl, device_name, gpu)`` where ``gpu`` is the physical
    device (None for CPU). Raises DeviceError when a GPU is asked for and
    TensorFlow cannot see it.
    """
    prepare_environment(spec)
    import tensorflow as tf

    gpu = None
    if spec["type"] == "cpu":
        # must precede anything that initialises the TF runtime (tensorlayer does)
        tf.config.threading.set_intra_op_parallelism_threads(spec["threads"])
        tf.config.threading.set_inter_op_parallelism_threads(1)
        device_name = "/CPU:0"
    else:
        gpus = tf.config.list_physical_devices("GPU")
        index = spec["index"]
        if not gpus:
            raise DeviceError(
                f"a GPU (index {index}) was requested but TensorFlow sees no GPU "
                f"(TensorFlow {tf.__version__}, built with CUDA: "
                f"{tf.test.is_built_with_cuda()}). Fix: install the GPU extra "
                "(pip install -e '.[gpu]', i.e. tensorflow[and-cuda]) on a machine with an "
                "NVIDIA driver, or remove the gpu device from `devices`."
            )
        if index >= len(gpus):
            raise DeviceError(
                f"GPU index {index} does not exist: TensorFlow sees {len(gpus)} GPU(s), "
                f"indices 0..{len(gpus) - 1}. Fix: set devices.<label>.index to one of those."
            )
        gpu = gpus[index]
        tf.config.set_visible_devices([gpu], "GPU")
        tf.config.experimental.set_memory_growth(gpu, True)
        device_name = "/GPU:0"
    import tensorlayer as tl

    return tf, tl, device_name, gpu


def sync(tf) -> None:
    """Wait for all queued device work (a no-op cost on the CPU)."""
    tf.test.experimental.sync_devices()


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
