"""The time budget (config ``time_budget_s``): no run starts that cannot finish before it ends.

The workflow, parsed in Snakemake's main process, puts the budget in the
environment beside the invocation's start (measure/progress.py); every
training job inherits both. A job decides once it holds the machine's
timing lock, just before its run would start: it estimates the run's
duration from the records of this experiment that already finished, and
where the time left is shorter, it writes a note (records/cuts.py)
instead of training. Runs go in the design's priority order
(config/design.py), so what is cut is what matters least.

The estimate, from the most to the least specific record there is:
1. the same workload, device and batch size (any seed): its longest run;
2. the same workload and device at another batch size: the longest;
3. the same device, another workload: its longest run, its epochs scaled
   by the two workloads' training FLOPs per sample;
each times :data:`SAFETY`. With no record of the device at all (its first
run), nothing can be estimated: the run starts while any time is left, and
the note of a later cut says what each estimate came from.
A run's duration is the job's wall time as its record gives it: process
start and imports, less the wait for the lock, plus the run itself.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import dataclass

from mnist_speedup.measure import progress
from mnist_speedup.spec import run, workloads

#: the environment variable that carries the invocation's budget in seconds (unset: no budget)
BUDGET = "MNIST_SPEEDUP_TIME_BUDGET_S"
#: an estimate is the longest comparable run times this (the record write and the job's own end come after)
SAFETY = 1.25


#: what an estimate came from, most specific first (see the module's text)
BASES = {
    "cell": "the longest earlier run of the same cell",
    "batch size": "the device's longest run of the workload at another batch size",
    "workload": "the device's longest run of another workload, scaled by FLOPs per sample",
    "none": "none: the device's first run starts while any time is left",
}


@dataclass(frozen=True)
class Estimate:
    seconds: float | None
    basis: str


def deadline(environ=os.environ) -> tuple[float, float] | None:
    """(budget in seconds, the deadline as a POSIX time), or None without a budget."""
    budget = environ.get(BUDGET)
    if not budget:
        return None
    start = dt.datetime.fromisoformat(environ[progress.START])
    return float(budget), start.timestamp() + float(budget)


def _before_run_s(record: dict) -> float:
    """A run's process before the run itself (start, Snakemake's preamble, imports), less the lock wait."""
    return max(0.0, (record["setup_s"]["before_run_s"] or 0.0) - (record.get("lock_wait_s") or 0.0))


def duration_s(record: dict) -> float | None:
    """A finished run's wall time: its process up to the run, less the lock wait, plus the run."""
    try:
        ran = dt.datetime.fromisoformat(record["finished_at"]) - dt.datetime.fromisoformat(record["started_at"])
        return _before_run_s(record) + ran.total_seconds()
    except (KeyError, TypeError, ValueError):
        return None


def _finished(results_dir, device: str) -> list[dict]:
    """This experiment's finished runs of ``device`` (unreadable files and notes skipped: the
    aggregation refuses a broken record with its reason, the budget only needs what it can read)."""
    out = []
    for path in run.run_files(results_dir):
        place = run.place_of(path)
        if place is None or place["device"] != device:
            continue
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            continue
        seconds = duration_s(record) if isinstance(record, dict) else None
        if seconds is not None:
            out.append(record | {"_duration_s": seconds})
    return out


def _flops_per_sample(workload_spec: dict) -> float:
    return workloads.of(workload_spec).training_step_flops(1)


def estimate(spec: run.RunSpec, results_dir) -> Estimate:
    """How long ``spec``'s run will take, from the finished runs of its device (see the module's text)."""
    runs = _finished(results_dir, spec.device)
    same_workload = [r for r in runs if r.get("workload") == spec.workload]
    same_batch = [r for r in same_workload if r.get("batch_size") == spec.batch_size]
    if same_batch:
        return Estimate(SAFETY * max(r["_duration_s"] for r in same_batch), BASES["cell"])
    if same_workload:
        return Estimate(SAFETY * max(r["_duration_s"] for r in same_workload), BASES["batch size"])
    if runs:
        other = max(runs, key=lambda r: r["_duration_s"])
        before = _before_run_s(other)
        scale = _flops_per_sample(spec.workload_spec) / _flops_per_sample(other["workload_spec"])
        seconds = before + (other["_duration_s"] - before) * max(1.0, scale) * spec.epochs / max(1, other["epochs"])
        return Estimate(SAFETY * seconds, BASES["workload"])
    return Estimate(None, BASES["none"])


def cut(spec: run.RunSpec, results_dir, now: float, environ=os.environ) -> dict | None:
    """None where ``spec``'s run may start at POSIX time ``now``; else why not (records/cuts.py's fields)."""
    budget = deadline(environ)
    if budget is None:
        return None
    budget_s, until = budget
    left = until - now
    guess = estimate(spec, results_dir)
    if left > 0 and (guess.seconds is None or guess.seconds <= left):
        return None
    return {"budget_s": budget_s, "left_s": round(left, 3), "estimate_s": guess.seconds and round(guess.seconds, 3),
            "basis": guess.basis}  # fmt: skip
