"""The machine's timing lock: no two timing jobs on one host overlap,
whatever the scheduler does (frameworks/ opens the device itself)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import time
from pathlib import Path


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
