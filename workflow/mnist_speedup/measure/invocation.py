"""The invocation: what one `snakemake` call's training jobs share, written by that call itself.

The workflow's ``onstart:`` handler (real runs only: never a dry run,
``--lint`` or ``--report``, and only once Snakemake holds its lock, so a
second call beside a running one writes nothing) writes one small file,
``logs/<experiment>/invocation.json``: when the call's process started,
its time budget, whether replication may stop early, its process id, and
the attempt files of every run its plan holds (records/attempts.py).

A training job reads it (:func:`current`) for the console's progress line
and for the time budget (measure/budget.py). The file is the job's own
call's only where that call's process is one of the job's ancestors: a
file left by an earlier call, or by a call on another machine, is ignored,
so a stale start can never cut a run. Nothing is read from the
environment, and parsing the workflow writes nothing.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from mnist_speedup import atomic


@dataclass(frozen=True)
class Invocation:
    #: when the call's process started (POSIX seconds): the time budget counts from here
    started_at: float
    #: the time budget in seconds (None: no budget)
    budget_s: float | None
    #: the process id of the `snakemake` call
    pid: int
    #: the attempt file of each run the call's plan holds, in run order
    attempts: tuple[str, ...]
    #: replication may stop before every planned run: the count is an upper bound
    at_most: bool = False
    #: with a budget, the finished runs at the plan's paths when the call started (measure/budget.py's
    #: ``known_run``): a rerun job replaces its record, and the estimates of later jobs still need it
    known_runs: tuple[dict, ...] = ()

    def deadline(self) -> float | None:
        """The POSIX time by which every run must have finished (None: no budget)."""
        return None if self.budget_s is None else self.started_at + self.budget_s


def process_start(pid: int | None = None) -> float:
    """When process ``pid`` (this one by default) started, as POSIX seconds."""
    import psutil  # Snakemake's own dependency

    return psutil.Process(pid or os.getpid()).create_time()


def write(path, invocation: Invocation) -> None:
    data = asdict(invocation) | {"attempts": list(invocation.attempts), "known_runs": list(invocation.known_runs)}
    atomic.write_text(path, json.dumps(data, indent=1, allow_nan=False) + "\n")


def _is_ancestor(pid: int) -> bool:
    import psutil

    try:
        return any(parent.pid == pid for parent in psutil.Process().parents())
    except psutil.Error:
        return False


def read(path) -> Invocation:
    """The invocation file at ``path``, checked (ValueError names the problem)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    try:
        found = Invocation(
            float(data["started_at"]),
            None if data["budget_s"] is None else float(data["budget_s"]),
            int(data["pid"]),
            tuple(str(a) for a in data["attempts"]),
            bool(data["at_most"]),
            tuple(dict(known) for known in data["known_runs"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path}: not an invocation file ({type(exc).__name__}: {exc})") from None
    if not math.isfinite(found.started_at) or (found.budget_s is not None and not math.isfinite(found.budget_s)):
        raise ValueError(f"{path}: its start or budget is not a finite number")
    return found


def current(path) -> tuple[Invocation | None, str]:
    """(the invocation this process runs in, or None; why None, in words)."""
    try:
        found = read(path)
    except FileNotFoundError:
        return None, f"{path} does not exist (a job run outside a `snakemake` call that wrote it)"
    except (OSError, ValueError) as exc:
        return None, f"{path} is not readable: {exc}"
    if not _is_ancestor(found.pid):
        return None, f"{path} belongs to another `snakemake` call (process {found.pid} is not this job's)"
    return found, ""
