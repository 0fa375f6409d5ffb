"""The wrapper every rule script runs in (workflow/mnist_speedup/rulescript.py)."""

import gc
import os
import signal
import sys
from types import SimpleNamespace

import pytest

from mnist_speedup import rulescript


@pytest.fixture
def restored_streams():
    saved = [os.dup(1), os.dup(2)], sys.stdout, sys.stderr
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    yield
    for signum, handler in handlers.items():
        signal.signal(signum, handler)
    (out, err), sys.stdout, sys.stderr = saved
    os.dup2(out, 1)
    os.dup2(err, 2)
    gc.unfreeze()


def test_the_log_gets_the_output_and_the_exit_skips_the_last_collection(tmp_path, restored_streams):
    """After the work, every object is frozen, so that the exit does not
    collect TensorFlow's whole object graph (about 1 s per job)."""
    gc.unfreeze()
    job = SimpleNamespace(log=[str(tmp_path / "logs" / "job.log")], rule="train")
    with rulescript.logged(job) as log:
        log("hello from the job")
    assert gc.get_freeze_count() > 0
    assert "hello from the job" in (tmp_path / "logs" / "job.log").read_text()
