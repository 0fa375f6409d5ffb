"""What every rule script does around its real work: logging, signals,
and one clear error line on the console."""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
import traceback
from pathlib import Path


def _raise_on_signal(signum, frame):
    raise SystemExit(f"stopped by signal {signal.Signals(signum).name}; no result was written")


@contextlib.contextmanager
def logged(snakemake):
    """Send stdout/stderr (Python and C++ alike) to the rule's log, line by
    line; on failure, also print the error message to the console.

    SIGTERM and SIGINT become SystemExit, so that clean-up code runs and no
    half-written output survives an interruption.
    """
    signal.signal(signal.SIGTERM, _raise_on_signal)
    signal.signal(signal.SIGINT, _raise_on_signal)
    log_path = Path(snakemake.log[0])
    log_path.parent.mkdir(parents=True, exist_ok=True)
    console = os.fdopen(os.dup(2), "w", buffering=1)
    sys.stdout.flush()
    sys.stderr.flush()
    with open(log_path, "a", buffering=1, encoding="utf-8") as log_file:
        os.dup2(log_file.fileno(), 1)
        os.dup2(log_file.fileno(), 2)
        sys.stdout = os.fdopen(os.dup(1), "w", buffering=1)
        sys.stderr = os.fdopen(os.dup(2), "w", buffering=1)

        def log(*parts):
            print(*parts, flush=True)

        def to_console(line: str) -> None:  # one line for the person watching the terminal
            console.write(line + "\n")
            console.flush()

        log.console = to_console
        try:
            yield log
        except BaseException as exc:
            traceback.print_exc()
            sys.stderr.flush()
            message = str(exc) or type(exc).__name__
            console.write(f"ERROR in rule {snakemake.rule}: {message}\n(full log: {log_path})\n")
            console.flush()
            raise SystemExit(1) from None
        finally:
            # the work is done and written: spare the exit Python's last
            # collection of every object (TensorFlow's graph makes that about
            # 1 s per job, outside the timed epochs)
            gc.freeze()
