"""The time budget (config ``time_budget_s``): no run starts that cannot finish before it ends.

The budget counts from the start of the `snakemake` call's own process,
as its ``onstart:`` handler writes it (measure/invocation.py); nothing is
inherited from the shell. A job decides once it holds the machine's
timing lock, just before its run would start: it estimates the run's
duration from the records at the paths of its call's plan (those there
when the call started, which the handler notes, and those finished
since; never a record outside the plan), and where the
time left is shorter it writes a cut attempt (records/attempts.py)
instead of training. Runs go in the design's priority order
(config/design.py), so what is cut is what matters least.

The estimate, from the most to the least specific record there is, each
times :data:`SAFETY`:
1. a finished run of the same plan (the same workload, device and
   settings: epochs, samples, learning rate...) and batch size: the longest;
2. the same plan at another batch size: the longest;
3. otherwise the nearest record of the device (another workload or other
   settings: a record left by an earlier config at the plan's paths), its
   training scaled by epochs x samples per epoch x training FLOPs per
   sample of the two runs (the nearest: the same workload, then the same
   batch size, then the longest);
With no record of the device at all (its first run), nothing can be
estimated: the run starts while any time is left, and the cut attempt of a
later run says what each estimate came from.
A run's duration is the job's wall time as its record gives it: process
start and imports, less the wait for the lock, plus the run itself.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass

from mnist_speedup.records import attempts
from mnist_speedup.spec import run, workloads

#: an estimate is the longest comparable run times this (the record write and the job's own end come after)
SAFETY = 1.25
#: a record's fields that must equal the spec's for it to be a run of the same plan
SAME_PLAN = (
    "epochs",
    "warmup_epochs",
    "train_samples",
    "learning_rate",
    "adam",
    "input_pipeline",
    "deterministic",
    "steps_per_call",
    "workload_spec",
)

#: what an estimate came from, most specific first (see the module's text)
BASES = {
    "cell": "the longest finished run of the same plan and batch size",
    "batch size": "the longest finished run of the same plan at another batch size",
    "scaled": "the device's nearest run of another plan, scaled by epochs x samples x FLOPs per sample",
    "none": "none: the device's first run starts while any time is left",
}


@dataclass(frozen=True)
class Estimate:
    seconds: float | None
    basis: str


def _before_run_s(record: dict) -> float:
    """A run's process before the run itself (start, Snakemake's preamble, imports), less the lock wait."""
    return max(0.0, (record["setup_s"]["before_run_s"] or 0.0) - (record.get("lock_wait_s") or 0.0))


def duration_s(record: dict) -> float | None:
    """A finished run's wall time: its process up to the run, less the lock wait, plus the run."""
    try:
        ran = dt.datetime.fromisoformat(record["finished_at"]) - dt.datetime.fromisoformat(record["started_at"])
        return _before_run_s(record) + ran.total_seconds()
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _plan(fields: dict) -> str:
    """The settings that make two runs of one workload runs of the same plan, as one comparable text."""
    return json.dumps(run.canonical({key: fields.get(key) for key in SAME_PLAN}), sort_keys=True)


def _units(workload_spec: dict, epochs: int, samples_per_epoch: int) -> float:
    """epochs x samples per epoch x training FLOPs per sample."""
    return epochs * samples_per_epoch * workloads.of(workload_spec).training_step_flops(1)


def known_run(record: dict) -> dict | None:
    """What an estimate needs of a finished run's record (None: not a readable finished run)."""
    try:
        seconds = duration_s(record)
        if seconds is None:
            return None
        return {
            "device": record["device"],
            "workload": record["workload"],
            "batch_size": record["batch_size"],
            "plan": _plan(record),
            "duration_s": seconds,
            "before_s": _before_run_s(record),
            "subset": record.get("train_samples") is not None,
            "samples_per_epoch": record["samples_per_epoch"],
            "units": _units(record["workload_spec"], record["epochs"], record["samples_per_epoch"]),
        }
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def known_runs(attempt_paths) -> list[dict]:
    """:func:`known_run` of each readable record at the record paths of the plan's attempts (finished in this
    call, or left by an earlier one, of this config or another): unreadable files are skipped, since the
    aggregation refuses a broken record with its reason and the budget only needs what it can read."""
    out = []
    for path in attempt_paths:
        try:
            record = json.loads(attempts.record_path_of(path).read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            continue
        known = known_run(record) if isinstance(record, dict) else None
        if known is not None:
            out.append(known)
    return out


def _scaled(spec: run.RunSpec, runs: list[dict]) -> float:
    """The nearest run's duration, its training part scaled to ``spec``'s (see the module's text)."""
    other = max(
        runs, key=lambda r: (r["workload"] == spec.workload, r["batch_size"] == spec.batch_size, r["duration_s"])
    )
    # a spec's samples per epoch: its train_samples, else the full split the other run trained on (or MNIST's
    # 60,000 where that run took a subset: an upper bound)
    samples = spec.train_samples or (60_000 if other["subset"] else other["samples_per_epoch"])
    scale = _units(spec.workload_spec, spec.epochs, samples) / other["units"]
    return other["before_s"] + (other["duration_s"] - other["before_s"]) * scale


def estimate(spec: run.RunSpec, runs: list[dict]) -> Estimate:
    """How long ``spec``'s run will take, from the known runs ``runs`` (:func:`known_run`; see the module's
    text)."""
    runs = [r for r in runs if r["device"] == spec.device]
    plan = _plan(spec.params())
    same_plan = [r for r in runs if r["workload"] == spec.workload and r["plan"] == plan]
    same_batch = [r for r in same_plan if r["batch_size"] == spec.batch_size]
    if same_batch:
        return Estimate(SAFETY * max(r["duration_s"] for r in same_batch), BASES["cell"])
    if same_plan:
        return Estimate(SAFETY * max(r["duration_s"] for r in same_plan), BASES["batch size"])
    if runs:
        return Estimate(SAFETY * _scaled(spec, runs), BASES["scaled"])
    return Estimate(None, BASES["none"])


def cut(spec: run.RunSpec, invocation, now: float) -> dict | None:
    """None where ``spec``'s run may start at POSIX time ``now`` in ``invocation`` (measure/invocation.py;
    None: no budget); else why not (records/attempts.py's CUT_FIELDS)."""
    until = None if invocation is None else invocation.deadline()
    if until is None:
        return None
    left = until - now
    # the runs known when the call started (their records may since have been replaced), and those finished since
    guess = estimate(spec, [*invocation.known_runs, *known_runs(invocation.attempts)])
    if left > 0 and (guess.seconds is None or guess.seconds <= left):
        return None
    return {
        "budget_s": invocation.budget_s,
        "left_s": round(left, 3),
        "estimate_s": guess.seconds and round(guess.seconds, 3),
        "basis": guess.basis,
    }
