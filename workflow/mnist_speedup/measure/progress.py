"""One console line per finished training run, with the runs done and the time left.

The counts are of the runs in the job's own call's plan (measure/invocation.py):
a run is done when its attempt says it finished. The time left is the mean
duration of the runs that finished in this call, times the runs still to do,
never estimated from older records.
"""

from __future__ import annotations

import datetime as dt
import json

from mnist_speedup.records import attempts


def _finished_records(invocation) -> list[dict]:
    """The records of the plan's runs whose attempt says they finished (unreadable files skipped)."""
    out = []
    for path in invocation.attempts:
        try:
            if attempts.read(path)["outcome"] != attempts.FINISHED:
                continue
            data = json.loads(attempts.record_path_of(path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            out.append(data)
    return out


def time_left_s(records: list[dict], total: int, since: dt.datetime) -> float | None:
    """Mean duration of this invocation's runs times the runs still to do."""
    durations = []
    for r in records:
        try:
            started, finished = dt.datetime.fromisoformat(r["started_at"]), dt.datetime.fromisoformat(r["finished_at"])
        except (KeyError, TypeError, ValueError):
            continue
        if finished >= since:
            durations.append((finished - started).total_seconds())
    if not durations:
        return None
    return max(0, total - len(records)) * sum(durations) / len(durations)


def line(record: dict, label: str, invocation=None) -> str:
    """``mlp, cpu (2 threads), batch 500, seed 2: 9.37 s/epoch, 91.9% test
    accuracy [5 of 12 runs, about 14 min left]`` (without its call's invocation: the head alone)"""
    head = (
        f"{record['workload']}, {label}, batch {record['batch_size']}, seed {record['seed']}: "
        f"{record['timing']['steady_epoch_mean_s']:.2f} s/epoch, "
        f"{record['quality']['test_accuracy']:.1%} test accuracy"
    )
    if invocation is None:
        return head
    total = len(invocation.attempts)
    records = _finished_records(invocation)
    left = time_left_s(records, total, dt.datetime.fromtimestamp(invocation.started_at, dt.UTC))
    if len(records) >= total:
        when = "the last run"
    elif left is None:
        when = "time left not known yet"
    else:
        when = f"{'at most ' if invocation.at_most else ''}about {max(1, round(left / 60))} min left"
    of = f"of at most {total}" if invocation.at_most else f"of {total}"
    return f"{head} [{len(records)} {of} runs, {when}]"


def cut_line(spec, why: dict) -> str:
    """``mlp, cpu, batch 100, seed 3: cut by the time budget (12 s left, the run takes about 40 s)``"""
    takes = (
        "its duration cannot be estimated" if why["estimate_s"] is None else f"it takes about {why['estimate_s']:.0f} s"
    )
    return (
        f"{spec.workload}, {spec.device}, batch {spec.batch_size}, seed {spec.seed}: not started, cut by the "
        f"time budget of {why['budget_s']:g} s ({max(0.0, why['left_s']):.0f} s left; {takes})"
    )
